# Plan, lane and packet names come from the repository: ask git-swarm
# (`git-swarm __complete <words>`), else complete statically.
__git_swarm_clap() {
    local -a names
    names=($(git-swarm __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
    if [ ${#names[@]} -gt 0 ]; then
        COMPREPLY=("${names[@]}")
        return 0
    fi
    __git_swarm_static "$@"
}

# `git swarm <TAB>`: git's completion calls _git_swarm with the words after `git`.
_git_swarm() {
    local -a COMP_WORDS=("git_swarm" "${COMP_WORDS[@]:2}")
    local COMP_CWORD=$((COMP_CWORD - 1))
    __git_swarm_clap "git_swarm" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}
