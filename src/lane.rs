//! Lanes: one worktree and branch `feat/<feature>` per feature, recorded in `refs/swarm/lanes/<feature>`; lane reports journalled in the plan.
