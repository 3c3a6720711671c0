//! The store port's vocabulary, below the port and the queue rules that both use it: its
//! errors, what happened to an entry handed to it, and what finishing an entry records.

use crate::id::{HookId, ValidationError};
use crate::model::{EntryKey, Status};
use crate::stamp::Timestamp;

/// Errors of a [`HookStore`](crate::ports::HookStore).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("no hook with id {0}")]
    HookNotFound(HookId),
    #[error("{0} is not pending")]
    EntryNotFound(EntryKey),
    /// The entry is claimed by another owner, or not claimed by this one.
    #[error("{0} is not held by this process (its claim expired or was taken over)")]
    Fenced(EntryKey),
    #[error("invalid {0}")]
    Invalid(#[from] ValidationError),
    /// The store file cannot be parsed; names the file and the position.
    #[error("{0}")]
    Corrupt(String),
    #[error("{0}")]
    Io(String),
}

/// What happened to one entry handed to [`HookStore::enqueue`](crate::ports::HookStore::enqueue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueResult {
    Queued,
    AlreadyPending,
    HookDeleted,
}

/// What finishing an entry records on its hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRecord {
    pub status: Status,
    /// When the follow-up started, for a run that happened: it goes into the history.
    pub fired_at: Option<Timestamp>,
}
