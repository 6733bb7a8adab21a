#!/usr/bin/env python3
"""Rewrite src/**/*.rs from string error codes to the `Code` enum.

    python3 scripts/codes-to-enum.py [--check] [--no-fmt] [REPO]

In tests/ it only makes `x.code == "X"` and `assert_eq!(x.code, "X")`
compare `x.code.as_str()` (what they assert stays the string users see).

What it rewrites in src/, by pattern (never by file or line position, so it works on
a tree where code has moved between files):

- `Error::check|usage|race|env("X", …)` (also qualified, e.g.
  `crate::error::Error::usage(`, and split over lines) becomes
  `Error::new(Code::X, …)`: the class now comes from the code's line in the
  `codes!` table of src/error.rs. A call whose class differs from the table's
  is a bug (its exit code would change): the script stops and names it.
- `Error::usage(code, …)` with a variable becomes `Error::new(code, …)`
  (noted on stdout: every code passed there must have the class it had).
- Every other string literal that is exactly a known code (`e.code == "X"`,
  `matches!(e.code, "X" | "Y")`, `assert_eq!(err.code, "X")`,
  `refusal("X", …)`) becomes `Code::X`; a literal in a context the script
  does not recognise as a comparison with a code is listed on stdout.
- `code: &'static str` (fields and parameters) becomes `code: Code`, and a
  field initialiser `code: <expr>.code.as_str()` becomes `code: <expr>.code`
  (`Unreadable::code`; `Code` serialises as the same string).
- `Code` is imported where it is used (`crate::error::Code` in the library,
  `git_swarm::error::Code` in the binary's modules; inside a
  `#[cfg(test)] mod` that does not see the file's import, in that module).
- The `// BEGIN string-code shim` … `// END string-code shim` block of
  src/error.rs is deleted.

It fails loudly, changing nothing, on an UPPER_SNAKE string that is not in
the table where a code is expected (a constructor's first argument, a
comparison with `.code`), and on a class mismatch. It is idempotent: a
second run changes nothing. With --check it changes nothing and exits 1 if
it would. Unless --no-fmt, it runs `cargo fmt` after changing files.
"""

import os
import re
import subprocess
import sys

CONSTRUCTOR_CLASS = {"check": "Check", "usage": "Usage", "race": "Race", "env": "Env"}
UPPER_SNAKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,}")
SHIM = re.compile(r"\n?// BEGIN string-code shim\n.*?// END string-code shim\n", re.S)


class Fail(Exception):
    pass


def load_codes(root):
    """UPPER_SNAKE -> (Variant, Class) from the codes! table of src/error.rs."""
    text = open(os.path.join(root, "src", "error.rs"), encoding="utf-8").read()
    start = text.find("\ncodes! {")
    if start < 0:
        raise Fail("src/error.rs has no `codes! {` table")
    end = text.find("\n}\n", start)
    codes = {}
    for m in re.finditer(r'^\s*(\w+)\("([A-Z0-9_]+)", (\w+)\):', text[start:end], re.M):
        codes[m.group(2)] = (m.group(1), m.group(3))
    if len(codes) < 10:
        raise Fail(f"found only {len(codes)} codes in src/error.rs: is the table's shape still `Variant(\"NAME\", Class): \"…\",`?")
    return codes


def tokens(text):
    """Spans of comments, string/char literals: (kind, start, end, inner)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(("comment", i, j, None))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(("comment", i, j, None))
            i = j
        elif c in "rb" and re.match(r'(?:br|rb|r)#*"', text[i:i + 40]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(?:br|rb|r)(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(("raw", i, j, None))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            kind = "bytes" if c == "b" else "string"
            out.append((kind, i, j, text[i + (2 if c == "b" else 1):j - 1]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('static).
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", text[i:])
            if m:
                out.append(("char", i, i + m.end(), None))
                i += m.end()
            else:
                i += 1
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            i = j
        else:
            i += 1
    return out


def code_only(text, toks):
    """The text with comments and literals blanked (same length and lines)."""
    chars = list(text)
    for kind, s, e, _ in toks:
        for k in range(s, e):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def brace_end(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code)


def test_modules(code):
    """Spans (body start, body end) of `#[cfg(test)] mod x { … }` blocks."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        spans.append((m.end(), brace_end(code, m.end() - 1)))
    return spans


