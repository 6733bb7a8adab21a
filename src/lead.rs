//! Leader records (`swarm-lead/v1`): one leader per plan, epochs that fence stale leaders, fenced publish.
