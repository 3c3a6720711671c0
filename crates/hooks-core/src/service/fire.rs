//! Claiming due entries, deciding each on fresh facts, and ending what is decided: the
//! waits, the finishes, the recoveries of runs that died.

use std::sync::atomic::Ordering;

use crate::cost::CostView;
use crate::decide::{self, FireDecision, FireInput};
use crate::live::*;
use crate::model::*;
use crate::ports::*;
use crate::stamp::Timestamp;

use super::types::*;

impl Service {
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
    pub(super) async fn decide(
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
                    // A new failure, or a new task, after an earlier one was followed
                    // up: the earlier stamp gives way (decide_fire let it through for that).
                    if let Some(at) = facts.state.stamps.get(&hook.id)
                        && decide::stamp_gives_way(&hook, entry, *at)
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

    pub(super) async fn wait(
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
    pub(super) async fn requeue_waiting(
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
    pub(super) async fn finish_with(
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
    pub(super) async fn log_ended(
        &self,
        entry: &PendingEntry,
        status: &Status,
        warnings: &mut Vec<String>,
    ) {
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

    pub(super) async fn finish(
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
    pub(super) async fn recover(
        &self,
        session: &SessionId,
        lease: &RunLease,
    ) -> Result<Status, ServiceError> {
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
    pub(super) fn ended_without_result(
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
    pub(super) fn next_run_id(&self) -> String {
        let n = self.next_run.fetch_add(1, Ordering::Relaxed);
        format!("{}#{n}", self.config.owner)
    }

    pub(super) fn new_lease(&self, hook: &HookId, started_at: Timestamp) -> RunLease {
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
}
