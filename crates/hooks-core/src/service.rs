//! The application service: the use cases, composed from the ports and the decisions.
//!
//! It holds no state of its own but the leases of the follow-ups this process is running;
//! everything durable lives behind the ports.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use time::Duration;

use crate::cost::{self, Budget, BudgetView, CostView, Estimate, PriceTable};
use crate::decide::{self, EnqueueDecision, FireDecision, FireInput, NotReady, Policy, SkipReason};
use crate::failure::{self, FailureKind};
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
const LEARN_FROM_RUNS: usize = 500;

/// How many of a hook's recent runs its expected output is taken from.
const RECENT_RUNS: usize = 20;

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
enum Decided {
    Action(FireAction),
    Recover(Box<RunLease>),
    Fire(Box<FirePlan>),
}

/// What a decision to fire carries to the run.
struct FirePlan {
    hook: Hook,
    prompt: Prompt,
    cwd: String,
    /// The estimate, and the model it was made for (or named, without a price).
    estimate: Option<f64>,
    model: Option<String>,
    /// The values of the prompt's variables.
    vars: BTreeMap<&'static str, String>,
    /// Delivered into the conversation a person has open, not resumed.
    into_open: Option<crate::live::OpenDelivery>,
    /// The agent whose conversation it is, as its transcript says.
    agent: Option<String>,
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
    config: Config,
    /// The leases of the runs this process has going, by session.
    running: Mutex<HashMap<SessionId, RunLease>>,
    next_run: AtomicU64,
}

