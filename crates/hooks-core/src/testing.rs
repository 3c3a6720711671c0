//! Test doubles and the store contract suite (feature `mocks`).
//!
//! - [`InMemoryStore`], [`InMemoryMeta`], [`InMemorySessions`]: small stateful fakes with the real semantics
//!   (they share [`crate::queue`] with the real stores);
//! - [`ManualClock`], [`ScriptedRunner`], [`StaticPrompts`]: deterministic time, runs and
//!   prompt files;
//! - [`contract`]: the behaviour every [`HookStore`] adapter must show;
//! - [`runner_contract`]: the behaviour every [`Runner`] adapter must show.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use time::Duration;

use crate::decide::EnqueueDecision;
use crate::live::*;
use crate::model::*;
use crate::ports::*;
use crate::prompt::{Prompt, parse_prompt};
use crate::queue;
use crate::stamp::Timestamp;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A clock that only moves when told to.
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// A clock at `t`.
    pub fn new(t: Timestamp) -> Arc<Self> {
        Arc::new(Self(Mutex::new(t)))
    }
    /// Moves the clock on by `d`.
    pub fn advance(&self, d: Duration) {
        *lock(&self.0) += d;
    }
    /// Sets the clock to `t`.
    pub fn set(&self, t: Timestamp) {
        *lock(&self.0) = t;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *lock(&self.0)
    }
}

#[derive(Default)]
struct StoreState {
    hooks: BTreeMap<HookId, Hook>,
    pending: Vec<PendingEntry>,
    runs: Vec<RunRecord>,
    budget: Option<crate::cost::Budget>,
    pause: Option<Pause>,
}

/// A hook store in memory, with the same rules as the file store.
#[derive(Default)]
pub struct InMemoryStore(Mutex<StoreState>);

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    /// Seeded like a fresh file store: `post-task`, and `continue-after-limit` (off).
    pub fn seeded(now: Timestamp) -> Arc<Self> {
        let s = Self::default();
        for hook in seed_hooks(now) {
            lock(&s.0).hooks.insert(hook.id.clone(), hook);
        }
        Arc::new(s)
    }
}

