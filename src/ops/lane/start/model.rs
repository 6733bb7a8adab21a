//! What `lane new` is asked and what it reports.

use serde::Serialize;

pub struct NewLane<'a> {
    pub feature: &'a str,
    pub plan: Option<&'a str>,
    pub base: Option<&'a str>,
    pub owner: Option<&'a str>,
    /// `--task T`: take task T (of `plan` when given, else of the one plan
    /// that has it); the lane then starts on a child plan named `feature`.
    pub task: Option<&'a str>,
    /// `--no-task`: start without a task although the plan has ready ones.
    pub no_task: bool,
}

/// The task a lane took, as `lane new --task` reports it.
#[derive(Debug, Serialize)]
pub struct TaskTaken {
    pub plan: String,
    pub id: String,
    pub holder: String,
    pub lease_until: Option<String>,
    pub branch: String,
    /// The child plan the lane runs on (parent: `plan`).
    pub lane_plan: String,
}

/// What `lane new` did.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum LaneStarted {
    New(Box<Started>),
    /// An interrupted start had written the record: its journal entry was
    /// written (`journalled`) or found.
    Finished {
        #[serde(flatten)]
        lane: LaneFields,
        resumed: bool,
        #[serde(skip)]
        journalled: bool,
    },
}

/// The lane as `lane new` reports it.
#[derive(Debug, Serialize)]
pub struct LaneFields {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub path: String,
    pub base: String,
    pub base_commit: String,
    pub record: String,
}

#[derive(Debug, Serialize)]
pub struct Started {
    #[serde(flatten)]
    pub lane: LaneFields,
    /// The plan file written into the worktree, if the plan has text.
    pub plan_file: Option<String>,
    pub resumed: bool,
    /// What was found and finished or cleaned up first.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// `swarm.planFile`, as configured.
    #[serde(skip)]
    pub plan_file_setting: String,
    #[serde(skip)]
    pub hooks_installed: bool,
    /// The remote has the lane record and its plan entry (the start was
    /// arbitrated there); false offline or when it was left for `sync`.
    pub published: bool,
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// `--task`: the task taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskTaken>,
}
