#!/usr/bin/env bash
# Install what the agent-host tests (tests/it/agents_live.rs) need, at a
# pinned version, into a cache directory outside the checkout: the Claude
# Code CLI (`@anthropic-ai/claude-code`; the package ships a native binary
# per platform as an optional dependency).
#
# Usage: tests/agents/setup.sh [CACHE_DIR]
# Prints the shell line that points the tests at it (eval it), e.g.
#   eval "$(bash tests/agents/setup.sh)"
set -euo pipefail
CLAUDE_VERSION=2.1.328
cache="${1:-${GIT_SWARM_NPM_CACHE:-$HOME/.cache/git-swarm-npm}}"
dir="$cache/claude-code-$CLAUDE_VERSION"
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/claude" ]; then
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
fi
installed="$(node -p "require('$dir/node_modules/@anthropic-ai/claude-code/package.json').version")"
[ "$installed" = "$CLAUDE_VERSION" ] || { echo "claude-code $installed installed, wanted $CLAUDE_VERSION" >&2; exit 1; }
echo "export GIT_SWARM_CLAUDE='$dir/node_modules/.bin/claude'"
