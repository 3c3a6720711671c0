//! The pure core of hooks-app.
//!
//! Everything here is a function of its inputs: no file, process, network or clock access,
//! and no async runtime. Time comes in as a value (see [`ports::Clock`]); the outside world
//! comes in through the traits in [`ports`], which the adapter crates implement.
//!
//! - [`id`]: session and hook ids, and the validation error (the leaf);
//! - [`model`]: validated types (ids, hooks, pending entries, statuses, session facts);
//! - [`stamp`]: the original store's timestamp form, written strictly and read leniently;
//! - [`prompt`]: prompt files (frontmatter + body) and the run options they carry;
//! - [`live`]: who holds a session: open Claude Code processes, run leases, waits;
//! - [`failure`]: failed turns and limits: their kinds, reset times, the backoff;
//! - [`cost`]: prices, the estimate before a run and the cost cap;
//! - [`decide`]: the enqueue and fire decisions;
//! - [`queue`]: the queue's rules (dedupe, claims, fencing), shared by every store;
//! - [`store`]: the store port's errors and reports, below the port and the queue rules;
//! - [`schedule`]: follow-ups at a time (`after`, `every`), as one-off scheduled hooks;
//! - [`ports`]: the hook store, session meta, runner, prompt source and clock;
//! - [`service`]: the application service that composes the ports.

#![deny(missing_docs)]

/// The variable every runner sets in a follow-up's environment, naming its hook: the
/// agent's own hooks then know a follow-up from a person's turn (hooks-app's `claude-hook`
/// queues nothing for it, so a follow-up never queues follow-ups), and what a dead run left
/// is told apart from other processes of a reused group
/// (`hooks_platform::process::group_leftovers`).
pub const FOLLOW_UP_ENV: &str = "HOOKS_APP_FOLLOW_UP";

/// The agent a conversation belongs to when nothing says otherwise: Claude Code, whose
/// hooks and transcripts hooks-app was first built on. Other agents' conversations are
/// named by their adapters (`TranscriptFacts::agent`, `SessionState::agent`).
pub const DEFAULT_AGENT: &str = "claude";

pub mod cost;
pub mod decide;
pub mod failure;
pub mod id;
pub mod live;
pub mod lookup;
pub mod model;
pub mod ports;
pub mod prompt;
pub mod queue;
pub mod schedule;
pub mod service;
pub mod span;
pub mod stamp;
pub mod store;

#[cfg(any(test, feature = "mocks"))]
pub mod testing;

#[cfg(test)]
mod tests;

pub use live::*;
pub use model::*;