#[async_trait]
impl HookStore for InMemoryStore {
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let s = lock(&self.0);
        Ok(Snapshot {
            hooks: s.hooks.values().cloned().collect(),
            pending: s.pending.clone(),
        })
    }
    async fn get_hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError> {
        Ok(lock(&self.0).hooks.get(id).cloned())
    }
    async fn create_hook(&self, spec: HookSpec, now: Timestamp) -> Result<Hook, StoreError> {
        let mut s = lock(&self.0);
        let id = unique_hook_id(&spec.name, |c| s.hooks.keys().any(|k| k.as_str() == c));
        let hook = spec.into_hook(id.clone(), now);
        s.hooks.insert(id, hook.clone());
        Ok(hook)
    }
    async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, StoreError> {
        let mut s = lock(&self.0);
        let h = s
            .hooks
            .get_mut(id)
            .ok_or_else(|| StoreError::HookNotFound(id.clone()))?;
        patch.apply(h);
        Ok(h.clone())
    }
    async fn import_hook(&self, hook: &Hook) -> Result<(), StoreError> {
        lock(&self.0).hooks.insert(hook.id.clone(), hook.clone());
        Ok(())
    }
    async fn delete_hook(&self, id: &HookId) -> Result<usize, StoreError> {
        let mut s = lock(&self.0);
        s.hooks
            .remove(id)
            .ok_or_else(|| StoreError::HookNotFound(id.clone()))?;
        let before = s.pending.len();
        s.pending.retain(|p| p.hook_id != *id);
        Ok(before - s.pending.len())
    }
    async fn enqueue_event(
        &self,
        request: &EnqueueRequest,
    ) -> Result<Vec<(HookId, EnqueueDecision)>, StoreError> {
        let s = &mut *lock(&self.0);
        let rules: Vec<HookRules> = s.hooks.values().map(HookRules::from).collect();
        let (decisions, entries) = queue::plan_event(&rules, &s.pending, request);
        let hooks = &s.hooks;
        queue::enqueue(&mut s.pending, |h| hooks.contains_key(h), entries);
        Ok(decisions)
    }
    async fn enqueue(&self, entries: Vec<PendingEntry>) -> Result<Vec<EnqueueResult>, StoreError> {
        let s = &mut *lock(&self.0);
        let hooks = &s.hooks;
        Ok(queue::enqueue(
            &mut s.pending,
            |h| hooks.contains_key(h),
            entries,
        ))
    }
    async fn claim_due(
        &self,
        now: Timestamp,
        owner: &str,
        ttl: Duration,
        limit: usize,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        Ok(queue::claim_due(
            &mut lock(&self.0).pending,
            now,
            owner,
            ttl,
            limit,
        ))
    }
    async fn renew(
        &self,
        keys: &[EntryKey],
        owner: &str,
        until: Timestamp,
    ) -> Result<Vec<EntryKey>, StoreError> {
        Ok(queue::renew(&mut lock(&self.0).pending, keys, owner, until))
    }
    async fn requeue(&self, key: &EntryKey, owner: &str, to: &Requeue) -> Result<(), StoreError> {
        queue::requeue(&mut lock(&self.0).pending, key, owner, to)
    }
    async fn wake(
        &self,
        session: &SessionId,
        due_at: Timestamp,
        open_only: bool,
    ) -> Result<usize, StoreError> {
        Ok(queue::wake(
            &mut lock(&self.0).pending,
            session,
            due_at,
            open_only,
        ))
    }
    async fn complete(
        &self,
        key: &EntryKey,
        owner: &str,
        record: Option<HookRecord>,
    ) -> Result<(), StoreError> {
        let s = &mut *lock(&self.0);
        queue::take(&mut s.pending, key, owner)?;
        if let (Some(r), Some(h)) = (record, s.hooks.get_mut(&key.hook_id)) {
            queue::record(h, &key.session_id, &r);
        }
        Ok(())
    }
    async fn release(&self, keys: &[EntryKey], owner: &str) -> Result<(), StoreError> {
        queue::release(&mut lock(&self.0).pending, keys, owner);
        Ok(())
    }
    async fn drop_unclaimed(
        &self,
        keys: &[EntryKey],
        now: Timestamp,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        Ok(queue::drop_unclaimed(&mut lock(&self.0).pending, keys, now))
    }
    async fn record(
        &self,
        hook: &HookId,
        session: &SessionId,
        record: HookRecord,
    ) -> Result<(), StoreError> {
        if let Some(h) = lock(&self.0).hooks.get_mut(hook) {
            queue::record(h, session, &record);
        }
        Ok(())
    }
    async fn append_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        lock(&self.0).runs.push(run.clone());
        Ok(())
    }
    async fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let s = lock(&self.0);
        let all: Vec<RunRecord> = fold_runs(s.runs.iter().cloned())
            .into_iter()
            .filter(|r| filter.matches(r))
            .collect();
        let skip = filter.limit.map_or(0, |n| all.len().saturating_sub(n));
        Ok(all.into_iter().skip(skip).collect())
    }

    async fn budget(&self) -> Result<Option<crate::cost::Budget>, StoreError> {
        Ok(lock(&self.0).budget.clone())
    }

    async fn pause(&self) -> Result<Option<Pause>, StoreError> {
        Ok(lock(&self.0).pause.clone())
    }

    async fn set_pause(&self, pause: Option<Pause>) -> Result<(), StoreError> {
        lock(&self.0).pause = pause;
        Ok(())
    }

    async fn set_budget(&self, budget: Option<crate::cost::Budget>) -> Result<(), StoreError> {
        lock(&self.0).budget = budget;
        Ok(())
    }
}

/// What the service asks of a session, in memory, over [`InMemorySessions`] as the real
/// `MetaStore` is over a store's session state. Tests set the transcript facts, the open
/// conversations and whether a lease's holder is alive directly.
#[derive(Default)]
pub struct InMemoryMeta {
    sessions: InMemorySessions,
    transcripts: Mutex<HashMap<SessionId, TranscriptFacts>>,
    open: Mutex<HashMap<SessionId, OpenSession>>,
    /// Owners whose processes are to be seen as gone.
    gone: Mutex<Vec<String>>,
}

