#!/usr/bin/env bash
# Install what the agent-host tests (tests/it/agents_live.rs) need, at a
# pinned version, into a cache directory outside the checkout:
#   - Claude Code (`@anthropic-ai/claude-code`; the package ships a native
#     binary per platform as an optional dependency),
#   - Codex (`@openai/codex`; a native binary per platform, likewise),
#   - Gemini CLI (`@google/gemini-cli`; node, `engines: node >=20`).
#
# Usage: tests/agents/setup.sh [CACHE_DIR]
# Prints the shell line that points the tests at them (eval it), e.g.
#   eval "$(bash tests/agents/setup.sh)"
set -euo pipefail
CLAUDE_VERSION=2.1.328
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
cache="${1:-${GIT_SWARM_NPM_CACHE:-$HOME/.cache/git-swarm-npm}}"

# install NAME PACKAGE VERSION BIN: the package at the version into
# $cache/NAME-VERSION, checked; prints the path of its BIN.
install() {
    local name="$1" pkg="$2" version="$3" bin="$4"
    local dir="$cache/$name-$version"
    mkdir -p "$dir"
    if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
        npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
            "$pkg@$version" >&2
    fi
    local installed
    installed="$(node -p "require('$dir/node_modules/$pkg/package.json').version")"
    [ "$installed" = "$version" ] || { echo "$pkg $installed installed, wanted $version" >&2; exit 1; }
    echo "$dir/node_modules/.bin/$bin"
}

claude="$(install claude-code @anthropic-ai/claude-code "$CLAUDE_VERSION" claude)"
codex="$(install codex @openai/codex "$CODEX_VERSION" codex)"
gemini="$(install gemini-cli @google/gemini-cli "$GEMINI_VERSION" gemini)"
# The native binaries must run here (a platform package missing or built
# for another libc fails now, not in the middle of a test).
"$codex" --version >&2
echo "export GIT_SWARM_CLAUDE='$claude' GIT_SWARM_CODEX='$codex' GIT_SWARM_GEMINI='$gemini'"
