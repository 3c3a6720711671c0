//! The service's types: its ports and configuration, what its use cases answer, and the
//! service itself with its constructor.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use time::Duration;

use crate::cost::PriceTable;
use crate::decide::{NotReady, Policy, SkipReason};
use crate::live::*;
use crate::model::*;
use crate::ports::*;
use crate::prompt::Prompt;
use crate::stamp::Timestamp;

/// Errors of the service: a port failed, or the input was invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    #[error("store: {0}")]
    /// The store failed.
    Store(#[from] StoreError),
    #[error("session state: {0}")]
    /// The session state failed.
    Meta(#[from] MetaError),
    #[error("invalid {0}")]
    /// An input broke a rule.
    Invalid(#[from] ValidationError),
}

/// How many of the newest runs a model's price may be learned from.
pub(super) const LEARN_FROM_RUNS: usize = 500;

/// How many of a hook's recent runs its expected output is taken from.
pub(super) const RECENT_RUNS: usize = 20;

/// Settings of the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// The rules of firing.
    pub policy: Policy,
    /// How long a claim lasts without renewal; a dead owner's entries come back after this.
    /// Run leases last as long.
    pub claim_ttl: Duration,
    /// Names this process in claims: unique per process (host, pid and a nonce).
    pub owner: String,
    /// The host this process runs on, as leases name it.
    pub host: String,
    /// This process, so that another process on the host can tell whether it is alive.
    pub process: Option<ProcessRef>,
    /// Prices for the estimate made before each run.
    pub prices: PriceTable,
}

impl Config {
    /// The defaults, for the claim owner `owner` (`host:pid:nonce`).
    pub fn new(owner: impl Into<String>) -> Self {
        Self {
            policy: Policy::default(),
            claim_ttl: Duration::seconds(90),
            owner: owner.into(),
            host: String::new(),
            process: None,
            prices: PriceTable::builtin(),
        }
    }
}

/// The ports the service drives.
#[derive(Clone)]
pub struct Ports {
    /// Hooks, the queue and the run log.
    pub store: Arc<dyn HookStore>,
    /// What is known of sessions.
    pub meta: Arc<dyn SessionMeta>,
    /// What runs follow-ups.
    pub runner: Arc<dyn Runner>,
    /// Where prompt files come from.
    pub prompts: Arc<dyn PromptSource>,
    /// The time.
    pub clock: Arc<dyn Clock>,
}

/// A conversation event coming in.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyEvent {
    /// The conversation.
    pub session: SessionId,
    /// What happened.
    pub event: Event,
    /// What the event says of the conversation (its folder, transcript, origin).
    pub update: SessionUpdate,
    /// The event itself says it came from a subagent (a hook input with `agent_id`).
    pub subagent: bool,
    /// What failed, for a `conversation-failed` event.
    pub failure: Option<crate::failure::FailedTurn>,
}

/// What notify did for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyOutcome {
    /// Queued, due then.
    Queued {
        /// When it is due.
        due_at: Timestamp,
    },
    /// Not queued, for this reason.
    Skipped(SkipReason),
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What became of one hook on one event.
pub struct NotifyReport {
    /// The hook.
    pub hook_id: HookId,
    /// What became of it.
    pub outcome: NotifyOutcome,
}

/// What firing one claimed entry did.
#[derive(Debug, Clone, PartialEq)]
pub enum FireAction {
    /// The hook is gone or disabled: the entry was dropped.
    Dropped,
    /// Not run; this status was recorded.
    Finished(Status),
    /// Not ready; put back, using up a retry.
    Retried {
        /// When it is looked at again.
        due_at: Timestamp,
        /// The retries counted so far.
        retries: u32,
        /// What is not ready.
        why: NotReady,
    },
    /// Put back to wait (the conversation is open, or another run holds the session).
    /// Put back, due then, saying why it waits.
    Waiting {
        /// When it is looked at again.
        due_at: Timestamp,
        /// Why it waits.
        waiting: Waiting,
    },
    /// The entry's own run had been started by a runner that died; it was recorded so.
    Recovered(Status),
    /// Another process fired it first.
    /// Another process ran it first, at that time.
    LostStamp {
        /// When the other process stamped it.
        at: Timestamp,
    },
    /// The follow-up ran.
    Ran(Box<RunRecord>),
    /// The follow-up ran into a usage or capacity limit: it is back in the queue, due when
    /// the limit resets (or after a backoff). The run log has the attempt.
    Limited {
        /// When it is due again.
        due_at: Timestamp,
        /// Why it waits.
        waiting: Waiting,
        /// The run that was put back.
        run: Box<RunRecord>,
    },
    /// The claim was lost before the result could be written; the outcome was recorded
    /// on the hook all the same (for runs) or left to the new owner (for the rest).
    Fenced,
}