impl InMemoryMeta {
    /// Nothing known of any session.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    /// Sets the transcript facts of `s`.
    pub fn set_transcript(&self, s: &SessionId, facts: TranscriptFacts) {
        lock(&self.transcripts).insert(s.clone(), facts);
    }
    /// Marks the session as open in a Claude Code process, or closed.
    pub fn set_open(&self, s: &SessionId, open: Option<OpenSession>) {
        match open {
            Some(o) => lock(&self.open).insert(s.clone(), o),
            None => lock(&self.open).remove(s),
        };
    }
    /// From now on, leases held by `owner` are seen with their holder gone.
    pub fn owner_gone(&self, owner: &str) {
        lock(&self.gone).push(owner.to_owned());
    }
    /// The run lease `s` holds, if any.
    pub fn lease(&self, s: &SessionId) -> Option<RunLease> {
        self.sessions.row(s).1
    }
    /// Puts a lease on `s`, as a run that started elsewhere would.
    pub fn put_lease(&self, s: &SessionId, lease: RunLease) {
        self.sessions.put_lease(s, lease);
    }
    fn judge(&self, lease: RunLease) -> LeaseInfo {
        let holder = if lock(&self.gone).contains(&lease.owner) {
            Holder::Gone
        } else {
            Holder::Unknown
        };
        LeaseInfo { lease, holder }
    }
    /// The stamps of `s`.
    pub fn stamps(&self, s: &SessionId) -> BTreeMap<HookId, Timestamp> {
        self.sessions.row(s).0.stamps
    }
    /// `st` with the agent its transcript facts name, as `MetaStore` tells it from the
    /// agent's files.
    fn with_agent(&self, s: &SessionId, mut st: SessionState) -> SessionState {
        st.agent = lock(&self.transcripts).get(s).and_then(|t| t.agent.clone());
        st
    }
}

#[async_trait]
impl SessionMeta for InMemoryMeta {
    async fn state(&self, session: &SessionId) -> Result<SessionState, MetaError> {
        Ok(self.with_agent(session, self.sessions.row(session).0))
    }
    async fn remember(
        &self,
        session: &SessionId,
        u: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        let st = self.sessions.remember(session, u).await?;
        Ok(self.with_agent(session, st))
    }
    async fn facts(&self, session: &SessionId) -> Result<SessionFacts, MetaError> {
        let (state, lease) = self.sessions.row(session);
        Ok(SessionFacts {
            state: self.with_agent(session, state),
            transcript: lock(&self.transcripts).get(session).cloned(),
            open: lock(&self.open).get(session).cloned(),
            lease: lease.map(|l| self.judge(l)),
            settings_model: None,
            folder_owner: None,
        })
    }
    async fn begin_run(
        &self,
        session: &SessionId,
        lease: &RunLease,
        _now: Timestamp,
    ) -> Result<BeginRun, MetaError> {
        // Any lease refuses, judged, as the real adapter's does: a dead one is the
        // service's to account for first.
        Ok(match self.sessions.begin_run(session, lease).await? {
            Begin::Won => BeginRun::Won,
            Begin::Stamped { at } => BeginRun::Stamped { at },
            Begin::Held(l) => BeginRun::Busy(Box::new(self.judge(l))),
        })
    }
    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        self.sessions.update_lease(session, lease).await
    }
    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        self.sessions.end_lease(session, run_id).await
    }
    async fn leases(&self) -> Result<Vec<(SessionId, LeaseInfo)>, MetaError> {
        Ok(self
            .sessions
            .leases()
            .await?
            .into_iter()
            .map(|(s, l)| (s, self.judge(l)))
            .collect())
    }
    async fn open(&self, session: &SessionId) -> Result<Option<OpenSession>, MetaError> {
        Ok(lock(&self.open).get(session).cloned())
    }
    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        self.sessions.stamp(session, hook, at).await
    }
    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        self.sessions.unstamp(session, hook).await
    }
    async fn sessions_starting(&self, prefix: &str) -> Result<(Vec<SessionId>, String), MetaError> {
        let mut ids: Vec<SessionId> = self
            .transcripts
            .lock()
            .unwrap()
            .keys()
            .filter(|s| s.as_str().starts_with(prefix))
            .cloned()
            .collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok((ids, "the in-memory transcripts".to_owned()))
    }
}

