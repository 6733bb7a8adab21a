// Write a copy of GitHub's OpenAPI description holding only the GET
// operations `git swarm verify` uses, plus every component they reference
// (transitively). Prism on the full 13 MB description takes too long to
// start on a small CI machine; the operations kept are verbatim.
// Usage: node trim.js IN.json OUT.json
"use strict";
const fs = require("fs");
const [input, output] = process.argv.slice(2);
const spec = JSON.parse(fs.readFileSync(input, "utf8"));
const PATHS = [
  "/repos/{owner}/{repo}/pulls/{pull_number}",
  "/repos/{owner}/{repo}/pulls",
  "/repos/{owner}/{repo}/commits/{ref}/status",
  "/repos/{owner}/{repo}/commits/{ref}/check-runs",
  "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
  "/repos/{owner}/{repo}/issues/{issue_number}/comments",
  "/repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks",
  "/repos/{owner}/{repo}/rules/branches/{branch}",
];
const out = {
  openapi: spec.openapi,
  info: spec.info,
  servers: spec.servers,
  paths: {},
  components: {},
};
const todo = [];
function scan(v) {
  if (Array.isArray(v)) return v.forEach(scan);
  if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string") todo.push(x);
      else scan(x);
    }
  }
}
for (const p of PATHS) {
  const item = spec.paths[p];
  if (!item || !item.get) throw new Error(`the description has no GET ${p}`);
  out.paths[p] = { get: item.get };
  if (item.parameters) out.paths[p].parameters = item.parameters;
  scan(out.paths[p]);
}
const seen = new Set();
while (todo.length) {
  const ref = todo.pop();
  if (seen.has(ref)) continue;
  seen.add(ref);
  const m = /^#\/components\/([^/]+)\/(.+)$/.exec(ref);
  if (!m) throw new Error(`unsupported $ref ${ref}`);
  const [, kind, name] = m;
  const value = spec.components[kind][name];
  if (value === undefined) throw new Error(`dangling $ref ${ref}`);
  (out.components[kind] ||= {})[name] = value;
  scan(value);
}
fs.writeFileSync(output, JSON.stringify(out));
console.log(`${output}: ${PATHS.length} paths, ${seen.size} components`);
