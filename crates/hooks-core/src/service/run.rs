//! Running a fired follow-up and recording what became of it: a limit or an overload
//! back in the queue, an agent that could not start tried again.

use crate::decide::{self, SkipReason};
use crate::failure::{self, FailureKind};
use crate::live::*;
use crate::model::*;
use crate::ports::*;

use super::types::*;

impl Service {
    pub(super) async fn run(
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
    pub(super) async fn not_started(
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
    pub(super) async fn limited(
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
}