/// The durable session state in memory, with the same rules as the stores' own.
/// A session's state, its lease and when it last changed.
type SessionRow = (SessionState, Option<RunLease>, Timestamp);

#[derive(Default)]
/// Sessions' durable state in memory, with the semantics of the real stores.
pub struct InMemorySessions(Mutex<BTreeMap<SessionId, SessionRow>>);

impl InMemorySessions {
    /// No session known.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    /// The session's state and lease (empty for an unknown session).
    fn row(&self, s: &SessionId) -> (SessionState, Option<RunLease>) {
        lock(&self.0)
            .get(s)
            .map(|(st, l, _)| (st.clone(), l.clone()))
            .unwrap_or_default()
    }
    /// Sets a session's lease as it is, whatever was there.
    fn put_lease(&self, s: &SessionId, lease: RunLease) {
        let at = lease.started_at;
        lock(&self.0)
            .entry(s.clone())
            .or_insert_with(|| (SessionState::default(), None, at))
            .1 = Some(lease);
    }
}

#[async_trait]
impl SessionStore for InMemorySessions {
    async fn state(
        &self,
        session: &SessionId,
    ) -> Result<(SessionState, Option<RunLease>), MetaError> {
        Ok(lock(&self.0)
            .get(session)
            .map(|(s, l, _)| (s.clone(), l.clone()))
            .unwrap_or_default())
    }
    async fn remember(
        &self,
        session: &SessionId,
        u: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        let mut all = lock(&self.0);
        let (st, _, _) = all.entry(session.clone()).or_insert_with(|| {
            (
                SessionState::default(),
                None,
                time::OffsetDateTime::UNIX_EPOCH,
            )
        });
        if st.cwd.is_none() {
            st.cwd.clone_from(&u.cwd);
        }
        if u.transcript_path.is_some() {
            st.transcript_path.clone_from(&u.transcript_path);
        }
        if u.origin.is_some() {
            st.origin = u.origin;
        }
        Ok(st.clone())
    }
    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        Ok(lock(&self.0)
            .get_mut(session)
            .is_some_and(|(st, _, _)| st.stamps.remove(hook).is_some()))
    }
    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        let mut all = lock(&self.0);
        let (st, _, changed) = all
            .entry(session.clone())
            .or_insert_with(|| (SessionState::default(), None, at));
        if let Some(prev) = st.stamps.get(hook) {
            return Ok(StampResult::Lost { at: *prev });
        }
        st.stamps.insert(hook.clone(), at);
        *changed = at;
        Ok(StampResult::Won)
    }
    async fn begin_run(&self, session: &SessionId, lease: &RunLease) -> Result<Begin, MetaError> {
        let mut all = lock(&self.0);
        let (st, held, changed) = all
            .entry(session.clone())
            .or_insert_with(|| (SessionState::default(), None, lease.started_at));
        if let Some(l) = held {
            return Ok(Begin::Held(l.clone()));
        }
        if let Some(at) = st.stamps.get(&lease.hook_id) {
            return Ok(Begin::Stamped { at: *at });
        }
        st.stamps.insert(lease.hook_id.clone(), lease.started_at);
        *held = Some(lease.clone());
        *changed = lease.started_at;
        Ok(Begin::Won)
    }
    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        let mut all = lock(&self.0);
        match all.get_mut(session).and_then(|(_, l, _)| l.as_mut()) {
            Some(l) if l.run_id == lease.run_id => {
                *l = lease.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        if let Some((_, l, _)) = lock(&self.0).get_mut(session)
            && l.as_ref().is_some_and(|l| l.run_id == run_id)
        {
            *l = None;
        }
        Ok(())
    }
    async fn leases(&self) -> Result<Vec<(SessionId, RunLease)>, MetaError> {
        Ok(lock(&self.0)
            .iter()
            .filter_map(|(s, (_, l, _))| Some((s.clone(), l.clone()?)))
            .collect())
    }
    async fn sessions(&self) -> Result<Vec<SessionRecord>, MetaError> {
        Ok(lock(&self.0)
            .iter()
            .map(|(s, (st, l, _))| SessionRecord {
                session: s.clone(),
                state: st.clone(),
                lease: l.clone(),
            })
            .collect())
    }
    async fn prune(
        &self,
        before: Timestamp,
        keep: &std::collections::HashSet<SessionId>,
    ) -> Result<Vec<SessionId>, MetaError> {
        let mut all = lock(&self.0);
        let gone: Vec<SessionId> = all
            .iter()
            .filter(|(s, (_, l, changed))| *changed < before && l.is_none() && !keep.contains(*s))
            .map(|(s, _)| s.clone())
            .collect();
        for s in &gone {
            all.remove(s);
        }
        Ok(gone)
    }
}

