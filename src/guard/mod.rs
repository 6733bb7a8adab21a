//! The guards run by hooks and by `git swarm check`: plan-untracked, changeset-unique, attribution, fenced-publish.
