#!/usr/bin/env bash
# Install what the OpenAPI tests (tests/it/openapi.rs) need, at pinned
# versions, into a cache directory outside the checkout:
#   - @octokit/openapi: GitHub's published description of its REST API;
#   - @stoplight/prism-cli: `prism mock`, a server driven by that description.
# Then trim the description to the operations `verify` uses (prism takes
# ~25 s to start on the full 13 MB file on a loaded 2-core machine, ~3 s
# on the trimmed one; the kept operations are verbatim).
#
# Usage: tests/openapi/setup.sh [CACHE_DIR]
# Prints the shell lines that point the tests at it (eval them), e.g.
#   eval "$(bash tests/openapi/setup.sh)"
set -euo pipefail
OPENAPI_VERSION=23.0.2
PRISM_VERSION=5.14.2 # 5.15+ declares node >= 24; the machine has node 20
here="$(cd "$(dirname "$0")" && pwd)"
cache="${1:-${GIT_SWARM_NPM_CACHE:-$HOME/.cache/git-swarm-npm}}"
dir="$cache/openapi-$OPENAPI_VERSION-prism-$PRISM_VERSION"
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/prism" ] ||
    [ ! -f "$dir/node_modules/@octokit/openapi/generated/api.github.com.json" ]; then
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
        "@octokit/openapi@$OPENAPI_VERSION" "@stoplight/prism-cli@$PRISM_VERSION" >&2
fi
installed="$(node -p "require('$dir/node_modules/@stoplight/prism-cli/package.json').version")"
[ "$installed" = "$PRISM_VERSION" ] || { echo "prism $installed installed, wanted $PRISM_VERSION" >&2; exit 1; }
node "$here/trim.js" "$dir/node_modules/@octokit/openapi/generated/api.github.com.json" \
    "$dir/verify-api.json.tmp" >&2
mv "$dir/verify-api.json.tmp" "$dir/verify-api.json"
echo "export GIT_SWARM_PRISM='$dir/node_modules/.bin/prism'"
echo "export GIT_SWARM_OPENAPI='$dir/verify-api.json'"