/// Removes a session from the running set when a run ends, however it ends.
struct RunningGuard<'a> {
    set: &'a Mutex<HashMap<SessionId, RunLease>>,
    session: SessionId,
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

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, RunLease>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A conversation event: remember what it says about the session, then queue every
    /// matching hook the enqueue decision allows, in one store write.
    pub async fn notify(&self, ev: &NotifyEvent) -> Result<Vec<NotifyReport>, ServiceError> {
        ev.update.validate()?;
        let state = if ev.update == SessionUpdate::default() {
            self.ports.meta.state(&ev.session).await?
        } else {
            self.ports.meta.remember(&ev.session, &ev.update).await?
        };
        let now = self.now();
        // Only a failure event carries a failure, and it always says what failed: one that
        // does not is an `unknown` one.
        let failure = (ev.event == Event::ConversationFailed).then(|| {
            let unknown = crate::failure::FailedTurn {
                kind: FailureKind::Unknown,
                texts: Vec::new(),
                resets_at: None,
                at: None,
            };
            ev.failure
                .as_ref()
                .unwrap_or(&unknown)
                .resolve(now, |zone, at| self.ports.clock.offset(zone, at).ok())
        });
        let request = EnqueueRequest {
            session: ev.session.clone(),
            event: ev.event,
            failure,
            stamps: state.stamps.clone(),
            origin: state.origin.unwrap_or_default(),
            subagent: ev.subagent
                || state
                    .transcript_path
                    .as_deref()
                    .is_some_and(is_subagent_path),
            agent: state.agent.clone(),
            now,
        };
        let decisions = self.ports.store.enqueue_event(&request).await?;
        Ok(decisions
            .into_iter()
            .map(|(hook_id, d)| NotifyReport {
                hook_id,
                outcome: match d {
                    EnqueueDecision::Queue { due_at } => NotifyOutcome::Queued { due_at },
                    EnqueueDecision::Skip(r) => NotifyOutcome::Skipped(r),
                },
            })
            .collect())
    }

    /// Whether a follow-up of hook `follow_up` (the id an event carries in
    /// [`crate::FOLLOW_UP_ENV`]) is running on `session` now: its run lease held, by this
    /// hook, and live. Only then is the event a follow-up's own. The variable alone proves
    /// nothing: a repository's settings `env` exports any variable to every hook, and would
    /// otherwise silence every follow-up of the conversations started there.
    pub async fn runs_follow_up(
        &self,
        session: &SessionId,
        follow_up: &str,
    ) -> Result<bool, ServiceError> {
        let Ok(id) = HookId::parse(follow_up.trim()) else {
            return Ok(false);
        };
        let now = self.now();
        Ok(self
            .ports
            .meta
            .facts(session)
            .await?
            .lease
            .is_some_and(|l| l.lease.hook_id == id && l.is_live(now)))
    }

    /// Whether a turn that said DONE in a follow-up of hook `follow_up` (the id the runner
    /// named in [`crate::FOLLOW_UP_ENV`]) finished the conversation's own task. Only the
    /// continuation of a failed turn (a hook on `conversation-failed`, as
    /// continue-after-limit) carries the person's task on: its DONE is the task's, and
    /// queues what a DONE queues. Any other follow-up's DONE is its own, and queues nothing;
    /// so does one of a hook that is gone or an id that is none.
    pub async fn done_is_the_task_s(&self, follow_up: &str) -> Result<bool, ServiceError> {
        let Ok(id) = HookId::parse(follow_up.trim()) else {
            return Ok(false);
        };
        Ok(self
            .ports
            .store
            .get_hook(&id)
            .await?
            .is_some_and(|h| h.event == Event::ConversationFailed))
    }

    /// Where the follow-ups of `hooks` just queued for `session` will come, were they due
    /// now ([`decide::arrival`]), in the order of `hooks`: what a person is told when they
    /// are queued. A new entry has had no delivery go untaken and continues no failure.
    /// Only when the conversation is open are its facts, the hooks and their prompts read
    /// (closed, each comes when due).
    pub async fn arrivals(
        &self,
        session: &SessionId,
        hooks: &[HookId],
    ) -> Result<Vec<decide::Arrival>, ServiceError> {
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        // Who has it open is looked at first: it needs no store read.
        if self.ports.meta.open(session).await?.is_none() {
            return Ok(vec![decide::Arrival::AtDue; hooks.len()]);
        }
        let facts = self.ports.meta.facts(session).await?;
        let Some(open) = facts.open.as_ref() else {
            return Ok(vec![decide::Arrival::AtDue; hooks.len()]);
        };
        let mut out = Vec::with_capacity(hooks.len());
        for id in hooks {
            let may = match self.ports.store.get_hook(id).await? {
                Some(hook) => {
                    let prompt = self
                        .ports
                        .prompts
                        .load(&hook.prompt_file, facts.cwd())
                        .await;
                    decide::may_deliver(&decide::DeliveryCheck {
                        policy: self.config.policy,
                        hook: &hook,
                        runner_delivers: self.ports.runner.delivers_into_open(),
                        transcript_found: facts.transcript.is_some(),
                        options: prompt.as_ref().ok().map(|p| &p.options),
                        not_taken: 0,
                    })
                }
                None => false,
            };
            out.push(decide::arrival(may, Some(open)));
        }
        Ok(out)
    }

    /// [`Self::notify`] for a caller that names the folder itself (the API's own event, the
    /// `notify` command): a folder other than the one the conversation is known by is
    /// refused, naming `cwd`, and nothing changes. A conversation's folder never moves: a
    /// follow-up runs where the conversation was started, whatever an event says later.
    pub async fn notify_checked(
        &self,
        ev: &NotifyEvent,
    ) -> Result<Vec<NotifyReport>, ServiceError> {
        if let Some(cwd) = &ev.update.cwd {
            let facts = self.ports.meta.facts(&ev.session).await?;
            if let Some(known) = facts.cwd()
                && known != cwd
            {
                return Err(ServiceError::Invalid(ValidationError::new(
                    "cwd",
                    format!(
                        "a conversation's folder does not change: {} started in {known}",
                        ev.session
                    ),
                )));
            }
        }
        self.notify(ev).await
    }

    /// The agent of each of `sessions` the app has remembered: see [`agents_of`].
    pub async fn agents_of(
        &self,
        sessions: &[SessionId],
    ) -> Result<BTreeMap<SessionId, String>, ServiceError> {
        agents_of(self.ports.meta.as_ref(), sessions).await
    }

    /// The conversation was closed (a `SessionEnd`, or its process seen gone): what waited
    /// for that becomes due once the quiet period has passed. Returns how many woke.
    pub async fn closed(&self, session: &SessionId) -> Result<usize, ServiceError> {
        let due = self.now() + self.config.policy.quiet_period;
        Ok(self.ports.store.wake(session, due, true).await?)
    }

    /// Wakes the entries waiting for an open conversation that is no longer open, as seen
    /// now. Reads Claude Code's session files only; writes only for what it wakes.
    pub async fn wake_closed(&self, pending: &[PendingEntry]) -> Result<usize, ServiceError> {
        let mut sessions: Vec<&SessionId> = pending
            .iter()
            .filter(|p| p.waiting.as_ref().is_some_and(Waiting::waits_for_close))
            .map(|p| &p.session_id)
            .collect();
        sessions.sort();
        sessions.dedup();
        let mut woke = 0;
        for s in sessions {
            if self.ports.meta.open(s).await?.is_none() {
                woke += self.closed(s).await?;
            }
        }
        Ok(woke)
    }

    /// Claims up to `limit` due entries for this process, in one store write.
    pub async fn claim(&self, limit: usize) -> Result<Vec<PendingEntry>, ServiceError> {
        let now = self.now();
        Ok(self
            .ports
            .store
            .claim_due(now, &self.config.owner, self.config.claim_ttl, limit)
            .await?)
    }

    /// Extends this process's claims on `keys` and the leases of its running follow-ups.
    pub async fn renew(&self, keys: &[EntryKey]) -> Result<RenewReport, ServiceError> {
        let until = self.now() + self.config.claim_ttl;
        let held = self
            .ports
            .store
            .renew(keys, &self.config.owner, until)
            .await?;
        let mut warnings: Vec<String> = keys
            .iter()
            .filter(|k| !held.contains(k))
            .map(|k| format!("lost the claim on {k}: it expired and may be taken over"))
            .collect();
        let leases: Vec<(SessionId, RunLease)> = self
            .running()
            .iter()
            .map(|(s, l)| (s.clone(), l.clone()))
            .collect();
        for (session, mut lease) in leases {
            lease.expires_at = until;
            if self.ports.meta.update_lease(&session, &lease).await? {
                if let Some(l) = self.running().get_mut(&session) {
                    l.expires_at = until;
                }
            } else {
                warnings.push(format!(
                    "lost the run lease on session {session} (run {}, hook {})",
                    lease.run_id, lease.hook_id
                ));
            }
        }
        Ok(RenewReport { held, warnings })
    }

    /// Gives back claimed entries that will not be started (shutdown).
    pub async fn release(&self, keys: &[EntryKey]) -> Result<(), ServiceError> {
        Ok(self.ports.store.release(keys, &self.config.owner).await?)
    }

    /// Decides on a claimed entry with fresh facts and carries the decision out: recover,
    /// wait, drop, record, put back, or stamp-and-lease then run then record.
    pub async fn fire(&self, entry: &PendingEntry) -> Result<FireReport, ServiceError> {
        let key = entry.key();
        let mut warnings = Vec::new();
        // A dead lease of another hook is recovered, then the entry decided again; a
        // second one would be a new run that died in between, so this ends.
        for _ in 0..3 {
            let action = match self.decide(entry, &mut warnings).await? {
                Decided::Action(a) => a,
                Decided::Recover(lease) => {
                    let status = self.recover(&entry.session_id, &lease).await?;
                    if lease.hook_id != entry.hook_id {
                        warnings.push(format!(
                            "run {} of {} on session {} had no result: recorded {status}",
                            lease.run_id, lease.hook_id, entry.session_id
                        ));
                        continue;
                    }
                    let record = HookRecord {
                        status: status.clone(),
                        fired_at: Some(lease.started_at),
                    };
                    match self.finish(&key, Some(record)).await? {
                        FireAction::Dropped => FireAction::Recovered(status),
                        other => other,
                    }
                }
                Decided::Fire(f) => self.run(entry, *f, &mut warnings).await?,
            };
            if action == FireAction::Fenced {
                warnings.push(format!(
                    "lost the claim on {key} before writing what was decided"
                ));
            }
            return Ok(FireReport {
                key,
                action,
                warnings,
            });
        }
        Ok(FireReport {
            key,
            action: FireAction::Fenced,
            warnings,
        })
    }

    /// Reads fresh facts, takes the fire decision and carries out all of it but a run or
    /// a recovery.
    async fn decide(
        &self,
        entry: &PendingEntry,
        warnings: &mut Vec<String>,
    ) -> Result<Decided, ServiceError> {
        let key = entry.key();
        let store = &self.ports.store;
        let owner = self.config.owner.as_str();
        let hook = store.get_hook(&entry.hook_id).await?;
        let facts = self.ports.meta.facts(&entry.session_id).await?;
        let prompt = match hook.as_ref().filter(|h| h.enabled) {
            Some(h) => Some(self.ports.prompts.load(&h.prompt_file, facts.cwd()).await),
            None => None,
        };
        let prompt_error = match &prompt {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let cost = match (&hook, &prompt) {
            (Some(h), Some(Ok(p))) => Some(self.cost_view(h, p, &facts).await),
            _ => None,
        };
        let run_in_progress = self.is_running(&entry.session_id);
        let now = self.now();
        let budget = match store.budget().await? {
            Some(b) if b.daily.usd().is_some() && cost.is_some() => {
                Some(self.budget_view(&b, now).await?)
            }
            _ => None,
        };
        let paused = store.pause().await?;
        let can_deliver = hook.as_ref().is_some_and(|h| {
            decide::may_deliver(&decide::DeliveryCheck {
                policy: self.config.policy,
                hook: h,
                runner_delivers: self.ports.runner.delivers_into_open(),
                transcript_found: facts.transcript.is_some(),
                options: match &prompt {
                    Some(Ok(p)) => Some(&p.options),
                    _ => None,
                },
                not_taken: entry.not_taken,
            })
        });
        let decision = decide::decide_fire(FireInput {
            hook: hook.as_ref(),
            entry,
            facts: &facts,
            run_in_progress,
            prompt_error: prompt_error.as_ref(),
            cost: cost.as_ref(),
            budget: budget.as_ref(),
            paused: paused.as_ref(),
            can_deliver,
            now,
            policy: self.config.policy,
        });
        let action = match decision {
            FireDecision::Recover(lease) => return Ok(Decided::Recover(lease)),
            FireDecision::Drop => {
                let action = self.finish(&key, None).await?;
                // A hook deleted or disabled while its entry waited ends the entry: the
                // run log says so (a duplicate of a recorded run says nothing).
                let gone = match &hook {
                    None => Some(format!("the hook {} was deleted", entry.hook_id)),
                    Some(h) if !h.enabled => Some(format!("the hook {} is disabled", h.id)),
                    Some(_) => None,
                };
                if let (FireAction::Dropped, Some(why)) = (&action, gone) {
                    self.log_ended(entry, &Status::skipped(why), warnings).await;
                }
                action
            }
            FireDecision::Finish(status) => self.finish_with(entry, status, warnings).await?,
            FireDecision::Retry {
                due_at,
                retries,
                why,
            } => match store
                .requeue(
                    &key,
                    owner,
                    &Requeue {
                        retries,
                        // What `pending` and the page show of it, not only the daemon's log.
                        ..Requeue::of(
                            entry,
                            due_at,
                            Some(Waiting::new(
                                WaitKind::NotReady,
                                format!(
                                    "{why}: tries again at {} (retry {retries} of {})",
                                    crate::stamp::format(due_at),
                                    self.config.policy.max_retries
                                ),
                                now,
                            )),
                        )
                    },
                )
                .await
            {
                Ok(()) => FireAction::Retried {
                    due_at,
                    retries,
                    why,
                },
                Err(StoreError::Fenced(_)) => FireAction::Fenced,
                Err(e) => return Err(e.into()),
            },
            FireDecision::Wait { due_at, waiting } => self.wait(entry, due_at, waiting).await?,
            FireDecision::Fire => match (hook, prompt, facts.cwd()) {
                (Some(hook), Some(Ok(mut prompt)), Some(cwd)) => {
                    // A new failure after an earlier one was followed up: the earlier
                    // stamp gives way (decide_fire let it through for that).
                    if entry.error.is_some()
                        && let Some(at) = facts.state.stamps.get(&hook.id)
                        && entry.queued_at.is_some_and(|q| q > *at)
                    {
                        self.ports.meta.unstamp(&entry.session_id, &hook.id).await?;
                    }
                    // Claude itself stops a run that grows past the cap.
                    prompt.options.max_budget = hook.max_cost;
                    let (estimate, model) = match cost {
                        Some(CostView::Estimated(e)) => (Some(e.usd), Some(e.model)),
                        Some(CostView::NoPrice { model }) => (None, Some(model)),
                        _ => (None, None),
                    };
                    let vars = prompt_vars(entry, &hook, &facts, cwd);
                    // decide_fire fires on an open conversation only to deliver into it.
                    let into_open = match (&facts.open, &facts.transcript) {
                        (Some(o), Some(t)) if can_deliver => {
                            o.inbox.as_ref().map(|inbox| crate::live::OpenDelivery {
                                inbox: inbox.clone(),
                                pid: o.pid,
                                transcript: t.path.clone(),
                            })
                        }
                        _ => None,
                    };
                    return Ok(Decided::Fire(Box::new(FirePlan {
                        hook,
                        prompt,
                        cwd: cwd.to_owned(),
                        estimate,
                        model,
                        vars,
                        into_open,
                        agent: facts.transcript.as_ref().and_then(|t| t.agent.clone()),
                    })));
                }
                // decide_fire fires only with all three; should that ever break, record it
                // rather than stop the daemon.
                _ => {
                    self.finish_with(
                        entry,
                        Status::error("internal: fired without a hook, a prompt and a cwd"),
                        warnings,
                    )
                    .await?
                }
            },
        };
        Ok(Decided::Action(action))
    }

    async fn wait(
        &self,
        entry: &PendingEntry,
        due_at: Timestamp,
        waiting: Waiting,
    ) -> Result<FireAction, ServiceError> {
        Ok(
            if self
                .requeue_waiting(entry, &Requeue::of(entry, due_at, Some(waiting.clone())))
                .await?
            {
                FireAction::Waiting { due_at, waiting }
            } else {
                FireAction::Fenced
            },
        )
    }

    /// Puts a claimed entry back in the queue as `to` says. `false` when the claim was lost
    /// (or the entry is gone): nothing changed.
    async fn requeue_waiting(
        &self,
        entry: &PendingEntry,
        to: &Requeue,
    ) -> Result<bool, ServiceError> {
        match self
            .ports
            .store
            .requeue(&entry.key(), &self.config.owner, to)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::Fenced(_)) | Err(StoreError::EntryNotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends an entry that started no process with `status`: on its hook and, once the
    /// entry is ours to end, in the run log.
    async fn finish_with(
        &self,
        entry: &PendingEntry,
        status: Status,
        warnings: &mut Vec<String>,
    ) -> Result<FireAction, ServiceError> {
        let record = HookRecord {
            status: status.clone(),
            fired_at: None,
        };
        Ok(match self.finish(&entry.key(), Some(record)).await? {
            FireAction::Dropped => {
                self.log_ended(entry, &status, warnings).await;
                FireAction::Finished(status)
            }
            other => other,
        })
    }

    /// Drops the queued entries `keys` that nobody is firing, each ending as `skipped: why`
    /// on its hook and in the run log; returns what it dropped. An entry being fired is
    /// left to its claimer (run it or not, it ends once).
    pub async fn drop_pending(
        &self,
        keys: &[EntryKey],
        why: &str,
    ) -> Result<(Vec<PendingEntry>, Vec<String>), ServiceError> {
        let gone = self.ports.store.drop_unclaimed(keys, self.now()).await?;
        let status = Status::skipped(why);
        let mut warnings = Vec::new();
        for e in &gone {
            let record = HookRecord {
                status: status.clone(),
                fired_at: None,
            };
            self.ports
                .store
                .record(&e.hook_id, &e.session_id, record)
                .await?;
            self.log_ended(e, &status, &mut warnings).await;
        }
        Ok((gone, warnings))
    }

    /// One run-log line for an entry that ended without starting a process: no process,
    /// no cost, started and finished now.
    async fn log_ended(&self, entry: &PendingEntry, status: &Status, warnings: &mut Vec<String>) {
        let now = self.now();
        let record = RunRecord {
            run_id: Some(self.next_run_id()),
            hook_id: entry.hook_id.clone(),
            session_id: entry.session_id.clone(),
            owner: Some(self.config.owner.clone()),
            process: None,
            started_at: now,
            finished_at: Some(now),
            outcome: RunOutcome {
                status: Some(status.clone()),
                ..RunOutcome::default()
            },
            estimated_cost_usd: None,
            model: None,
            delivered: false,
        };
        if let Err(e) = self.ports.store.append_run(&record).await {
            warnings.push(format!(
                "could not log that {} on session {} ended {status}: {e}",
                entry.hook_id, entry.session_id
            ));
        }
    }

    async fn finish(
        &self,
        key: &EntryKey,
        record: Option<HookRecord>,
    ) -> Result<FireAction, ServiceError> {
        match self
            .ports
            .store
            .complete(key, &self.config.owner, record)
            .await
        {
            Ok(()) => Ok(FireAction::Dropped),
            Err(StoreError::Fenced(_)) | Err(StoreError::EntryNotFound(_)) => {
                Ok(FireAction::Fenced)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Accounts for a run whose lease was left behind by a runner that is gone: ends what
    /// it left running on this host, logs it as interrupted unless its result made it to
    /// the run log, records that on its hook unless the caller does, and clears the lease.
    /// Returns the run's status.
    async fn recover(&self, session: &SessionId, lease: &RunLease) -> Result<Status, ServiceError> {
        if lease.host == self.config.host
            && let Some(child) = &lease.child
        {
            self.ports.runner.end_leftovers(child).await;
        }
        let runs = self
            .ports
            .store
            .runs(&RunFilter {
                hook_id: Some(lease.hook_id.clone()),
                session_id: Some(session.clone()),
                ..RunFilter::default()
            })
            .await?;
        let logged = runs.iter().find(|r| {
            r.run_id.as_deref() == Some(lease.run_id.as_str()) && r.finished_at.is_some()
        });
        let status = match logged {
            Some(r) => r.outcome.status(),
            None => {
                let status = decide::interrupted();
                let record = self.ended_without_result(session, lease, status.clone());
                self.ports.store.append_run(&record).await?;
                status
            }
        };
        self.ports.meta.end_lease(session, &lease.run_id).await?;
        // What waited for that run may go once the transcript is quiet again, as after a
        // run that ended well.
        let due = self.now() + self.config.policy.quiet_period;
        self.ports.store.wake(session, due, false).await?;
        Ok(status)
    }

    /// Finds the run leases left behind on this host by runners that died and ends what
    /// they left running (`serve` and `tick` do this as they start). A run whose entry is
    /// still queued is left for that entry's fire to record (it completes the entry with
    /// the run's status); the others are recorded here. Returns the runs found, with the
    /// status recorded (`None`: left to the entry).
    pub async fn recover_dead_runs(
        &self,
    ) -> Result<Vec<(SessionId, RunLease, Option<Status>)>, ServiceError> {
        let now = self.now();
        let mut out = Vec::new();
        let dead: Vec<(SessionId, LeaseInfo)> = self
            .ports
            .meta
            .leases()
            .await?
            .into_iter()
            .filter(|(_, l)| !l.is_live(now) && l.lease.host == self.config.host)
            .collect();
        if dead.is_empty() {
            return Ok(out);
        }
        let pending = self.ports.store.snapshot().await?.pending;
        for (session, info) in dead {
            let lease = info.lease;
            let queued = pending
                .iter()
                .any(|p| p.session_id == session && p.hook_id == lease.hook_id);
            if queued {
                if let Some(child) = &lease.child {
                    self.ports.runner.end_leftovers(child).await;
                }
                out.push((session, lease, None));
                continue;
            }
            let status = self.recover(&session, &lease).await?;
            self.ports
                .store
                .record(
                    &lease.hook_id,
                    &session,
                    HookRecord {
                        status: status.clone(),
                        fired_at: Some(lease.started_at),
                    },
                )
                .await?;
            out.push((session, lease, Some(status)));
        }
        Ok(out)
    }

    /// The final run-log record of the run `lease` stands for, ended now with `status` and
    /// no result of its own.
    fn ended_without_result(
        &self,
        session: &SessionId,
        lease: &RunLease,
        status: Status,
    ) -> RunRecord {
        RunRecord {
            run_id: Some(lease.run_id.clone()),
            hook_id: lease.hook_id.clone(),
            session_id: session.clone(),
            owner: Some(lease.owner.clone()),
            process: lease.child,
            started_at: lease.started_at,
            finished_at: Some(self.now()),
            outcome: RunOutcome {
                status: Some(status),
                ..RunOutcome::default()
            },
            estimated_cost_usd: None,
            model: None,
            delivered: false,
        }
    }

    /// A run id no other line of this process's run log has: `<owner>#<n>`.
    fn next_run_id(&self) -> String {
        let n = self.next_run.fetch_add(1, Ordering::Relaxed);
        format!("{}#{n}", self.config.owner)
    }

    fn new_lease(&self, hook: &HookId, started_at: Timestamp) -> RunLease {
        RunLease {
            run_id: self.next_run_id(),
            hook_id: hook.clone(),
            owner: self.config.owner.clone(),
            host: self.config.host.clone(),
            owner_process: self.config.process,
            child: None,
            started_at,
            expires_at: started_at + self.config.claim_ttl,
        }
    }

    async fn run(
        &self,
        entry: &PendingEntry,
        plan: FirePlan,
        warnings: &mut Vec<String>,
    ) -> Result<FireAction, ServiceError> {
        let FirePlan {
            hook,
            mut prompt,
            cwd,
            estimate: estimated_cost_usd,
            model,
            vars,
            into_open,
            agent,
        } = plan;
        let delivered = into_open.is_some();
        prompt.body =
            crate::prompt::render(&prompt.body, |v| vars.get(v).cloned().unwrap_or_default());
        let key = entry.key();
        let session = &entry.session_id;
        let started_at = self.now();
        let mut lease = self.new_lease(&hook.id, started_at);
        match self
            .ports
            .meta
            .begin_run(session, &lease, started_at)
            .await?
        {
            BeginRun::Won => {}
            BeginRun::Stamped { at } => {
                let status = Status::skipped(SkipReason::AlreadyRan { at }.to_string());
                self.finish_with(entry, status, warnings).await?;
                return Ok(FireAction::LostStamp { at });
            }
            BeginRun::Busy(other) => {
                let waiting = Waiting::new(
                    WaitKind::Running,
                    format!(
                        "a follow-up is running on this session ({}, run by {})",
                        other.lease.hook_id, other.lease.owner
                    ),
                    started_at,
                );
                let due = started_at + self.config.policy.retry_delay;
                return self.wait(entry, due, waiting).await;
            }
        }
        let _guard = {
            self.running().insert(session.clone(), lease.clone());
            RunningGuard {
                set: &self.running,
                session: session.clone(),
            }
        };
        let mut record = RunRecord {
            run_id: Some(lease.run_id.clone()),
            hook_id: hook.id.clone(),
            session_id: session.clone(),
            owner: Some(self.config.owner.clone()),
            process: None,
            started_at,
            finished_at: None,
            outcome: RunOutcome::default(),
            estimated_cost_usd,
            model,
            delivered,
        };
        // Why the agent's program could not be started, when it could not: the entry goes
        // back to the queue (the program may be installed, or PATH fixed, meanwhile).
        let mut not_started = None;
        // Logged before the child starts: a run that may cost money is never invisible.
        let outcome = match self.ports.store.append_run(&record).await {
            Err(e) => RunOutcome {
                status: Some(Status::error(format!(
                    "not started: the run log could not be written: {e}"
                ))),
                ..RunOutcome::default()
            },
            Ok(()) => {
                let request = RunRequest {
                    hook_id: hook.id.clone(),
                    session_id: session.clone(),
                    cwd,
                    prompt,
                    into_open,
                    agent,
                };
                match self.ports.runner.start(&request).await {
                    Err(e) => {
                        if matches!(e, crate::ports::RunnerError::Spawn { .. }) {
                            not_started = Some(e.to_string());
                        }
                        RunOutcome {
                            status: Some(Status::error(e.to_string())),
                            ..RunOutcome::default()
                        }
                    }
                    Ok(handle) => {
                        if let Some(p) = handle.process() {
                            lease.child = Some(p);
                            record.process = Some(p);
                            if let Some(l) = self.running().get_mut(session) {
                                l.child = Some(p);
                            }
                            // Best effort: what it buys is the clean-up of this run's
                            // processes should this process die; the run goes on without.
                            match self.ports.meta.update_lease(session, &lease).await {
                                Ok(true) => {}
                                Ok(false) => warnings.push(format!(
                                    "lost the run lease on session {session} as the run started"
                                )),
                                Err(e) => warnings.push(format!(
                                    "could not note the run's process in its lease: {e}"
                                )),
                            }
                            if let Err(e) = self.ports.store.append_run(&record).await {
                                warnings.push(format!("could not log the run's process: {e}"));
                            }
                        }
                        handle.wait().await
                    }
                }
            }
        };
        record.finished_at = Some(self.now());
        record.outcome = outcome.with_sane_cost().with_kept_reply();
        if delivered && let Some(Status::Requeued(why)) = &record.outcome.status {
            // Its inbox could not be reached: nothing was handed over, so no run. It
            // waits for the close and is resumed then, never delivered again. (A line the
            // inbox took is the person's to run or decline: its outcome is final.)
            let why = why.clone();
            self.ports.store.append_run(&record).await?;
            self.ports.meta.unstamp(session, &hook.id).await?;
            self.ports.meta.end_lease(session, &lease.run_id).await?;
            let now = self.now();
            let waiting = Waiting::new(
                WaitKind::NotTaken,
                format!("{} ({why}); resumed once it is closed", decide::NOT_TAKEN),
                now,
            );
            let due_at = now + self.config.policy.open_wait;
            let to = Requeue {
                not_taken: entry.not_taken + 1,
                ..Requeue::of(entry, due_at, Some(waiting.clone()))
            };
            return Ok(if self.requeue_waiting(entry, &to).await? {
                FireAction::Waiting { due_at, waiting }
            } else {
                FireAction::Fenced
            });
        }
        if let Some(why) = not_started {
            let attempt = entry.attempts + 1;
            if attempt < failure::MAX_ATTEMPTS {
                return self
                    .not_started(entry, &hook, record, &lease, &why, attempt)
                    .await;
            }
            record.outcome.status = Some(Status::skipped(format!(
                "{why} (still, after {attempt} attempts)"
            )));
        }
        // A run whose agent reports tokens but no cost (a delivered turn, an agent that
        // does not price its turns) is priced from its usage at the model's price.
        if record.outcome.cost_usd.is_none()
            && let (Some(u), Some(m)) = (&record.outcome.usage, &record.model)
            && let Some((_, price)) = self.config.prices.lookup(m)
        {
            record.outcome.cost_usd = Some(price.cost(u));
        }
        if let Some(kind) = record
            .outcome
            .api_error_status
            .and_then(FailureKind::from_api_status)
        {
            // Runs only: the looks that found it not ready have their own cap.
            let attempt = entry.attempts + 1;
            if attempt < failure::MAX_ATTEMPTS {
                if let Some(action) = self.limited(entry, &hook, &record, kind, attempt).await? {
                    self.ports.meta.end_lease(session, &lease.run_id).await?;
                    let due = self.now() + self.config.policy.quiet_period;
                    self.ports.store.wake(session, due, false).await?;
                    return Ok(action);
                }
            } else {
                let was = record.outcome.status();
                record.outcome.status = Some(Status::skipped(format!(
                    "still failing after {attempt} attempts ({kind}): {was}"
                )));
            }
        }
        // The run log first: it is append-only and the one place a run's cost is kept.
        self.ports.store.append_run(&record).await?;
        let hook_record = HookRecord {
            status: record.outcome.status(),
            fired_at: Some(started_at),
        };
        match self
            .ports
            .store
            .complete(&key, &self.config.owner, Some(hook_record.clone()))
            .await
        {
            Ok(()) => {}
            Err(StoreError::Fenced(_)) | Err(StoreError::EntryNotFound(_)) => {
                // The claim lapsed during the run; the stamp and the lease kept anyone else
                // from running it, so the outcome is still ours to record.
                warnings.push(format!(
                    "lost the claim on {key} during the run; recorded its result all the same"
                ));
                self.ports
                    .store
                    .record(&hook.id, session, hook_record)
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
        self.ports.meta.end_lease(session, &lease.run_id).await?;
        // What waited for this run to end may go once the transcript is quiet again.
        let due = self.now() + self.config.policy.quiet_period;
        self.ports.store.wake(session, due, false).await?;
        Ok(FireAction::Ran(Box::new(record)))
    }

    /// A run whose agent's program could not be started (`why`) goes back to the queue
    /// for attempt `attempt + 1`, after a wait that doubles from a minute (at most half an
    /// hour), its stamp taken off; the run log keeps the attempt. The program may be
    /// installed, or the daemon's PATH fixed, meanwhile: a follow-up is not spent on it.
    async fn not_started(
        &self,
        entry: &PendingEntry,
        hook: &Hook,
        mut record: RunRecord,
        lease: &RunLease,
        why: &str,
        attempt: u32,
    ) -> Result<FireAction, ServiceError> {
        let now = self.now();
        let wait = (time::Duration::minutes(1) * (1i32 << attempt.saturating_sub(1).min(5)))
            .min(time::Duration::minutes(30));
        let due_at = decide::ceil_to_second(now + wait);
        let next = attempt + 1;
        let max = failure::MAX_ATTEMPTS;
        let when = crate::stamp::format(due_at);
        record.outcome.status = Some(Status::Requeued(format!(
            "{why}; back in the queue, due {when} (attempt {next} of {max})"
        )));
        self.ports.store.append_run(&record).await?;
        self.ports.meta.unstamp(&entry.session_id, &hook.id).await?;
        self.ports
            .meta
            .end_lease(&entry.session_id, &lease.run_id)
            .await?;
        let waiting = Waiting::new(
            WaitKind::NotStarted,
            format!(
                "the agent could not be started ({why}); tried again at {when} (attempt {next} of {max})"
            ),
            now,
        );
        let to = Requeue {
            attempts: attempt,
            ..Requeue::of(entry, due_at, Some(waiting.clone()))
        };
        Ok(if self.requeue_waiting(entry, &to).await? {
            FireAction::Waiting { due_at, waiting }
        } else {
            FireAction::Fenced
        })
    }

    /// A run that ended on a limit (`kind`) goes back to the queue, due when the limit
    /// resets (or after the backoff), its stamp taken off so the next attempt may run; the
    /// run log keeps the attempt. `None`: the claim was lost, and the run is recorded as
    /// any other.
    async fn limited(
        &self,
        entry: &PendingEntry,
        hook: &Hook,
        record: &RunRecord,
        kind: FailureKind,
        attempt: u32,
    ) -> Result<Option<FireAction>, ServiceError> {
        // Where the run's own transcript records the reset as an instant (Codex's rollout
        // does; its message says only `try again at 9:06 PM`), that goes first.
        let resets_at = match self.ports.meta.facts(&entry.session_id).await {
            Ok(f) => f
                .transcript
                .filter(|t| t.ends_in_error)
                .and_then(|t| t.failed_resets_at),
            Err(_) => None,
        };
        let now = self.now();
        let turn = failure::FailedTurn {
            at: None,
            kind,
            texts: record.outcome.result_text.iter().cloned().collect(),
            resets_at,
        };
        let found = turn.resolve(now, |zone, at| self.ports.clock.offset(zone, at).ok());
        let due_at = decide::ceil_to_second(failure::due_at(
            &found,
            hook.delay.seconds(),
            attempt + 1,
            now,
        ));
        let waiting = Waiting::new(
            WaitKind::Limit,
            failure::wait_reason(kind, due_at, attempt + 1),
            now,
        );
        // Not a failure: the attempt says what became of it (what the CLI said is its
        // reply).
        let mut record = record.clone();
        record.outcome.status = Some(Status::Requeued(failure::requeued_text(
            kind,
            due_at,
            attempt + 1,
        )));
        let record = &record;
        self.ports.store.append_run(record).await?;
        self.ports.meta.unstamp(&entry.session_id, &hook.id).await?;
        let to = Requeue {
            attempts: attempt,
            ..Requeue::of(entry, due_at, Some(waiting.clone()))
        };
        let requeued = self.requeue_waiting(entry, &to).await?;
        Ok(requeued.then(|| FireAction::Limited {
            due_at,
            waiting,
            run: Box::new(record.clone()),
        }))
    }

    /// The store's daily budget as it stands at `now`: the day in its zone (UTC should the
    /// zone have become unknown since it was set) and what the runs started that day cost
    /// (those still going at their estimate).
    pub async fn budget_view(
        &self,
        b: &Budget,
        now: Timestamp,
    ) -> Result<BudgetView, ServiceError> {
        let clock = &self.ports.clock;
        let today = clock
            .day(b.time_zone.as_deref(), now)
            .or_else(|_| clock.day(Some("UTC"), now))
            .map_err(|e| ServiceError::Store(StoreError::Io(e)))?;
        let spent_today = self
            .ports
            .store
            // Today, in any zone, began less than two days ago.
            .runs(&RunFilter {
                since: Some(now - time::Duration::days(2)),
                ..RunFilter::default()
            })
            .await?
            .iter()
            .filter(|r| today.contains(r.started_at))
            // A run still going counts at its estimate until it says what it cost.
            .filter_map(|r| match r.finished_at {
                Some(_) => r.outcome.cost_usd,
                None => r.estimated_cost_usd,
            })
            // From +0.0: an empty sum of f64 is -0.0.
            .fold(0.0, |a, c| a + c);
        Ok(BudgetView {
            daily_usd: b.daily.usd().unwrap_or(0.0),
            spent_today,
            today,
            zone: b.time_zone.clone().unwrap_or_else(|| "local".to_owned()),
            when_reached: b.when_reached,
        })
    }

    /// The store's daily budget and how it stands now, if one is set.
    pub async fn budget(&self) -> Result<Option<(Budget, BudgetView)>, ServiceError> {
        match self.ports.store.budget().await? {
            Some(b) => {
                let view = self.budget_view(&b, self.now()).await?;
                Ok(Some((b, view)))
            }
            None => Ok(None),
        }
    }

    /// Sets the daily budget (`None`: removes it), after checking that its zone is one
    /// the clock knows. What waited for the old budget is woken to be decided again under
    /// the new one; returns how many entries that was.
    pub async fn set_budget(&self, budget: Option<Budget>) -> Result<usize, ServiceError> {
        if let Some(b) = &budget
            && let Err(e) = self.ports.clock.day(b.time_zone.as_deref(), self.now())
        {
            return Err(ServiceError::Invalid(ValidationError::new("timeZone", e)));
        }
        self.ports.store.set_budget(budget).await?;
        self.wake_waiting(WaitKind::Budget).await
    }

    /// Queues `hook` for `session` due now (`hooks run`), through every usual check when
    /// it fires; `force` first removes the once-per-(hook, session) stamp, and nothing
    /// else. Returns what happened to the entry and whether a stamp was removed. Without
    /// `force`, a hook that followed the conversation up already is refused, changing
    /// nothing ([`RunNowQueue::Skipped`]).
    pub async fn run_now(
        &self,
        hook: &HookId,
        session: &SessionId,
        force: bool,
    ) -> Result<RunNow, ServiceError> {
        let h = self.get_hook(hook).await?;
        if !h.enabled {
            return Err(ServiceError::Invalid(ValidationError::new(
                "id",
                format!("{hook} is disabled: enable it first (hooks enable {hook})"),
            )));
        }
        let now = self.now();
        let entry = PendingEntry {
            hook_id: hook.clone(),
            session_id: session.clone(),
            due_at: DueAt::At(now),
            queued_at: Some(now),
            retries: 0,
            attempts: 0,
            not_taken: 0,
            claim: None,
            waiting: None,
            error: None,
        };
        let unstamped = if force {
            self.ports.meta.unstamp(session, hook).await?
        } else {
            // Followed up already: said at once to whoever asked, and nothing changes (a
            // row per refused ask would bury the one run in "already ran" lines).
            if let Some(at) = self.ports.meta.state(session).await?.stamps.get(hook) {
                let status = Status::skipped(SkipReason::AlreadyRan { at: *at }.to_string());
                return Ok(RunNow {
                    queued: RunNowQueue::Skipped(status),
                    unstamped: false,
                    at: now,
                });
            }
            false
        };
        let queued = match self.ports.store.enqueue(vec![entry]).await?.first() {
            Some(EnqueueResult::Queued) => RunNowQueue::Queued,
            Some(EnqueueResult::HookDeleted) => {
                return Err(StoreError::HookNotFound(hook.clone()).into());
            }
            // Queued already: it is made due now, whatever it waited for.
            _ => RunNowQueue::AlreadyQueued {
                woken: self.ports.store.wake(session, now, false).await? > 0,
            },
        };
        Ok(RunNow {
            queued,
            unstamped,
            at: now,
        })
    }

    /// The session's working directory, as remembered or read from its transcript.
    pub async fn session_cwd(&self, session: &SessionId) -> Result<Option<String>, ServiceError> {
        Ok(self
            .ports
            .meta
            .facts(session)
            .await?
            .cwd()
            .map(str::to_owned))
    }

    /// Whether follow-ups are paused now (a pause whose end has passed is not).
    pub async fn paused(&self) -> Result<Option<Pause>, ServiceError> {
        let now = self.now();
        Ok(self.ports.store.pause().await?.filter(|p| p.holds(now)))
    }

    /// Pauses every follow-up of every process sharing the store, for `span` or until
    /// [`Service::unpause`]. Returns the pause.
    pub async fn pause(
        &self,
        span: Option<time::Duration>,
        by: &str,
    ) -> Result<Pause, ServiceError> {
        if let Some(s) = span
            && (s <= time::Duration::ZERO || s > time::Duration::days(365))
        {
            return Err(ServiceError::Invalid(ValidationError::new(
                "for",
                "must be a length of time from 1 s to 365 days",
            )));
        }
        let now = self.now();
        let pause = Pause {
            since: now,
            until: span.map(|s| now + s),
            by: by.to_owned(),
        };
        self.ports.store.set_pause(Some(pause.clone())).await?;
        // What already waits on an earlier pause takes the new end.
        self.wake_waiting(WaitKind::Paused).await?;
        Ok(pause)
    }

    /// Ends the pause and wakes what waited for it; returns how many entries woke.
    pub async fn unpause(&self) -> Result<usize, ServiceError> {
        self.ports.store.set_pause(None).await?;
        self.wake_waiting(WaitKind::Paused).await
    }

    /// Wakes the sessions of the entries that wait as `kind`.
    async fn wake_waiting(&self, kind: WaitKind) -> Result<usize, ServiceError> {
        let store = &self.ports.store;
        let mut sessions: Vec<SessionId> = store
            .snapshot()
            .await?
            .pending
            .into_iter()
            .filter(|p| p.waiting.as_ref().is_some_and(|w| w.kind == kind))
            .map(|p| p.session_id)
            .collect();
        // A session's entries need not be next to each other in the queue.
        sessions.sort();
        sessions.dedup();
        let mut woken = 0;
        for s in &sessions {
            woken += store.wake(s, self.now(), false).await?;
        }
        Ok(woken)
    }

    /// What a follow-up of `hook` on a conversation with `facts` would cost now, with the
    /// hook's prompt loaded as a run would load it; `Err` says why the prompt could not be.
    pub async fn estimate(&self, hook: &Hook, facts: &SessionFacts) -> Result<CostView, String> {
        let prompt = self
            .ports
            .prompts
            .load(&hook.prompt_file, facts.cwd())
            .await
            .map_err(|e| e.to_string())?;
        Ok(self.cost_view(hook, &prompt, facts).await)
    }

    /// What a follow-up of `hook` with `prompt` on a conversation with `facts` would cost:
    /// the prompt file's model, else the one that wrote the conversation's last reply, else
    /// the one Claude Code's settings choose for it; its
    /// context as cache writes; the output the hook's recent runs wrote (their median).
    pub async fn cost_view(&self, hook: &Hook, prompt: &Prompt, facts: &SessionFacts) -> CostView {
        let transcript = facts.transcript.as_ref();
        let Some(model) = prompt
            .options
            .model
            .clone()
            .or_else(|| transcript.and_then(|t| t.model.clone()))
            .or_else(|| facts.settings_model.clone())
        else {
            return CostView::NoModel;
        };
        let (id, price, priced_as) = match self.config.prices.lookup(&model) {
            Some((id, price)) => (id, price, None),
            None => match self.learned_price(&model).await {
                Some((price, runs)) => (
                    model.clone(),
                    price,
                    Some(format!(
                        "priced from what the agent reported for {runs} of its runs (${}/${} a million)",
                        price.input, price.output
                    )),
                ),
                None => match self.config.prices.lookup_family(&model) {
                    Some((like, price)) => (
                        model.clone(),
                        price,
                        Some(format!("priced as {like}, the dearest of its family")),
                    ),
                    None => return CostView::NoPrice { model },
                },
            },
        };
        let filter = RunFilter {
            hook_id: Some(hook.id.clone()),
            limit: Some(RECENT_RUNS),
            ..RunFilter::default()
        };
        // The run log is for the record; an estimate without it uses the default output.
        let recent: Vec<u64> = match self.ports.store.runs(&filter).await {
            Ok(runs) => runs
                .iter()
                .filter_map(|r| r.outcome.usage.as_ref()?.output_tokens)
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut e = Estimate::new(
            &id,
            &price,
            transcript.and_then(|t| t.context_tokens).unwrap_or(0),
            cost::prompt_tokens(&prompt.body),
            cost::expected_output(&recent),
        );
        e.priced_as = priced_as;
        CostView::Estimated(e)
    }

    /// The price of a model the table lacks, solved from the run log's finished runs of it
    /// (see [`cost::learn_price`]), and how many runs it came from.
    pub async fn learned_price(&self, model: &str) -> Option<(cost::Price, usize)> {
        let runs = self
            .ports
            .store
            .runs(&RunFilter {
                limit: Some(LEARN_FROM_RUNS),
                ..RunFilter::default()
            })
            .await
            .ok()?;
        let samples: Vec<(crate::model::Usage, f64)> = runs
            .iter()
            .filter(|r| r.model.as_deref() == Some(model))
            .filter(|r| r.outcome.status == Some(Status::Ok))
            .filter_map(|r| Some((r.outcome.usage?, r.outcome.cost_usd?)))
            .collect();
        cost::learn_price(&samples).map(|p| (p, samples.len()))
    }

    /// Whether this process is running a follow-up on `session` right now (it holds the
    /// session's lease and has started, or is about to start, the runner).
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.running().contains_key(session)
    }

    /// Whether this process has runs going on.
    pub fn has_runs(&self) -> bool {
        !self.running().is_empty()
    }

    /// The leases of the runs going on in this process.
    pub fn running_leases(&self) -> Vec<(SessionId, RunLease)> {
        self.running()
            .iter()
            .map(|(s, l)| (s.clone(), l.clone()))
            .collect()
    }

    /// Records a run that was stopped because the process is shutting down: the run log,
    /// the hook's status `error: interrupted by shutdown`, the entry removed and the lease
    /// cleared. The stamp stays, so it is never run again.
    pub async fn record_interrupted(
        &self,
        session: &SessionId,
        lease: &RunLease,
    ) -> Result<(), ServiceError> {
        let status = Status::error("interrupted by shutdown");
        let record = self.ended_without_result(session, lease, status.clone());
        self.ports.store.append_run(&record).await?;
        let hook_record = HookRecord {
            status,
            fired_at: Some(lease.started_at),
        };
        let key = EntryKey {
            hook_id: lease.hook_id.clone(),
            session_id: session.clone(),
        };
        match self
            .ports
            .store
            .complete(&key, &self.config.owner, Some(hook_record.clone()))
            .await
        {
            Ok(()) => {}
            Err(StoreError::Fenced(_)) | Err(StoreError::EntryNotFound(_)) => {
                self.ports
                    .store
                    .record(&lease.hook_id, session, hook_record)
                    .await?
            }
            Err(e) => return Err(e.into()),
        }
        self.ports.meta.end_lease(session, &lease.run_id).await?;
        Ok(())
    }

    /// Every hook, in the store's order.
    pub async fn list_hooks(&self) -> Result<Vec<Hook>, ServiceError> {
        Ok(self.ports.store.snapshot().await?.hooks)
    }

    /// The hook `id`; a missing one is an error naming it.
    pub async fn get_hook(&self, id: &HookId) -> Result<Hook, ServiceError> {
        self.ports
            .store
            .get_hook(id)
            .await?
            .ok_or_else(|| StoreError::HookNotFound(id.clone()).into())
    }

    /// Creates a hook. A name whose id is taken already is refused, naming `name`: run
    /// twice, `hooks create changelog …` would otherwise make `changelog-2`, each firing
    /// and paid for on every `DONE`. [`Self::create_another_hook`] makes one more on
    /// purpose.
    pub async fn create_hook(&self, spec: HookSpec) -> Result<Hook, ServiceError> {
        let id = slugify(&spec.name);
        if let Some(h) = self.ports.store.get_hook(&HookId(id.clone())).await? {
            return Err(ServiceError::Invalid(ValidationError::new(
                "name",
                format!(
                    "a hook {id} ({:?}) already exists; change it with `hooks update {id}`, or make one more with `hooks create … --another`",
                    h.name
                ),
            )));
        }
        self.create_another_hook(spec).await
    }

    /// Creates a hook, its id made unique (`-2`, `-3`, …) when its name's is taken.
    pub async fn create_another_hook(&self, spec: HookSpec) -> Result<Hook, ServiceError> {
        not_scheduled(Some(spec.event))?;
        Ok(self.ports.store.create_hook(spec, self.now()).await?)
    }

    /// Applies `patch` to the hook `id`, checked.
    pub async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, ServiceError> {
        not_scheduled(patch.event)?;
        Ok(self.ports.store.update_hook(id, patch).await?)
    }

    /// Switches the hook `id` on or off.
    pub async fn set_enabled(&self, id: &HookId, enabled: bool) -> Result<Hook, ServiceError> {
        self.update_hook(
            id,
            &HookPatch {
                enabled: Some(enabled),
                ..HookPatch::default()
            },
        )
        .await
    }

    /// Deletes the hook `id` and its queued entries; returns how many entries went.
    pub async fn delete_hook(&self, id: &HookId) -> Result<usize, ServiceError> {
        Ok(self.ports.store.delete_hook(id).await?)
    }
}

/// A person's hook never takes [`Event::Scheduled`]: no event would ever queue it.
fn not_scheduled(event: Option<Event>) -> Result<(), ValidationError> {
    match event {
        Some(Event::Scheduled) => Err(ValidationError::new(
            "event",
            "must be conversation-done or conversation-failed (`scheduled` hooks are made by `hooks-app after` and `every`)",
        )),
        _ => Ok(()),
    }
}

/// The agent of each of `sessions` the app has remembered (from its hook events): the one
/// the session meta names, or [`crate::DEFAULT_AGENT`]; a session it knows nothing of is
/// left out. One state read a session, no transcript read, nothing priced: for listings
/// (`pending`, `runs`, the API and the page).
pub async fn agents_of(
    meta: &dyn SessionMeta,
    sessions: &[SessionId],
) -> Result<BTreeMap<SessionId, String>, ServiceError> {
    let mut out = BTreeMap::new();
    for s in sessions {
        if out.contains_key(s) {
            continue;
        }
        let st = meta.state(s).await?;
        if st.agent.is_some() || st.transcript_path.is_some() || st.cwd.is_some() {
            let agent = st.agent.unwrap_or_else(|| crate::DEFAULT_AGENT.to_owned());
            out.insert(s.clone(), agent);
        }
    }
    Ok(out)
}
