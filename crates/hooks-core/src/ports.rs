//! The ports: what the core needs from the outside world, as `Send + Sync` traits the app
//! holds as `Arc<dyn …>`. Each has its own error type; adapters map their IO and parse
//! errors into it and never panic.

use async_trait::async_trait;
use time::Duration;

use crate::decide::EnqueueDecision;
use crate::live::*;
use crate::model::*;
use crate::prompt::Prompt;
pub use crate::prompt::PromptError;
pub use crate::queue::EnqueueRequest;
use crate::stamp::Timestamp;
pub use crate::store::{EnqueueResult, HookRecord, Requeue, StoreError};

/// The hooks and the queue, read together at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// Every hook, in the store's order (the order they were created in).
    pub hooks: Vec<Hook>,
    /// Every queued entry, claimed or not, in the order they were queued.
    pub pending: Vec<PendingEntry>,
}

/// What a scheduler needs of the queue between passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueSummary {
    /// Whether anything is queued at all.
    pub any_pending: bool,
    /// When some entry may next become claimable ([`crate::queue::next_wake`]).
    pub next_wake: Option<Timestamp>,
    /// Whether some entry waits for a conversation to be closed.
    pub open_waits: bool,
}

impl QueueSummary {
    /// The summary of a queue read whole.
    pub fn of(pending: &[PendingEntry], now: Timestamp) -> Self {
        Self {
            any_pending: !pending.is_empty(),
            next_wake: crate::queue::next_wake(pending, now),
            open_waits: pending
                .iter()
                .any(|p| p.waiting.as_ref().is_some_and(Waiting::waits_for_close)),
        }
    }
}

