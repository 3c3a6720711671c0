//! The application service: the use cases, composed from the ports and the decisions.
//!
//! It holds no state of its own but the set of sessions this process is running a
//! follow-up on; everything durable lives behind the ports.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use time::Duration;

use crate::decide::{self, EnqueueDecision, FireDecision, FireInput, NotReady, Policy, SkipReason};
use crate::model::*;
use crate::ports::*;
use crate::stamp::Timestamp;

/// Errors of the service: a port failed, or the input was invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServiceError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("session state: {0}")]
    Meta(#[from] MetaError),
    #[error("invalid {0}")]
    Invalid(#[from] ValidationError),
}

/// Settings of the service.
#[derive(Debug, Clone)]
pub struct Config {
    pub policy: Policy,
    /// How long a claim lasts without renewal; a dead owner's entries come back after this.
    pub claim_ttl: Duration,
    /// Names this process in claims: unique per process (host, pid and a nonce).
    pub owner: String,
}

impl Config {
    pub fn new(owner: impl Into<String>) -> Self {
        Self {
            policy: Policy::default(),
            claim_ttl: Duration::seconds(90),
            owner: owner.into(),
        }
    }
}

/// The ports the service drives.
#[derive(Clone)]
pub struct Ports {
    pub store: Arc<dyn HookStore>,
    pub meta: Arc<dyn SessionMeta>,
    pub runner: Arc<dyn Runner>,
    pub prompts: Arc<dyn PromptSource>,
    pub clock: Arc<dyn Clock>,
}

/// A conversation event coming in.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyEvent {
    pub session: SessionId,
    pub event: Event,
    pub update: SessionUpdate,
    /// The event itself says it came from a subagent (a hook input with `agent_id`).
    pub subagent: bool,
}

/// What notify did for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyOutcome {
    Queued { due_at: Timestamp },
    Skipped(SkipReason),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyReport {
    pub hook_id: HookId,
    pub outcome: NotifyOutcome,
}

