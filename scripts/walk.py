#!/usr/bin/env python3
"""Follow the session through a command: a static call walk from one function.

    python3 scripts/walk.py ops::accept::accept [--list] [--root DIR]

A *step* is a call into a function that takes the session (a parameter
whose type names `Ctx`) or lives in `src/session/`. The walk starts at the named
function (a path below `crate`, e.g. `ops::task::claim`; a method as
`session::Ctx::lane_here`) and follows every step into its callee, each function
once; calls into functions without the session are not followed (that is
where the walk has reached the store or the records). `#[cfg(test)]` modules
are left out.

Counted:
- steps: call sites of step functions in the functions walked;
- files: the files of the functions walked (the start's included);
- climbs: steps from outside `src/session/` into it, split into session
  queries (methods of `Ctx`: who acts, the remote, the lane here, the
  settings) and ctx functions (free functions in `src/session/`: the kind
  readers and helpers that live there).

Static and approximate, by design: a call is resolved through the file's
`use` statements, `crate::`/`super::`/`self::` paths, the module's own
functions, child modules and `pub use` re-exports; a method call counts
only on a receiver that holds the session (a `&Ctx` parameter, `ctx`, or
`self` inside `impl Ctx`). Closures are part of the function that writes
them. Good enough to compare a command with itself before and after a
change, which is what it is for.
"""

import argparse
import os
import re
import sys
from collections import OrderedDict

KEYWORDS = {
    "if", "while", "for", "match", "return", "loop", "in", "as", "fn", "let",
    "move", "ref", "mut", "else", "Some", "Ok", "Err", "None", "Box", "Vec",
    "String", "Option", "Result",
}


