//! The store port's vocabulary, below the port and the queue rules that both use it: its
//! errors, what happened to an entry handed to it, and what finishing an entry records.

use crate::id::{HookId, ValidationError};
use crate::model::{EntryKey, Status};
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