def module_files(root, entry):
    """Files of the module tree rooted at src/<entry> (follows `mod x;`)."""
    seen = set()
    stack = [os.path.join(root, "src", entry)]
    while stack:
        path = stack.pop()
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        text = open(path, encoding="utf-8").read()
        code = code_only(text, tokens(text))
        base = os.path.basename(path)
        here = os.path.dirname(path) if base in ("lib.rs", "main.rs", "mod.rs") else path[:-3]
        for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M):
            name = m.group(1)
            stack.append(os.path.join(here, name + ".rs"))
            stack.append(os.path.join(here, name, "mod.rs"))
    return seen


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def rewrite(path, rel, text, codes, root_path, notes):
    toks = tokens(text)
    code = code_only(text, toks)
    edits = []  # (start, end, replacement)
    errors = []
    needs_import = []  # positions of bare `Code::` uses

    ctor = re.compile(r"((?:\w+::)*)Error::(check|usage|race|env)\(\s*$")
    compare_before = re.compile(r"\.code\s*(?:==|!=|,)\s*$|\bcode\s*(?:==|!=)\s*$")
    compare_after = re.compile(r"\s*(?:==|!=)\s*[\w.()\[\]]*\bcode\b")

    last_compare_end = -1  # end of the last literal compared with a code
    for kind, s, e, inner in toks:
        if kind != "string" or inner is None or not UPPER_SNAKE.fullmatch(inner):
            continue
        before = code[max(0, s - 300):s]
        where = f"{rel}:{line_of(text, s)}"
        m = ctor.search(before)
        if m:
            if inner not in codes:
                errors.append(f"{where}: error code \"{inner}\" is not in the codes! table of src/error.rs")
                continue
            variant, cls = codes[inner]
            used = CONSTRUCTOR_CLASS[m.group(2)]
            if used != cls:
                errors.append(
                    f"{where}: {inner} is raised with Error::{m.group(2)} (class {used}) but the table gives class {cls}: "
                    "fix the call or the table (the exit code would change)"
                )
                continue
            prefix = m.group(1)
            call_start = s - len(before) + m.start()
            name_start = call_start + len(prefix) + len("Error::")
            edits.append((name_start, name_start + len(m.group(2)), "new"))
            if prefix.endswith("error::"):
                edits.append((s, e, f"{prefix}Code::{variant}"))
            else:
                edits.append((s, e, f"Code::{variant}"))
                needs_import.append(s)
            continue
        is_compare = bool(
            compare_before.search(before)
            or compare_after.match(code[e:e + 200])
            # the next alternative of `matches!(e.code, "X" | "Y")`
            or (last_compare_end >= 0 and re.fullmatch(r"\s*\|\s*", code[last_compare_end:s]))
        )
        last_compare_end = e if is_compare else -1
        if inner not in codes:
            if is_compare:
                errors.append(f"{where}: \"{inner}\" is compared with an error code but is not in the codes! table")
            continue
        variant, _ = codes[inner]
        if not is_compare:
            notes.append(f"{where}: \"{inner}\" -> Code::{variant} (not a recognised comparison: check it is a code)")
        edits.append((s, e, f"Code::{variant}"))
        needs_import.append(s)

    # Constructors whose first argument is not a literal.
    for m in re.finditer(r"((?:\w+::)*)Error::(check|usage|race|env)\(\s*([A-Za-z_][\w.:]*)\s*,", code):
        arg = m.group(3)
        if arg.startswith("Code::") or "::Code::" in arg:
            errors.append(f"{rel}:{line_of(text, m.start())}: Error::{m.group(2)}({arg}, …): use Error::new({arg}, …)")
            continue
        name_start = m.start() + len(m.group(1)) + len("Error::")
        edits.append((name_start, name_start + len(m.group(2)), "new"))
        notes.append(
            f"{rel}:{line_of(text, m.start())}: Error::{m.group(2)}({arg}, …) -> Error::new({arg}, …): "
            f"every code passed there must have class {CONSTRUCTOR_CLASS[m.group(2)]}"
        )

    # Fields and parameters that carry a code.
    for m in re.finditer(r"\bcode: &'static str\b", code):
        edits.append((m.start(), m.end(), "code: Code"))
        needs_import.append(m.start())
    for m in re.finditer(r"\bcode: ([\w.]+)\.code\.as_str\(\)", code):
        edits.append((m.start(), m.end(), f"code: {m.group(1)}.code"))

    if errors:
        raise Fail("\n".join(errors))

    # Anything left that still uses the string API is a form we do not know.
    starts = {s for s, _, _ in edits}
    for m in re.finditer(r"\bError::(check|usage|race|env)\(", code):
        if m.start() + len("Error::") not in starts:
            raise Fail(f"{rel}:{line_of(text, m.start())}: a call of Error::{m.group(1)} the script cannot rewrite")

    if not edits:
        return add_import(text, rel, root_path)
    edits.sort()
    out, last = [], 0
    for s, e, rep in edits:
        if s < last:
            raise Fail(f"{rel}:{line_of(text, s)}: overlapping rewrites")
        out.append(text[last:s])
        out.append(rep)
        last = e
    out.append(text[last:])
    new = "".join(out)
    return add_import(new, rel, root_path)


def has_code_import(code_text):
    for m in re.finditer(r"^[ \t]*use\s[^;]*;", code_text, re.M):
        stmt = m.group(0)
        if re.search(r"\berror\b", stmt) and re.search(r"\bCode\b", stmt):
            return True
    return False