/// A runner that records each request and answers with a fixed outcome.
pub struct ScriptedRunner {
    outcome: Mutex<Result<RunOutcome, RunnerError>>,
    calls: Mutex<Vec<RunRequest>>,
    count: AtomicUsize,
    delivers: std::sync::atomic::AtomicBool,
}

impl ScriptedRunner {
    /// Every run ends well.
    pub fn ok() -> Arc<Self> {
        Self::answering(Ok(RunOutcome {
            status: Some(Status::Ok),
            exit_code: Some(0),
            completed: Some(true),
            ..RunOutcome::default()
        }))
    }
    /// Every run starts (or fails to) and ends as `outcome` says.
    pub fn answering(outcome: Result<RunOutcome, RunnerError>) -> Arc<Self> {
        Arc::new(Self {
            outcome: Mutex::new(outcome),
            calls: Mutex::default(),
            count: AtomicUsize::new(0),
            delivers: std::sync::atomic::AtomicBool::new(false),
        })
    }
    /// Whether it says it delivers into an open conversation (it does not, by default).
    pub fn set_delivers(&self, yes: bool) {
        self.delivers.store(yes, Ordering::SeqCst);
    }
    /// What the next runs end with.
    pub fn set_outcome(&self, outcome: Result<RunOutcome, RunnerError>) {
        *lock(&self.outcome) = outcome;
    }
    /// The requests it was given, in order.
    pub fn calls(&self) -> Vec<RunRequest> {
        lock(&self.calls).clone()
    }
    /// How many runs it started.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

struct Finished(RunOutcome);

#[async_trait]
impl RunHandle for Finished {
    fn process(&self) -> Option<ProcessRef> {
        None
    }
    async fn wait(self: Box<Self>) -> RunOutcome {
        self.0
    }
}

#[async_trait]
impl Runner for ScriptedRunner {
    fn delivers_into_open(&self) -> bool {
        self.delivers.load(Ordering::SeqCst)
    }
    async fn start(&self, request: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
        self.count.fetch_add(1, Ordering::SeqCst);
        lock(&self.calls).push(request.clone());
        let outcome = lock(&self.outcome).clone()?;
        Ok(Box::new(Finished(outcome)))
    }
    async fn end_leftovers(&self, _group: &ProcessRef) -> usize {
        0
    }
}

/// Prompt files held in memory, by their relative path.
#[derive(Default)]
pub struct StaticPrompts(Mutex<HashMap<String, String>>);

impl StaticPrompts {
    /// A source holding one prompt `file` with `text`.
    pub fn with(file: &str, text: &str) -> Arc<Self> {
        let p = Self::default();
        lock(&p.0).insert(file.to_owned(), text.to_owned());
        Arc::new(p)
    }
}

#[async_trait]
impl PromptSource for StaticPrompts {
    async fn load<'a>(
        &self,
        file: &PromptFile,
        _cwd: Option<&'a str>,
    ) -> Result<Prompt, PromptError> {
        let text =
            lock(&self.0)
                .get(file.as_str())
                .cloned()
                .ok_or_else(|| PromptError::NotFound {
                    file: file.to_string(),
                    looked_in: "memory".to_owned(),
                })?;
        parse_prompt(&text).map_err(|error| PromptError::Invalid {
            file: file.to_string(),
            error,
        })
    }
    async fn save(&self, file: &PromptFile, text: &str) -> Result<bool, PromptError> {
        let mut files = lock(&self.0);
        if files.contains_key(file.as_str()) {
            return Ok(false);
        }
        files.insert(file.as_str().to_owned(), text.to_owned());
        Ok(true)
    }
}

pub mod contract;
pub mod runner_contract;
