//! The store port's vocabulary, below the port and the queue rules that both use it: its
//! errors, what happened to an entry handed to it, and what finishing an entry records.

use crate::id::{HookId, ValidationError};
use crate::live::Waiting;
use crate::model::{EntryKey, PendingEntry, Status};
use crate::stamp::Timestamp;

/// Errors of a [`HookStore`](crate::ports::HookStore).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No hook has this id (an update or delete of a missing hook).
    #[error("no hook with id {0}")]
    HookNotFound(HookId),
    /// No entry is queued for this (hook, session) pair.
    #[error("{0} is not pending")]
    EntryNotFound(EntryKey),
    /// The entry is claimed by another owner, or not claimed by this one.
    #[error("{0} is not held by this process (its claim expired or was taken over)")]
    Fenced(EntryKey),
    /// A value given or found breaks a rule; names the field and the rule.
    #[error("invalid {0}")]
    Invalid(#[from] ValidationError),
    /// The store file cannot be parsed; names the file and the position.
    #[error("{0}")]
    Corrupt(String),
    /// Reading or writing the store failed; the message says what and why, never a secret.
    #[error("{0}")]
    Io(String),
}

/// What happened to one entry handed to [`HookStore::enqueue`](crate::ports::HookStore::enqueue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueResult {
    /// It is in the queue now.
    Queued,
    /// Its (hook, session) pair was queued already; nothing changed.
    AlreadyPending,
    /// Its hook does not exist (any more); nothing changed.
    HookDeleted,
}

/// What finishing an entry records on its hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRecord {
    /// The hook's last status from now on.
    pub status: Status,
    /// When the follow-up started, for a run that happened: it goes into the history.
    pub fired_at: Option<Timestamp>,
}

/// How a claimed entry goes back to the queue ([`HookStore::requeue`](crate::ports::HookStore::requeue)): what a store
/// writes over the entry's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requeue {
    /// When it is due again.
    pub due_at: Timestamp,
    /// Its not-ready looks so far ([`PendingEntry::retries`]).
    pub retries: u32,
    /// Its runs ended on a limit so far ([`PendingEntry::attempts`]).
    pub attempts: u32,
    /// Its deliveries never taken so far ([`PendingEntry::not_taken`]).
    pub not_taken: u32,
    /// Why it waits; `None` clears it.
    pub waiting: Option<Waiting>,
}

impl Requeue {
    /// `entry` due again at `due_at`, its counters as they are, waiting for `waiting`.
    pub fn of(entry: &PendingEntry, due_at: Timestamp, waiting: Option<Waiting>) -> Self {
        Self {
            due_at,
            retries: entry.retries,
            attempts: entry.attempts,
            not_taken: entry.not_taken,
            waiting,
        }
    }
}
