//! The store-wide settings (budget, pause), prices and estimates, runs asked for by hand,
//! and the hooks themselves.

use crate::cost::{self, Budget, BudgetView, CostView, Estimate};
use crate::decide::SkipReason;
use crate::live::*;
use crate::model::*;
use crate::ports::*;
use crate::prompt::Prompt;
use crate::stamp::Timestamp;

use super::types::*;

impl Service {
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
    pub(super) async fn wake_waiting(&self, kind: WaitKind) -> Result<usize, ServiceError> {
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
