//! The enumerated settings ([`TaskPromotion`], [`NumaPolicy`], [`PlanKind`])
//! and the one parser of every enumerated value, `parse_choice`.
//!
//! Invariant: an enumerated setting (these three and the booleans) is read
//! only by `parse_choice` — one of its names, in any case, blanks around
//! ignored — so every value that parses is in range and a refused value is
//! a [`ConfigError`] naming the setting, the value as given and the names
//! allowed; each variant's [`name`](NumaPolicy::name) is read back to it.

use std::fmt;
use std::str::FromStr;

use super::builder::refused;
use super::{PLAN_ALLOWED, POLICY_ALLOWED, TASK_PROMOTION_ALLOWED};
use crate::error::ConfigError;

/// When the environment of a forked task is promoted to the global heap
/// (§3.1, after Rainey's lazy promotion \[Rai10\]; see `sched`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskPromotion {
    /// Only when another vproc steals the task (the paper's lazy promotion).
    Lazy,
    /// When the task is forked, whether or not it is stolen.
    Eager,
}

impl TaskPromotion {
    pub fn name(self) -> &'static str {
        match self {
            TaskPromotion::Lazy => "lazy",
            TaskPromotion::Eager => "eager",
        }
    }
}

impl fmt::Display for TaskPromotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TaskPromotion {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        parse_choice(
            "task-promotion",
            s,
            &[
                ("lazy", TaskPromotion::Lazy),
                ("eager", TaskPromotion::Eager),
            ],
            TASK_PROMOTION_ALLOWED,
        )
    }
}

/// Where global-heap chunks get their physical pages (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NumaPolicy {
    /// On the node of the vproc that requests the chunk (the paper's default).
    Local,
    /// Spread page by page over all nodes.
    Interleave,
    /// All on node 0.
    Node0,
}

impl NumaPolicy {
    pub const ALL: [NumaPolicy; 3] = [NumaPolicy::Local, NumaPolicy::Interleave, NumaPolicy::Node0];

    pub fn name(self) -> &'static str {
        match self {
            NumaPolicy::Local => "local",
            NumaPolicy::Interleave => "interleave",
            NumaPolicy::Node0 => "node0",
        }
    }
}

impl fmt::Display for NumaPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NumaPolicy {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let choices = NumaPolicy::ALL.map(|p| (p.name(), p));
        parse_choice("numa-policy", s, &choices, POLICY_ALLOWED)
    }
}

/// Which collector plan the runtime uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PlanKind {
    /// Per-vproc local heaps plus a chunked global heap (DLG + Appel, §3).
    #[serde(rename = "split")]
    SplitHeap,
    /// Per-vproc minor heaps promoted together into one shared,
    /// concurrently marked, non-moving major heap (OCaml 5's design,
    /// multicore-ocaml-gc.txt).
    #[serde(rename = "shared")]
    SharedHeap,
}

impl PlanKind {
    pub fn name(self) -> &'static str {
        match self {
            PlanKind::SplitHeap => "split",
            PlanKind::SharedHeap => "shared",
        }
    }
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlanKind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        parse_choice(
            "plan",
            s,
            &[
                ("split", PlanKind::SplitHeap),
                ("split-heap", PlanKind::SplitHeap),
                ("shared", PlanKind::SharedHeap),
                ("shared-heap", PlanKind::SharedHeap),
            ],
            PLAN_ALLOWED,
        )
    }
}

pub(super) const BOOL_CHOICES: &[(&str, bool)] = &[
    ("true", true),
    ("1", true),
    ("yes", true),
    ("on", true),
    ("false", false),
    ("0", false),
    ("no", false),
    ("off", false),
];

/// The one parser of every enumerated setting (`plan`, `numa-policy`,
/// `task-promotion`, the booleans): one of `choices`' names, in any case,
/// blanks around ignored.
pub(super) fn parse_choice<T: Copy>(
    setting: &'static str,
    value: &str,
    choices: &[(&str, T)],
    allowed: &str,
) -> Result<T, ConfigError> {
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value.trim()))
        .map(|&(_, v)| v)
        .ok_or_else(|| refused(setting, value, allowed))
}