/// Hooks, the pending queue and the run log. Every change is atomic and durable, and safe
/// when several processes share the store.
///
/// The contract ([`crate::testing::contract`], feature `mocks`) holds an adapter to every
/// rule below, one check a rule: expand it with [`crate::hook_store_contract!`]. The queue's
/// rules are also written once as functions on a list ([`crate::queue`]); a store that
/// keeps its queue as a list calls them under its lock.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait HookStore: Send + Sync {
    /// The hooks and the queue as they are at one moment, read together.
    async fn snapshot(&self) -> Result<Snapshot, StoreError>;
    /// The hook with `id`, or `None`.
    async fn get_hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError>;
    /// Creates a hook whose id is the slug of its name, made unique (contract: `crud`,
    /// `unique_ids`).
    async fn create_hook(&self, spec: HookSpec, now: Timestamp) -> Result<Hook, StoreError>;
    /// Applies every `Some` field of `patch` ([`HookPatch::apply`]) and returns the hook as
    /// stored; a missing hook is [`StoreError::HookNotFound`] (contract: `crud`).
    async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, StoreError>;
    /// Writes a whole hook as given (its id, status and history too), replacing the hook
    /// with its id: for copying between stores (contract: `import_writes_the_whole_hook`).
    async fn import_hook(&self, hook: &Hook) -> Result<(), StoreError>;
    /// Deletes a hook and its queued entries; returns how many entries were dropped. A
    /// missing hook is [`StoreError::HookNotFound`] (contract: `crud`,
    /// `delete_drops_entries`).
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
    /// held at a time, across owners; the earliest due are taken first
    /// ([`crate::queue::claim_due`]; contract: `claim_exclusive`,
    /// `claims_take_the_earliest_due_first`, `one_claim_per_session`).
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
    /// Puts a claimed entry back, unclaimed, as `to` says: due then, its counters and why
    /// it waits (`None` clears it), each kept as given. Fenced by owner ([`crate::queue::requeue`];
    /// contract: `requeue_and_release`, `requeue_keeps_every_counter_and_the_wait`).
    async fn requeue(&self, key: &EntryKey, owner: &str, to: &Requeue) -> Result<(), StoreError>;
    /// Makes the session's waiting entries due at `due_at` (never later than they were) and
    /// clears why they waited; `open_only` wakes only those waiting for the conversation to
    /// close, and a wait for a limit's reset is never woken. An entry under a claim is woken
    /// too: its claimer's requeue decides again. Returns how many it woke, and writes
    /// nothing when there were none ([`crate::queue::wake`]; contract: `waits_and_wakes`,
    /// `wakes_leave_limit_waits_and_never_put_an_entry_off`).
    async fn wake(
        &self,
        session: &SessionId,
        due_at: Timestamp,
        open_only: bool,
    ) -> Result<usize, StoreError>;
    /// Removes a claimed entry and records `record` on its hook, in one write. Fenced by
    /// owner: a caller that no longer holds the claim changes nothing.
    async fn complete(
        &self,
        key: &EntryKey,
        owner: &str,
        record: Option<HookRecord>,
    ) -> Result<(), StoreError>;
    /// Clears `owner`'s claims on `keys`, leaving the entries queued; a key another owner
    /// holds, or none, is passed over (contract: `release_is_fenced_by_owner`).
    async fn release(&self, keys: &[EntryKey], owner: &str) -> Result<(), StoreError>;
    /// Removes the entries among `keys` that no live claim holds at `now`, in one write,
    /// and returns them ([`crate::queue::drop_unclaimed`]): a person dropping queued
    /// follow-ups. An entry being fired is left to its claimer; a key not queued is passed
    /// over. Records nothing: the caller logs what it dropped.
    async fn drop_unclaimed(
        &self,
        keys: &[EntryKey],
        now: Timestamp,
    ) -> Result<Vec<PendingEntry>, StoreError>;
    /// Records an outcome on a hook without touching the queue (a no-op if it was deleted):
    /// its `last_status`, and a history entry at [`HookRecord::fired_at`]
    /// ([`crate::queue::record`]; contract: `history_cap`, `history_has_its_time`).
    async fn record(
        &self,
        hook: &HookId,
        session: &SessionId,
        record: HookRecord,
    ) -> Result<(), StoreError>;
    /// Appends one line to the run log.
    async fn append_run(&self, run: &RunRecord) -> Result<(), StoreError>;
    /// The runs matching `filter`, oldest first: a run logged when it started and again
    /// when it ended is one record, the later line's (contract: `run_log`,
    /// `run_log_folds_a_run`).
    async fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError>;
    /// What a scheduler needs between passes. The default reads the whole queue; a store
    /// with indexes answers without.
    async fn summary(&self, now: Timestamp) -> Result<QueueSummary, StoreError> {
        Ok(QueueSummary::of(&self.snapshot().await?.pending, now))
    }
    /// The store's daily budget, if one is set.
    async fn budget(&self) -> Result<Option<crate::cost::Budget>, StoreError>;
    /// Sets the daily budget, or removes it with `None`.
    async fn set_budget(&self, budget: Option<crate::cost::Budget>) -> Result<(), StoreError>;
    /// Whether follow-ups are paused, for every process sharing the store.
    async fn pause(&self) -> Result<Option<Pause>, StoreError>;
    /// Pauses follow-ups, or (`None`) ends the pause.
    async fn set_pause(&self, pause: Option<Pause>) -> Result<(), StoreError>;
}

/// What a long-running process needs of a store beyond its data: to learn that another
/// process changed it, and its upkeep. Each store says how (a file watch, a database's
/// notifications, a poll).
pub trait StoreSignals: Send + Sync {
    /// Calls `wake`, from any thread, each time another process changes the store, for as
    /// long as the process lives. `Err` says why it cannot; the caller then relies on
    /// [`StoreSignals::fingerprint`], polled more often.
    fn watch(&self, wake: Box<dyn Fn() + Send + Sync>) -> Result<(), String>;
    /// A cheap value that differs whenever the store changed; `None` when it cannot tell.
    fn fingerprint(&self) -> Option<String>;
    /// Whether the store is still there: a daemon whose store was deleted exits.
    fn exists(&self) -> bool;
    /// Removes what writers that died left behind; returns how many things it removed.
    fn housekeep(&self) -> Result<usize, StoreError>;
    /// Where the store is, for people (`/data/hooks.json`, a database URL without secrets).
    fn location(&self) -> String;
    /// How to put back the last good copy of a store that no longer reads, where the store
    /// keeps one (a command for people to run).
    fn restore_hint(&self) -> Option<String>;
}

