//! The ports: what the core needs from the outside world, as `Send + Sync` traits the app
//! holds as `Arc<dyn …>`. Each has its own error type; adapters map their IO and parse
//! errors into it and never panic.

use async_trait::async_trait;
use time::Duration;

use crate::decide::EnqueueDecision;
use crate::model::*;
use crate::prompt::Prompt;
pub use crate::queue::EnqueueRequest;
use crate::stamp::Timestamp;

/// Errors of a [`HookStore`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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

/// What happened to one entry handed to [`HookStore::enqueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueResult {
    Queued,
    AlreadyPending,
    HookDeleted,
}

/// The hooks and the queue, read together at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    pub hooks: Vec<Hook>,
    pub pending: Vec<PendingEntry>,
}

/// What finishing an entry records on its hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRecord {
    pub status: Status,
    /// When the follow-up started, for a run that happened: it goes into the history.
    pub fired_at: Option<Timestamp>,
}

/// Hooks, the pending queue and the run log. Every change is atomic and durable, and safe
/// when several processes share the store.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait HookStore: Send + Sync {
    async fn snapshot(&self) -> Result<Snapshot, StoreError>;
    async fn get_hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError>;
    /// Creates a hook whose id is the slug of its name, made unique.
    async fn create_hook(&self, spec: HookSpec, now: Timestamp) -> Result<Hook, StoreError>;
    async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, StoreError>;
    /// Deletes a hook and its queued entries; returns how many entries were dropped.
    async fn delete_hook(&self, id: &HookId) -> Result<usize, StoreError>;
    /// Adds entries in one write; a (hook, session) pair already queued is refused.
    async fn enqueue(&self, entries: Vec<PendingEntry>) -> Result<Vec<EnqueueResult>, StoreError>;
    /// Queues the hooks for one event in one atomic write: the enqueue decision
    /// ([`crate::queue::plan_event`]) is taken for each matching hook on the hooks and queue
    /// as they are under the lock, and its `Queue` decisions are carried out.
    async fn enqueue_event(
        &self,
        request: &EnqueueRequest,
    ) -> Result<Vec<(HookId, EnqueueDecision)>, StoreError>;
    /// Claims up to `limit` due entries for `owner` until `now + ttl`, in one write. An entry
    /// is claimable when due and not under a live claim; at most one entry per session is
    /// held at a time, across owners.
    async fn claim_due(
        &self,
        now: Timestamp,
        owner: &str,
        ttl: Duration,
        limit: usize,
    ) -> Result<Vec<PendingEntry>, StoreError>;
    /// Extends `owner`'s claims on `keys`; returns the keys it still held.
    async fn renew(
        &self,
        keys: &[EntryKey],
        owner: &str,
        expires_at: Timestamp,
    ) -> Result<Vec<EntryKey>, StoreError>;
    /// Puts a claimed entry back, unclaimed, due at `due_at`. Fenced by owner.
    async fn requeue(
        &self,
        key: &EntryKey,
        owner: &str,
        due_at: Timestamp,
        retries: u32,
    ) -> Result<(), StoreError>;
    /// Removes a claimed entry and records `record` on its hook, in one write. Fenced by
    /// owner: a caller that no longer holds the claim changes nothing.
    async fn complete(
        &self,
        key: &EntryKey,
        owner: &str,
        record: Option<HookRecord>,
    ) -> Result<(), StoreError>;
    /// Clears `owner`'s claims on `keys`, leaving the entries queued.
    async fn release(&self, keys: &[EntryKey], owner: &str) -> Result<(), StoreError>;
    /// Records an outcome on a hook without touching the queue (a no-op if it was deleted).
    async fn record(
        &self,
        hook: &HookId,
        session: &SessionId,
        record: HookRecord,
    ) -> Result<(), StoreError>;
    /// Appends one line to the run log.
    async fn append_run(&self, run: &RunRecord) -> Result<(), StoreError>;
    /// Run-log lines matching `filter`, oldest first.
    async fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError>;
}

/// Errors of [`SessionMeta`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetaError {
    #[error("{0}")]
    Corrupt(String),
    #[error("{0}")]
    Io(String),
}

/// The result of a stamp's test-and-set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampResult {
    /// This caller stamped the pair.
    Won,
    /// Somebody stamped it first, at that time.
    Lost { at: Timestamp },
}

/// What the app knows about a session: its own remembered state, and facts read from
/// Claude Code's transcript.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SessionMeta: Send + Sync {
    async fn state(&self, session: &SessionId) -> Result<SessionState, MetaError>;
    /// Merges `update` into the session's state (stamps are never touched).
    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError>;
    /// The state plus fresh transcript facts.
    async fn facts(&self, session: &SessionId) -> Result<SessionFacts, MetaError>;
    /// Test-and-set of the once-per-(hook, session) stamp, atomic across processes.
    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError>;
}

/// A follow-up to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub hook_id: HookId,
    pub session_id: SessionId,
    pub cwd: String,
    pub prompt: Prompt,
}

/// Errors of a [`Runner`]: the run could not be started at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunnerError {
    #[error("could not start {program}: {message}")]
    Spawn { program: String, message: String },
    #[error("invalid {0}")]
    Invalid(#[from] ValidationError),
}

/// Resumes a conversation with a prompt and reports what the run did.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Runner: Send + Sync {
    async fn run(&self, request: &RunRequest) -> Result<RunOutcome, RunnerError>;
}

/// Errors of a [`PromptSource`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    #[error("prompt file {file} not found (looked in {looked_in})")]
    NotFound { file: String, looked_in: String },
    #[error("prompt file {0}")]
    Unreadable(String),
    #[error("prompt file {file}: {error}")]
    Invalid {
        file: String,
        error: ValidationError,
    },
}

/// Loads a hook's prompt file, looking first in the session's own project.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait PromptSource: Send + Sync {
    async fn load<'a>(
        &self,
        file: &PromptFile,
        session_cwd: Option<&'a str>,
    ) -> Result<Prompt, PromptError>;
}

/// The time. The only way the core learns it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}