def add_import(text, rel, root_path):
    """Import `Code` where bare `Code::` is used and not yet imported."""
    toks = tokens(text)
    code = code_only(text, toks)
    mods = test_modules(code)
    uses = [m.start() for m in re.finditer(r"(?<![\w:])Code::", code)]
    if not uses:
        return text
    top_code = code
    for s, e in reversed(mods):
        top_code = top_code[:s] + " " * (e - s) + top_code[e:]
    outside = [u for u in uses if not any(s <= u < e for s, e in mods)]
    line = f"use {root_path}::error::Code;\n"
    top_has = has_code_import(top_code)
    inserts = []
    if outside and not top_has:
        merged = merge_into_error_import(text, top_code, root_path)
        if merged is not None:
            return add_import(merged, rel, root_path)
        at, before_use = top_insert_point(text, top_code)
        inserts.append((at, line if before_use else line + "\n"))
        top_has = True
    for s, e in mods:
        inside = [u for u in uses if s <= u < e]
        if not inside:
            continue
        body = code[s:e]
        if has_code_import(body):
            continue
        if top_has and re.search(r"^\s*use super::\*;", body, re.M):
            continue
        nl = text.find("\n", s)
        indent = re.match(r"\n([ \t]*)", text[nl:]).group(1) if nl >= 0 else "    "
        inserts.append((nl + 1, indent + line))
    for pos, ins in sorted(inserts, reverse=True):
        text = text[:pos] + ins + text[pos:]
    return text


def merge_into_error_import(text, top_code, root_path):
    """Add `Code` to an existing top-level `use <root>::error::…;`, if any."""
    m = re.search(r"^use " + re.escape(root_path) + r"::error::\{", top_code, re.M)
    if m:
        return text[:m.end()] + "Code, " + text[m.end():]
    m = re.search(r"^use " + re.escape(root_path) + r"::error::(\w+);", top_code, re.M)
    if m:
        return text[:m.start(1)] + "{Code, " + m.group(1) + "}" + text[m.end(1):]
    return None


def top_insert_point(text, top_code):
    """Before the first top-level `use`, else after the leading docs and
    attributes; and whether it is before a `use`."""
    m = re.search(r"^use\s", top_code, re.M)
    if m:
        return m.start(), True
    pos = 0
    for m in re.finditer(r"[^\n]*\n", text):
        line = m.group(0).strip()
        if line.startswith("//!") or line.startswith("#![") or line == "":
            pos = m.end()
            continue
        break
    return pos, False


def rewrite_test(rel, text, codes):
    """In tests/: `x.code == "X"` / `assert_eq!(x.code, "X")` compare the
    string users see: `x.code.as_str()`. Nothing else in tests changes."""
    toks = tokens(text)
    code = code_only(text, toks)
    literal_at = {s: inner for kind, s, _, inner in toks if kind == "string"}
    edits = []
    for m in re.finditer(r"\.code(\s*(?:==|!=|,)\s*)", text):
        if code[m.start()] != ".":
            continue  # in a comment or a literal
        inner = literal_at.get(m.end())
        if inner is None or not UPPER_SNAKE.fullmatch(inner):
            continue
        if inner not in codes:
            raise Fail(f"{rel}:{line_of(text, m.start())}: \"{inner}\" is compared with an error code but is not in the codes! table")
        edits.append(m.start() + len(".code"))
    for pos in reversed(edits):
        text = text[:pos] + ".as_str()" + text[pos:]
    return text


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    check = "--check" in argv
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    codes = load_codes(root)
    lib = module_files(root, "lib.rs")
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        for name in sorted(names):
            if name.endswith(".rs"):
                files.append(os.path.join(dirpath, name))
    for dirpath, _, names in os.walk(os.path.join(root, "tests")):
        for name in sorted(names):
            if name.endswith(".rs"):
                files.append(os.path.join(dirpath, name))
    changed, notes = {}, []
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read()
        if rel.startswith("tests" + os.sep):
            new = rewrite_test(rel, text, codes)
        elif rel == os.path.join("src", "error.rs"):
            new = SHIM.sub("", text)
        else:
            new = rewrite(path, rel, text, codes, "crate" if path in lib else "git_swarm", notes)
        if new != text:
            changed[path] = new
    for note in notes:
        print("note:", note)
    if check:
        for path in changed:
            print("would rewrite", os.path.relpath(path, root))
        return 1 if changed else 0
    for path, new in changed.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        print("rewrote", os.path.relpath(path, root))
    if changed and "--no-fmt" not in argv:
        subprocess.run(["cargo", "fmt"], cwd=root, check=True)
    print(f"{len(changed)} file(s) rewritten; {len(codes)} codes known")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fail as e:
        print("codes-to-enum: nothing was changed:\n" + str(e), file=sys.stderr)
        sys.exit(2)