/// Errors of [`SessionMeta`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// What is kept cannot be read as what it should be; the message says where.
    #[error("{0}")]
    Corrupt(String),
    /// Reading or writing failed; the message says what and why.
    #[error("{0}")]
    Io(String),
}

/// The result of a stamp's test-and-set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampResult {
    /// This caller stamped the pair.
    Won,
    /// Somebody stamped it first, at that time.
    Lost {
        /// When the pair was stamped.
        at: Timestamp,
    },
}

/// The result of [`SessionMeta::begin_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginRun {
    /// This caller stamped the pair and holds the session's run lease.
    Won,
    /// The pair was stamped already, at that time.
    Stamped {
        /// When the pair was stamped.
        at: Timestamp,
    },
    /// Another run holds the session's lease.
    Busy(Box<LeaseInfo>),
}

/// What [`SessionStore::begin_run`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// The pair is stamped and the lease taken, by this caller.
    Won,
    /// The pair was stamped already, at that time.
    Stamped {
        /// When the pair was stamped.
        at: Timestamp,
    },
    /// A lease is there, live or not: the caller judges it.
    Held(RunLease),
}

/// One session's durable state, as [`SessionStore::sessions`] lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session.
    pub session: SessionId,
    /// Its stamps and what is remembered of it.
    pub state: SessionState,
    /// The run lease it holds, live or not.
    pub lease: Option<RunLease>,
}

/// The durable half of what the app knows about a session: the once-per-(hook, session)
/// stamps, the run lease, and the remembered cwd, transcript path and origin. It lives
/// beside the queue, so that every process sharing the queue shares it too; the store
/// adapters implement it. Every change is atomic and durable across processes.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The session's state and its run lease, from one read (empty for an unknown session).
    async fn state(
        &self,
        session: &SessionId,
    ) -> Result<(SessionState, Option<RunLease>), MetaError>;
    /// Merges `update` into the session's state (stamps are never touched). The `cwd` is
    /// set once: an update naming another folder leaves the first one (a conversation's
    /// folder never moves; the contract's `remember` check holds a store to it).
    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError>;
    /// Test-and-set of the (hook, session) stamp. An unreadable stamp counts as stamped.
    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError>;
    /// Removes the hook's stamp on the session (`hooks run --force`); whether there was one.
    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError>;
    /// When the session holds no lease and the lease's hook no stamp on it, stamps the
    /// pair at the lease's start and takes the lease, in one atomic step.
    async fn begin_run(&self, session: &SessionId, lease: &RunLease) -> Result<Begin, MetaError>;
    /// Rewrites the lease of run `lease.run_id`; `false` when the session's lease is not
    /// that run's any more.
    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError>;
    /// Clears the session's lease if run `run_id` holds it.
    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError>;
    /// Every session's lease.
    async fn leases(&self) -> Result<Vec<(SessionId, RunLease)>, MetaError>;
    /// Every session the store knows, for a copy to another store.
    async fn sessions(&self) -> Result<Vec<SessionRecord>, MetaError>;
    /// Forgets sessions not changed since `before` that are not in `keep` and hold no
    /// lease: the only way a stamp ever goes. Returns the sessions forgotten.
    async fn prune(
        &self,
        before: Timestamp,
        keep: &std::collections::HashSet<SessionId>,
    ) -> Result<Vec<SessionId>, MetaError>;
}