#[derive(Debug, Clone, PartialEq)]
/// What became of one claimed entry.
pub struct FireReport {
    /// The entry.
    pub key: EntryKey,
    /// What became of it.
    pub action: FireAction,
    /// Things the operator should hear about: a lost claim or lease, a run of another
    /// hook found interrupted.
    pub warnings: Vec<String>,
}

/// What renewing found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RenewReport {
    /// The claims still held.
    pub held: Vec<EntryKey>,
    /// Warnings naming each claim or lease that was lost.
    pub warnings: Vec<String>,
}

/// What `hooks run` did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunNow {
    /// Whether it was queued or found queued.
    pub queued: RunNowQueue,
    /// `--force` removed a stamp.
    pub unstamped: bool,
    /// When it was queued.
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
/// What `hooks run` did to the queue.
pub enum RunNowQueue {
    /// A new entry, due now.
    Queued,
    /// The pair was queued already; `woken` when it waited and is due now.
    AlreadyQueued {
        /// Whether the waiting entry was made due now.
        woken: bool,
    },
    /// Not queued: this hook followed the conversation up already (and no `force`).
    Skipped(Status),
}

/// What [`Service::decide`] left to do.
pub(super) enum Decided {
    Action(FireAction),
    Recover(Box<RunLease>),
    Fire(Box<FirePlan>),
}

/// What a decision to fire carries to the run.
pub(super) struct FirePlan {
    pub(super) hook: Hook,
    pub(super) prompt: Prompt,
    pub(super) cwd: String,
    /// The estimate, and the model it was made for (or named, without a price).
    pub(super) estimate: Option<f64>,
    pub(super) model: Option<String>,
    /// The values of the prompt's variables.
    pub(super) vars: BTreeMap<&'static str, String>,
    /// Delivered into the conversation a person has open, not resumed.
    pub(super) into_open: Option<crate::live::OpenDelivery>,
    /// The agent whose conversation it is, as its transcript says.
    pub(super) agent: Option<String>,
}

/// The values of a prompt's variables for a follow-up of `hook` on `entry`'s conversation.
pub(crate) fn prompt_vars(
    entry: &PendingEntry,
    hook: &Hook,
    facts: &SessionFacts,
    cwd: &str,
) -> BTreeMap<&'static str, String> {
    let t = facts.transcript.as_ref();
    let mut last = t
        .and_then(|t| t.last_assistant_text.clone())
        .unwrap_or_default();
    if last.len() > crate::prompt::LAST_MESSAGE_CAP {
        let mut cut = crate::prompt::LAST_MESSAGE_CAP;
        while !last.is_char_boundary(cut) {
            cut -= 1;
        }
        last.truncate(cut);
    }
    BTreeMap::from([
        ("session_id", entry.session_id.to_string()),
        ("cwd", cwd.to_owned()),
        (
            "transcript_path",
            t.map(|t| t.path.clone()).unwrap_or_default(),
        ),
        ("hook_id", hook.id.to_string()),
        ("last_message", last),
        // Set for a follow-up of a failed conversation.
        (
            "error",
            entry
                .error
                .map(|k| k.as_str().to_owned())
                .unwrap_or_default(),
        ),
        ("due_at", entry.became_due().to_string()),
        // The run this is: a look that found it not ready was no run.
        ("attempt", (entry.attempts + 1).to_string()),
    ])
}

/// The use cases of hooks-app.
pub struct Service {
    pub(crate) ports: Ports,
    pub(super) config: Config,
    /// The leases of the runs this process has going, by session.
    pub(super) running: Mutex<HashMap<SessionId, RunLease>>,
    pub(super) next_run: AtomicU64,
}

/// Removes a session from the running set when a run ends, however it ends.
pub(super) struct RunningGuard<'a> {
    pub(super) set: &'a Mutex<HashMap<SessionId, RunLease>>,
    pub(super) session: SessionId,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
    }
}

impl Service {
    /// The service over `ports`, with `config`.
    pub fn new(ports: Ports, config: Config) -> Self {
        Self {
            ports,
            config,
            running: Mutex::new(HashMap::new()),
            next_run: AtomicU64::new(1),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Now, by its clock.
    pub fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// The store port, for the use cases written beside this file.
    pub(crate) fn store(&self) -> &dyn HookStore {
        &*self.ports.store
    }

    /// The session-meta port, for the use cases written beside this file.
    pub(crate) fn meta(&self) -> &dyn SessionMeta {
        &*self.ports.meta
    }

    pub(super) fn running(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, RunLease>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