def blank(text):
    """Comments, string and char literals replaced by spaces (lines kept)."""
    out = list(text)
    n = len(text)
    i = 0

    def wipe(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    ident = lambda c: c.isalnum() or c == "_"
    while i < n:
        c = text[i]
        prev_ident = i > 0 and ident(text[i - 1])
        if text.startswith("//", i):
            e = text.find("\n", i)
            e = n if e < 0 else e
            wipe(i, e)
            i = e
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif not prev_ident and (c == "r" or text.startswith("br", i)) and re.match(
            r'b?r(#*)"', text[i:]
        ):
            m = re.match(r'b?r(#*)"', text[i:])
            close = '"' + m.group(1)
            body = i + m.end()
            e = text.find(close, body)
            e = n if e < 0 else e + len(close)
            wipe(i, e)
            i = e
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                wipe(i, i + m.end())
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def matching(text, i, open_c, close_c):
    """Index just past the bracket that closes the one at `i`."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def drop_test_modules(code):
    out = code
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        end = matching(code, m.end() - 1, "{", "}")
        out = out[: m.start()] + re.sub(r"[^\n]", " ", out[m.start():end]) + out[end:]
    return out


def module_of(rel):
    """src/a/b.rs -> ('a', 'b'); src/a/mod.rs -> ('a',); src/lib.rs -> ()."""
    parts = rel[len("src/"):-len(".rs")].split("/")
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def expand_use(body):
    """`a::{b, c::{d as e}}` -> [(['a','b'], 'b'), (['a','c','d'], 'e')]."""
    body = re.sub(r"\s+as\s+", "@", body)
    body = re.sub(r"\s+", "", body)
    out = []

    def go(prefix, s):
        # split s at top-level commas
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            if "{" in p:
                head, rest = p.split("{", 1)
                head = [x for x in head.split("::") if x]
                go(prefix + head, rest[: rest.rfind("}")])
                continue
            out.append((prefix, p))

    go([], body)
    return out


class Fn:
    def __init__(self, file, module, owner, name, params, body, line):
        self.file = file
        self.module = module
        self.owner = owner  # impl type name, or None
        self.name = name
        self.params = params
        self.body = body  # (start, end) into the file's code
        self.line = line
        self.takes_ctx = bool(re.search(r"\bCtx\b", params))
        self.in_ctx = file.startswith("src/session/")
        names = set(re.findall(r"(\w+)\s*:\s*&\s*(?:'\w+\s+)?(?:[\w:]*::)?Ctx\b", params))
        if owner == "Ctx":
            names.add("self")
        self.ctx_names = names | {"ctx"}

    @property
    def key(self):
        if self.owner:
            return "::".join(self.module + (self.owner, self.name))
        return "::".join(self.module + (self.name,))

    @property
    def step(self):
        return self.takes_ctx or self.in_ctx


class Crate:
    def __init__(self, root):
        self.root = root
        self.files = {}  # rel -> code
        self.modules = {}  # module tuple -> rel
        self.fns = {}  # (module, owner, name) -> Fn
        self.uses = {}  # rel -> {alias: [segments]}
        for dirpath, _, names in os.walk(os.path.join(root, "src")):
            for n in names:
                if n.endswith(".rs"):
                    full = os.path.join(dirpath, n)
                    rel = os.path.relpath(full, root).replace(os.sep, "/")
                    with open(full, encoding="utf-8") as f:
                        self.files[rel] = drop_test_modules(blank(f.read()))
                    self.modules[module_of(rel)] = rel
        for rel, code in self.files.items():
            self.parse(rel, code)

    def parse(self, rel, code):
        module = module_of(rel)
        uses = {}
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            for prefix, item in expand_use(m.group(1)):
                path, _, alias = item.partition("@")
                segs = prefix + [s for s in path.split("::") if s]
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                if not segs or segs[-1] == "*":
                    continue
                uses[alias or segs[-1]] = segs
        self.uses[rel] = uses
        impls = []
        for m in re.finditer(r"\bimpl\b([^{;]*)\{", code):
            head = m.group(1)
            head = head.split(" for ")[-1] if " for " in head else head
            while re.search(r"<[^<>]*>", head):
                head = re.sub(r"<[^<>]*>", "", head)
            head = head.strip()
            ty = re.findall(r"(\w+)", head)
            impls.append((m.end() - 1, matching(code, m.end() - 1, "{", "}"), ty[-1] if ty else None))
        traits = [
            (m.end() - 1, matching(code, m.end() - 1, "{", "}"))
            for m in re.finditer(r"\btrait\s+\w+[^{;]*\{", code)
        ]
        for m in re.finditer(r"\bfn\s+(\w+)\s*(<[^(]*>)?\s*\(", code):
            if any(a < m.start() < b for a, b in traits):
                continue
            p_end = matching(code, m.end() - 1, "(", ")")
            params = code[m.end(): p_end - 1]
            k = p_end
            while k < len(code) and code[k] not in "{;":
                k += 1
            if k >= len(code) or code[k] == ";":
                continue
            b_end = matching(code, k, "{", "}")
            owner = None
            for a, b, ty in impls:
                if a < m.start() < b:
                    owner = ty
            line = code.count("\n", 0, m.start()) + 1
            fn = Fn(rel, module, owner, m.group(1), params, (k, b_end), line)
            self.fns.setdefault((module, owner, m.group(1)), fn)

    # -- resolution -------------------------------------------------------

    def absolute(self, rel, segs):
        """A path as written in `rel` made absolute (a tuple below crate),
        or None for an external crate or a local name."""
        module = module_of(rel)
        uses = self.uses.get(rel, {})
        head = segs[0]
        if head in ("crate", "git_swarm"):
            return tuple(segs[1:])
        if head == "self":
            return module + tuple(segs[1:])
        if head == "super":
            base = module
            while segs and segs[0] == "super":
                base = base[:-1]
                segs = segs[1:]
            return base + tuple(segs)
        if head in uses:
            target = uses[head]
            # a `use` path is itself relative to the file
            if target[0] in ("crate", "git_swarm", "self", "super") or tuple(
                module + (target[0],)
            ) in self.modules:
                full = self.absolute(rel, target) if target[0] in (
                    "crate", "git_swarm", "self", "super"
                ) else module + tuple(target)
                return full + tuple(segs[1:]) if full is not None else None
            if (target[0],) in self.modules:
                return tuple(target) + tuple(segs[1:])
            return None
        if module + (head,) in self.modules:
            return module + tuple(segs)
        return None

    def lookup(self, path, depth=0):
        if not path or depth > 6:
            return None
        *mod, name = path
        mod = tuple(mod)
        fn = self.fns.get((mod, None, name))
        if fn:
            return fn
        if mod:
            # Type::method, the type named in a module
            ty = mod[-1]
            for (m, owner, n), f in self.fns.items():
                if owner == ty and n == name and (m == mod[:-1] or m[: len(mod) - 1] == mod[:-1]):
                    return f
        # a re-export: `pub use probe::{...}` in `mod`
        rel = self.modules.get(mod)
        if rel and name in self.uses.get(rel, {}):
            target = self.absolute(rel, [name])
            if target and target != path:
                return self.lookup(target, depth + 1)
        if rel and mod and mod[-1:] and depth == 0:
            pass
        return None

    def resolve_call(self, caller, segs):
        rel = caller.file
        if segs[0] == "Self" and caller.owner:
            return self.method(caller.owner, segs[-1])
        if len(segs) == 1:
            name = segs[0]
            if name in self.uses.get(rel, {}):
                full = self.absolute(rel, [name])
                return self.lookup(full) if full else None
            fn = self.fns.get((caller.module, None, name))
            return fn
        full = self.absolute(rel, segs)
        if full is None and len(segs) == 2:
            # `Type::method` of a type this module defines
            return self.fns.get((caller.module, segs[0], segs[1]))
        if full is None:
            return None
        return self.lookup(full)

    def method(self, owner, name):
        for (m, o, n), f in self.fns.items():
            if o == owner and n == name:
                return f
        return None


CALL = re.compile(
    r"(?<![\w.:])((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*(?:::\s*<[^()]*?>\s*)?\("
)
METHOD = re.compile(r"\b(\w+)\s*\.\s*([A-Za-z_]\w*)\s*(?:::\s*<[^()]*?>\s*)?\(")


def calls(crate, fn):
    code = crate.files[fn.file]
    a, b = fn.body
    body = code[a:b]
    base_line = code.count("\n", 0, a) + 1
    for m in CALL.finditer(body):
        segs = [s.strip() for s in m.group(1).split("::")]
        if segs[-1] in KEYWORDS or segs == ["fn"]:
            continue
        if body[max(0, m.start() - 3): m.start()].endswith("fn "):
            continue
        callee = crate.resolve_call(fn, segs)
        if callee:
            yield base_line + body.count("\n", 0, m.start()), callee
    for m in METHOD.finditer(body):
        recv, name = m.group(1), m.group(2)
        if recv in fn.ctx_names:
            callee = crate.method("Ctx", name)
            if callee:
                yield base_line + body.count("\n", 0, m.start()), callee


def walk(crate, start):
    visited = OrderedDict()
    queue = [start]
    steps = []
    while queue:
        fn = queue.pop(0)
        if fn.key in visited:
            continue
        visited[fn.key] = fn
        for line, callee in calls(crate, fn):
            if not callee.step or callee is fn and False:
                continue
            steps.append((fn, line, callee))
            if callee.key not in visited:
                queue.append(callee)
    return visited, steps


def find_start(crate, name):
    segs = tuple(name.split("::"))
    fn = crate.lookup(segs)
    if fn is None:
        sys.exit(f"walk.py: no function {name} in src/")
    return fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("function", nargs="+", help="e.g. ops::accept::accept")
    ap.add_argument("--list", action="store_true", help="print every step")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()
    crate = Crate(os.path.abspath(args.root))
    for name in args.function:
        start = find_start(crate, name)
        visited, steps = walk(crate, start)
        files = sorted({f.file for f in visited.values()})
        climbs = [s for s in steps if not s[0].in_ctx and s[2].in_ctx]
        session = [s for s in climbs if s[2].owner == "Ctx"]
        readers = [s for s in climbs if s[2].owner != "Ctx"]
        print(
            f"{name}: {len(steps)} steps in {len(files)} files, "
            f"{len(climbs)} climbs into ctx ({len(session)} session queries, "
            f"{len(readers)} ctx functions)"
        )
        if args.list:
            for caller, line, callee in steps:
                mark = ""
                if not caller.in_ctx and callee.in_ctx:
                    mark = "  <- climb (session)" if callee.owner == "Ctx" else "  <- climb (ctx fn)"
                print(f"  {caller.file}:{line} {caller.key} -> {callee.key}{mark}")
            print("  files: " + ", ".join(files))


if __name__ == "__main__":
    main()