/// What firing one claimed entry did.
#[derive(Debug, Clone, PartialEq)]
pub enum FireAction {
    /// The hook is gone or disabled: the entry was dropped.
    Dropped,
    /// Not run; this status was recorded.
    Finished(Status),
    /// Not ready; put back.
    Retried {
        due_at: Timestamp,
        retries: u32,
        why: NotReady,
    },
    /// Another process fired it first.
    LostStamp { at: Timestamp },
    /// The follow-up ran.
    Ran(Box<RunRecord>),
    /// The claim was lost before the result could be written; the outcome was recorded
    /// on the hook all the same (for runs) or left to the new owner (for the rest).
    Fenced,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FireReport {
    pub key: EntryKey,
    pub action: FireAction,
}

/// The use cases of hooks-app.
pub struct Service {
    ports: Ports,
    config: Config,
    running: Mutex<HashSet<SessionId>>,
}

/// Removes a session from the running set when a fire ends, however it ends.
struct RunningGuard<'a> {
    set: &'a Mutex<HashSet<SessionId>>,
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
    pub fn new(ports: Ports, config: Config) -> Self {
        Self {
            ports,
            config,
            running: Mutex::new(HashSet::new()),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// A conversation event: remember what it says about the session, then queue every
    /// matching hook the enqueue decision allows, in one store write.
    pub async fn notify(&self, ev: &NotifyEvent) -> Result<Vec<NotifyReport>, ServiceError> {
        let state = if ev.update == SessionUpdate::default() {
            self.ports.meta.state(&ev.session).await?
        } else {
            self.ports.meta.remember(&ev.session, &ev.update).await?
        };
        let request = EnqueueRequest {
            session: ev.session.clone(),
            event: ev.event,
            stamps: state.stamps.clone(),
            origin: state.origin.unwrap_or_default(),
            subagent: ev.subagent
                || state
                    .transcript_path
                    .as_deref()
                    .is_some_and(is_subagent_path),
            now: self.now(),
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

    /// Claims up to `limit` due entries for this process, in one store write.
    pub async fn claim(&self, limit: usize) -> Result<Vec<PendingEntry>, ServiceError> {
        let now = self.now();
        Ok(self
            .ports
            .store
            .claim_due(now, &self.config.owner, self.config.claim_ttl, limit)
            .await?)
    }

    /// Extends this process's claims on `keys`.
    pub async fn renew(&self, keys: &[EntryKey]) -> Result<Vec<EntryKey>, ServiceError> {
        let until = self.now() + self.config.claim_ttl;
        Ok(self
            .ports
            .store
            .renew(keys, &self.config.owner, until)
            .await?)
    }

    /// Gives back claimed entries that will not be started (shutdown).
    pub async fn release(&self, keys: &[EntryKey]) -> Result<(), ServiceError> {
        Ok(self.ports.store.release(keys, &self.config.owner).await?)
    }

    /// Decides on a claimed entry with fresh facts and carries the decision out: drop,
    /// record, put back, or stamp then run then record.
    pub async fn fire(&self, entry: &PendingEntry) -> Result<FireReport, ServiceError> {
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
            Some(Err(e)) => Some(e.to_string()),
            _ => None,
        };
        let run_in_progress = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&entry.session_id);
        let now = self.now();
        let decision = decide::decide_fire(FireInput {
            hook: hook.as_ref(),
            entry,
            facts: &facts,
            run_in_progress,
            prompt_error: prompt_error.as_deref(),
            now,
            policy: self.config.policy,
        });
        let action = match decision {
            FireDecision::Drop => self.finish(&key, None).await?,
            FireDecision::Finish(status) => {
                match self
                    .finish(
                        &key,
                        Some(HookRecord {
                            status: status.clone(),
                            fired_at: None,
                        }),
                    )
                    .await?
                {
                    FireAction::Dropped => FireAction::Finished(status),
                    other => other,
                }
            }
            FireDecision::Retry {
                due_at,
                retries,
                why,
            } => match store.requeue(&key, owner, due_at, retries).await {
                Ok(()) => FireAction::Retried {
                    due_at,
                    retries,
                    why,
                },
                Err(StoreError::Fenced(_)) => FireAction::Fenced,
                Err(e) => return Err(e.into()),
            },
            FireDecision::Fire => match (hook, prompt, facts.cwd()) {
                (Some(hook), Some(Ok(prompt)), Some(cwd)) => {
                    self.run(entry, hook, prompt, cwd.to_owned()).await?
                }
                // decide_fire fires only with all three; should that ever break, record it
                // rather than stop the daemon.
                _ => {
                    let status =
                        Status::error("internal: fired without a hook, a prompt and a cwd");
                    self.finish(
                        &key,
                        Some(HookRecord {
                            status: status.clone(),
                            fired_at: None,
                        }),
                    )
                    .await?;
                    FireAction::Finished(status)
                }
            },
        };
        Ok(FireReport { key, action })
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

    async fn run(
        &self,
        entry: &PendingEntry,
        hook: Hook,
        prompt: crate::prompt::Prompt,
        cwd: String,
    ) -> Result<FireAction, ServiceError> {
        let key = entry.key();
        let started_at = self.now();
        if let StampResult::Lost { at } = self
            .ports
            .meta
            .stamp(&entry.session_id, &hook.id, started_at)
            .await?
        {
            let status = Status::skipped(SkipReason::AlreadyRan { at }.to_string());
            self.finish(
                &key,
                Some(HookRecord {
                    status,
                    fired_at: None,
                }),
            )
            .await?;
            return Ok(FireAction::LostStamp { at });
        }
        let _guard = {
            let mut set = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            set.insert(entry.session_id.clone());
            RunningGuard {
                set: &self.running,
                session: entry.session_id.clone(),
            }
        };
        let request = RunRequest {
            hook_id: hook.id.clone(),
            session_id: entry.session_id.clone(),
            cwd,
            prompt,
        };
        let outcome = match self.ports.runner.run(&request).await {
            Ok(o) => o,
            Err(e) => RunOutcome {
                status: Some(Status::error(e.to_string())),
                ..RunOutcome::default()
            },
        };
        let finished_at = self.now();
        let record = RunRecord {
            hook_id: hook.id.clone(),
            session_id: entry.session_id.clone(),
            started_at,
            finished_at,
            outcome,
        };
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
                // The claim lapsed during the run; the stamp kept anyone else from running
                // it, so the outcome is still ours to record.
                self.ports
                    .store
                    .record(&hook.id, &entry.session_id, hook_record)
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
        Ok(FireAction::Ran(Box::new(record)))
    }

    /// Whether this process is running a follow-up on `session` right now (it has stamped
    /// the session and started the runner).
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(session)
    }

    /// Records a run that was stopped because the process is shutting down: the run log,
    /// the hook's status `error: interrupted by shutdown`, and the entry removed. The stamp
    /// stays, so it is never run again.
    pub async fn record_interrupted(
        &self,
        entry: &PendingEntry,
        started_at: Timestamp,
    ) -> Result<(), ServiceError> {
        let status = Status::error("interrupted by shutdown");
        let record = RunRecord {
            hook_id: entry.hook_id.clone(),
            session_id: entry.session_id.clone(),
            started_at,
            finished_at: self.now(),
            outcome: RunOutcome {
                status: Some(status.clone()),
                ..RunOutcome::default()
            },
        };
        self.ports.store.append_run(&record).await?;
        let hook_record = HookRecord {
            status,
            fired_at: Some(started_at),
        };
        match self
            .ports
            .store
            .complete(&entry.key(), &self.config.owner, Some(hook_record.clone()))
            .await
        {
            Ok(()) => Ok(()),
            Err(StoreError::Fenced(_)) | Err(StoreError::EntryNotFound(_)) => Ok(self
                .ports
                .store
                .record(&entry.hook_id, &entry.session_id, hook_record)
                .await?),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_hooks(&self) -> Result<Vec<Hook>, ServiceError> {
        Ok(self.ports.store.snapshot().await?.hooks)
    }

    pub async fn get_hook(&self, id: &HookId) -> Result<Hook, ServiceError> {
        self.ports
            .store
            .get_hook(id)
            .await?
            .ok_or_else(|| StoreError::HookNotFound(id.clone()).into())
    }

    pub async fn create_hook(&self, spec: HookSpec) -> Result<Hook, ServiceError> {
        Ok(self.ports.store.create_hook(spec, self.now()).await?)
    }

    pub async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, ServiceError> {
        Ok(self.ports.store.update_hook(id, patch).await?)
    }

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

    pub async fn delete_hook(&self, id: &HookId) -> Result<usize, ServiceError> {
        Ok(self.ports.store.delete_hook(id).await?)
    }
}