/// What the app knows about a session: its own remembered state, facts read from Claude
/// Code's transcript and session files, and the session's run lease.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SessionMeta: Send + Sync {
    /// The session's durable state: its stamps and what is remembered of it (the empty
    /// state for a session never seen).
    async fn state(&self, session: &SessionId) -> Result<SessionState, MetaError>;
    /// Merges `update` into the session's state (stamps are never touched). The `cwd` is
    /// set once: an update naming another folder leaves the first one (a conversation's
    /// folder never moves; the contract's `remember` check holds a store to it).
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
    /// Removes the hook's stamp on the session; whether there was one.
    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError>;
    /// One atomic test-and-set, across processes: when the lease's hook has no stamp on the
    /// session and no live lease is held on it at `now`, stamps the pair at the lease's
    /// start and takes the lease. Durable before it returns.
    async fn begin_run(
        &self,
        session: &SessionId,
        lease: &RunLease,
        now: Timestamp,
    ) -> Result<BeginRun, MetaError>;
    /// Updates the lease `lease.run_id` holds (its child, its expiry); `false` when the
    /// session's lease is no longer that run's.
    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError>;
    /// Clears the session's lease if run `run_id` holds it.
    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError>;
    /// Every session's lease, with what can be seen of its holder.
    async fn leases(&self) -> Result<Vec<(SessionId, LeaseInfo)>, MetaError>;
    /// The Claude Code process that has the session open, if one has (no transcript read).
    async fn open(&self, session: &SessionId) -> Result<Option<OpenSession>, MetaError>;
    /// The sessions it knows of (remembered, or with a transcript) whose id starts with
    /// `prefix`, and a phrase naming where it looked.
    async fn sessions_starting(&self, prefix: &str) -> Result<(Vec<SessionId>, String), MetaError>;
}

/// A follow-up to run.
///
/// It grows as the core learns more a runner may use, so it is `#[non_exhaustive]`: code
/// outside this crate (a runner's tests) makes one with [`RunRequest::new`] and sets the
/// optional fields it needs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunRequest {
    /// The hook whose follow-up this is: the runner names it in [`crate::FOLLOW_UP_ENV`].
    pub hook_id: HookId,
    /// The conversation to resume: the same one, never a fork.
    pub session_id: SessionId,
    /// The conversation's project folder, where the run starts.
    pub cwd: String,
    /// Rendered: its variables filled.
    pub prompt: Prompt,
    /// Deliver the prompt into the conversation a person has open, as one turn of it,
    /// rather than resume it: set only for a runner that says it can
    /// ([`Runner::delivers_into_open`]) and a prompt with no run options. A delivery that
    /// never reached the conversation (its inbox refused the connection) ends with a
    /// [`crate::Status::Requeued`] outcome: it is no run, and the entry goes back to wait for
    /// the close. Once the conversation has the prompt it is handed over: the person may be
    /// asked, and a declined or never-taken delivery ends with any other status (the
    /// Claude runner's is [`crate::Status::Skipped`]) and is never resumed as well.
    pub into_open: Option<crate::live::OpenDelivery>,
    /// The agent whose conversation it is, when its transcript says
    /// ([`TranscriptFacts::agent`]): a runner for several agents resumes it with the
    /// right one.
    pub agent: Option<String>,
}

impl RunRequest {
    /// A resume of `session_id` in `cwd` with `prompt` (rendered) for hook `hook_id`; no
    /// delivery into an open conversation, no agent named ([`crate::DEFAULT_AGENT`]'s).
    pub fn new(hook_id: HookId, session_id: SessionId, cwd: String, prompt: Prompt) -> Self {
        Self {
            hook_id,
            session_id,
            cwd,
            prompt,
            into_open: None,
            agent: None,
        }
    }
}

/// Errors of a [`Runner`]: the run could not be started at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The program could not be started. Nothing ran, so the follow-up goes back to the
    /// queue and is tried again after a backoff (the program may be installed meanwhile):
    /// return it only when the agent never got the prompt.
    #[error("could not start {program}: {message}")]
    Spawn {
        /// The program, as the runner was told it.
        program: String,
        /// Why it did not start.
        message: String,
    },
    /// The request asks what this runner cannot do (a run option it has no way to honour),
    /// named by field and rule.
    #[error("invalid {0}")]
    Invalid(#[from] ValidationError),
}

/// Resumes a conversation with a prompt: [`Runner::start`] starts the run, the handle tells
/// its process and waits for what it did.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Runner: Send + Sync {
    /// Starts resuming `request.session_id` in `request.cwd` with the prompt, already
    /// rendered, and returns at once with the run under way. The run must carry
    /// [`crate::FOLLOW_UP_ENV`] (naming the hook) where the agent's own hooks can see it,
    /// lead a process group of its own when it has a process, and end at the runner's
    /// timeout. Its outcome ([`RunHandle::wait`]) sets `status`, `completed` (the reply's
    /// last non-empty line is `COMPLETED`), and `api_error_status` when the agent stopped
    /// on an API error (a 429 is requeued, not failed). `Err` only when nothing started
    /// (run options it cannot honour are [`RunnerError::Invalid`], never dropped).
    async fn start(&self, request: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError>;
    /// Whether it can deliver a follow-up into a conversation open in the agent's
    /// interactive CLI ([`RunRequest::into_open`]). None can unless it says so.
    fn delivers_into_open(&self) -> bool {
        false
    }
    /// Ends the processes left in the process group `group` led (with start times at or
    /// after its own) by a run whose runner died; returns how many were signalled.
    async fn end_leftovers(&self, group: &ProcessRef) -> usize;
}

/// A started run.
#[async_trait]
pub trait RunHandle: Send {
    /// The run's process, the leader of its process group, when it has one.
    fn process(&self) -> Option<ProcessRef>;
    /// Waits for the run to end. A failure after the start is an error status.
    async fn wait(self: Box<Self>) -> RunOutcome;
}

/// Loads a hook's prompt file, looking first in the session's own project.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait PromptSource: Send + Sync {
    /// The prompt `file` holds, parsed (its frontmatter's run options and its body, not
    /// rendered): looked up in `session_cwd`'s project first, where its use is approved,
    /// then in the workspace.
    async fn load<'a>(
        &self,
        file: &PromptFile,
        session_cwd: Option<&'a str>,
    ) -> Result<Prompt, PromptError>;

    /// Keeps `text` as the new prompt file `file`, in a place only the person writes
    /// (never a conversation's project), for [`load`](Self::load) to find from any folder:
    /// `Ok(false)` when a file of that name is there already (nothing is written). A
    /// follow-up at a time ([`crate::schedule`]) keeps its prompt so. This default keeps
    /// none.
    async fn save(&self, file: &PromptFile, _text: &str) -> Result<bool, PromptError> {
        Err(PromptError::Unreadable(format!(
            "{file}: this prompt source keeps no new prompts"
        )))
    }
}

/// The time. The only way the core learns it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> Timestamp;

    /// The calendar day that holds `at` in `zone` (a tz database name; `None`: this
    /// machine's local zone). `Err` says why the zone cannot be used. This default knows
    /// UTC and fixed offsets (`+05:30`) only.
    #[allow(clippy::needless_lifetimes)] // mockall's mock needs the lifetime named
    fn day<'z>(&self, zone: Option<&'z str>, at: Timestamp) -> Result<crate::cost::Day, String> {
        Ok(crate::cost::Day::at_offset(at, self.offset(zone, at)?))
    }

    /// The UTC offset, in seconds, of `zone` (as for [`Clock::day`]) at `at`. This default
    /// knows UTC and fixed offsets only.
    #[allow(clippy::needless_lifetimes)]
    fn offset<'z>(&self, zone: Option<&'z str>, _at: Timestamp) -> Result<i32, String> {
        match zone {
            None | Some("UTC" | "Etc/UTC" | "Z") => Ok(0),
            Some(z) => {
                crate::cost::parse_offset(z).ok_or_else(|| format!("unknown time zone {z:?}"))
            }
        }
    }
}
