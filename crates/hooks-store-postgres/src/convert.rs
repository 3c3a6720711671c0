//! Rows to the core's types and back: the only code that knows the columns.

use hooks_core::ports::StoreError;
use hooks_core::stamp::Timestamp;
use hooks_core::*;
use time::OffsetDateTime;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

fn corrupt(table: &str, key: &str, e: &ValidationError) -> StoreError {
    StoreError::Corrupt(format!("database table {table}: {key}: {e}"))
}

pub fn hook_from_row(r: &Row) -> Result<Hook, StoreError> {
    let key: &str = r.get(0);
    let bad = |e: ValidationError| corrupt("hooks", &format!("hook {key:?}"), &e);
    let at: Vec<String> = r.get(12);
    let sessions: Vec<String> = r.get(13);
    let errors: Vec<String> = r.get(15);
    Ok({
        let mut o = Hook::new(
            HookId::parse(key).map_err(bad)?,
            r.get(1),
            PromptFile::parse(r.get(4)).map_err(bad)?,
        );
        o.errors = FailureKinds::new(&errors).map_err(bad)?;
        o.event = Event::parse(r.get(2)).map_err(bad)?;
        o.delay = Delay::from_seconds(i64::from(r.get::<_, i32>(3))).map_err(bad)?;
        o.enabled = r.get(5);
        o.skip_cron = r.get(6);
        o.skip_subagents = r.get(7);
        o.max_context = ContextCap::from_k(i64::from(r.get::<_, i32>(8))).map_err(bad)?;
        o.max_cost = CostCap::from_usd(r.get(9)).map_err(bad)?;
        o.max_lateness = MaxLateness::from_seconds(i64::from(r.get::<_, i32>(14))).map_err(bad)?;
        o.deliver = Delivery::parse(r.get(16)).map_err(bad)?;
        o.agent = AgentScope::parse(r.get::<_, Option<&str>>(17).unwrap_or("")).map_err(bad)?;
        o.repeat = Repeat::parse(r.get(18)).map_err(bad)?;
        o.created_at = r.get(10);
        o.last_status = r.get::<_, Option<&str>>(11).map(Status::parse);
        o.history = History::from_entries(
            at.into_iter()
                .zip(sessions)
                .map(|(key, session)| HistoryEntry { key, session })
                .collect(),
        );
        o
    })
}

pub fn rules_from_row(r: &Row) -> Result<HookRules, StoreError> {
    let key: &str = r.get(0);
    let bad = |e: ValidationError| corrupt("hooks", &format!("hook {key:?}"), &e);
    let errors: Vec<String> = r.get(6);
    Ok({
        let mut o = HookRules::new(
            HookId::parse(key).map_err(bad)?,
            Event::parse(r.get(1)).map_err(bad)?,
        );
        o.errors = FailureKinds::new(&errors).map_err(bad)?;
        o.delay = Delay::from_seconds(i64::from(r.get::<_, i32>(2))).map_err(bad)?;
        o.enabled = r.get(3);
        o.skip_cron = r.get(4);
        o.skip_subagents = r.get(5);
        o.agent = AgentScope::parse(r.get::<_, Option<&str>>(7).unwrap_or("")).map_err(bad)?;
        o.repeat = Repeat::parse(r.get(8)).map_err(bad)?;
        o
    })
}

pub fn history_arrays(h: &History) -> (Vec<String>, Vec<String>) {
    h.entries()
        .iter()
        .map(|e| (e.key.clone(), e.session.clone()))
        .unzip()
}

/// Writes a hook; with `replace`, over the one with its id (keeping its place).
pub async fn insert_hook(
    c: &impl tokio_postgres::GenericClient,
    h: &Hook,
    replace: bool,
) -> Result<(), tokio_postgres::Error> {
    let (at, sessions) = history_arrays(&h.history);
    let on_conflict = if replace {
        "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, event = EXCLUDED.event, \
         delay_seconds = EXCLUDED.delay_seconds, prompt_file = EXCLUDED.prompt_file, \
         enabled = EXCLUDED.enabled, skip_cron = EXCLUDED.skip_cron, \
         skip_subagents = EXCLUDED.skip_subagents, max_context_k = EXCLUDED.max_context_k, \
         max_cost_usd = EXCLUDED.max_cost_usd, created_at = EXCLUDED.created_at, \
         last_status = EXCLUDED.last_status, history_at = EXCLUDED.history_at, \
         history_session = EXCLUDED.history_session, max_lateness_s = EXCLUDED.max_lateness_s, \
         errors = EXCLUDED.errors, deliver = EXCLUDED.deliver, agent = EXCLUDED.agent, \
         repeat = EXCLUDED.repeat"
    } else {
        ""
    };
    c.execute(
        &format!(
            "INSERT INTO hooks (id, name, event, delay_seconds, prompt_file, enabled, skip_cron, \
             skip_subagents, max_context_k, max_cost_usd, created_at, last_status, history_at, \
             history_session, max_lateness_s, errors, deliver, agent, repeat) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19) \
             {on_conflict}"
        ),
        &[
            &h.id.as_str(),
            &h.name,
            &h.event.as_str(),
            &(h.delay.seconds().min(i32::MAX as u32) as i32),
            &h.prompt_file.as_str(),
            &h.enabled,
            &h.skip_cron,
            &h.skip_subagents,
            &(h.max_context.k().min(i32::MAX as u32) as i32),
            &h.max_cost.usd().unwrap_or(0.0),
            &h.created_at,
            &h.last_status.as_ref().map(ToString::to_string),
            &at,
            &sessions,
            &(h.max_lateness.seconds().min(i32::MAX as u32) as i32),
            &h.errors.names(),
            &h.deliver.as_str(),
            &match &h.agent {
                AgentScope::All => None,
                AgentScope::Only(a) => Some(a.as_str()),
            },
            &h.repeat.as_str(),
        ],
    )
    .await
    .map(|_| ())
}

pub fn key_from_row(r: &Row, at: usize) -> Result<EntryKey, StoreError> {
    let (h, s): (&str, &str) = (r.get(at), r.get(at + 1));
    let bad = |e: ValidationError| corrupt("pending", &format!("entry {h}/{s}"), &e);
    Ok(EntryKey {
        hook_id: HookId::parse(h).map_err(bad)?,
        session_id: SessionId::parse(s).map_err(bad)?,
    })
}

/// From the columns of `PENDING_COLUMNS`, in order.
pub fn pending_from_row(r: &Row) -> Result<PendingEntry, StoreError> {
    let key = key_from_row(r, 0)?;
    let claim = match (r.get::<_, Option<String>>(5), r.get(6)) {
        (Some(owner), Some(expires_at)) => Some(Claim { owner, expires_at }),
        _ => None,
    };
    let waiting = match (r.get::<_, Option<String>>(7), r.get(8)) {
        (Some(reason), Some(since)) => Some(Waiting {
            // Migration 8 gave every wait a kind; one this version does not know waits as
            // not ready, so the next fire decides afresh.
            kind: match r.get::<_, Option<&str>>(11) {
                Some(k) => WaitKind::parse(k).unwrap_or(WaitKind::NotReady),
                None => WaitKind::of_legacy(&reason, r.get::<_, Option<bool>>(9).unwrap_or(false)),
            },
            reason,
            since,
        }),
        _ => None,
    };
    let count = |i: usize| r.get::<_, i32>(i).max(0) as u32;
    Ok(PendingEntry {
        hook_id: key.hook_id,
        session_id: key.session_id,
        due_at: DueAt::At(r.get(2)),
        queued_at: r.get(3),
        retries: count(4),
        attempts: count(12),
        not_taken: count(13),
        claim,
        waiting,
        error: r.get::<_, Option<&str>>(10).map(FailureKind::from_claude),
    })
}

/// A count as a column keeps it.
pub fn count_param(n: u32) -> i32 {
    n.min(i32::MAX as u32) as i32
}

/// Owned parameters of an insert into `pending`, in the order of [`PENDING_INSERT`]. A
/// claim is never copied: it belongs to a process of the store it came from.
pub struct PendingParams {
    hook: String,
    session: String,
    host: String,
    due: OffsetDateTime,
    queued: Option<OffsetDateTime>,
    retries: i32,
    reason: Option<String>,
    since: Option<OffsetDateTime>,
    open: Option<bool>,
    error: Option<&'static str>,
    kind: Option<&'static str>,
    attempts: i32,
    not_taken: i32,
}

/// The columns an insert into `pending` writes, in the order of [`PendingParams::as_refs`].
pub const PENDING_INSERT: &str = "hook_id, session_id, host, due_at, queued_at, retries, \
     waiting_reason, waiting_since, waiting_open, error, waiting_kind, attempts, not_taken";

impl PendingParams {
    pub fn as_refs(&self) -> [&(dyn ToSql + Sync); 13] {
        [
            &self.hook,
            &self.session,
            &self.host,
            &self.due,
            &self.queued,
            &self.retries,
            &self.reason,
            &self.since,
            &self.open,
            &self.error,
            &self.kind,
            &self.attempts,
            &self.not_taken,
        ]
    }
}

pub fn pending_insert_params(e: &PendingEntry, host: &str) -> PendingParams {
    PendingParams {
        hook: e.hook_id.to_string(),
        session: e.session_id.to_string(),
        host: host.to_owned(),
        // An entry whose due time did not read is due now, as in the JSON store.
        due: e
            .due_at
            .time()
            .or(e.queued_at)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        queued: e.queued_at,
        retries: count_param(e.retries),
        reason: e.waiting.as_ref().map(|w| w.reason.clone()),
        since: e.waiting.as_ref().map(|w| w.since),
        open: e.waiting.as_ref().map(Waiting::waits_for_close),
        error: e.error.map(FailureKind::as_str),
        kind: e.waiting.as_ref().map(|w| w.kind.as_str()),
        attempts: count_param(e.attempts),
        not_taken: count_param(e.not_taken),
    }
}

pub const RUN_COLUMNS: &str = "run_id, hook_id, session_id, owner, pid, pid_start, started_at, \
     finished_at, status, exit_code, completed, num_turns, cost_usd, input_tokens, \
     cache_creation_input_tokens, cache_read_input_tokens, output_tokens, has_usage, duration_ms, \
     cli_session_id, result_text, estimated_cost_usd, model, delivered";

fn u64_of(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

fn i64_of(v: Option<u64>) -> Option<i64> {
    v.and_then(|v| i64::try_from(v).ok())
}

/// A row of `runs` read by `RUN_COLUMNS`; a row that does not validate is passed over, as
/// a garbage line of the JSON run log is.
pub fn run_from_row(r: &Row) -> Option<RunRecord> {
    let process = match (u64_of(r.get(4)), u64_of(r.get(5))) {
        (Some(pid), Some(start)) => Some(ProcessRef {
            pid: u32::try_from(pid).ok()?,
            start,
        }),
        _ => None,
    };
    let usage = r.get::<_, bool>(17).then(|| {
        let mut o = Usage::default();
        o.input_tokens = u64_of(r.get(13));
        o.cache_creation_input_tokens = u64_of(r.get(14));
        o.cache_read_input_tokens = u64_of(r.get(15));
        o.output_tokens = u64_of(r.get(16));
        o
    });
    Some({
        let mut o = RunRecord::new(
            HookId::parse(r.get(1)).ok()?,
            SessionId::parse(r.get(2)).ok()?,
            r.get(6),
        );
        o.run_id = r.get(0);
        o.owner = r.get(3);
        o.process = process;
        o.finished_at = r.get(7);
        o.outcome = {
            let mut o = RunOutcome::default();
            o.api_error_status = None;
            o.status = r.get::<_, Option<&str>>(8).map(Status::parse);
            o.exit_code = r.get(9);
            o.completed = r.get(10);
            o.num_turns = u64_of(r.get(11));
            o.cost_usd = r.get(12);
            o.usage = usage;
            o.duration_ms = u64_of(r.get(18));
            o.session_id = r.get(19);
            o.result_text = r.get(20);
            o
        };
        o.estimated_cost_usd = r.get(21);
        o.model = r.get(22);
        o.delivered = r.get(23);
        o
    })
}

/// Appends a run; the lines of one run (by `run_id`) fold into one row as
/// [`hooks_core::fold_runs`] folds them: a later line fills in or replaces.
pub async fn append_run(
    c: &impl tokio_postgres::GenericClient,
    run: &RunRecord,
) -> Result<(), StoreError> {
    let o = &run.outcome;
    let u = o.usage.unwrap_or_default();
    let replaces = run.finished_at.is_some() || *o != RunOutcome::default();
    let status = o.status.as_ref().map(ToString::to_string);
    let pid = run.process.map(|p| i64::from(p.pid));
    let pid_start = run.process.and_then(|p| i64::try_from(p.start).ok());
    let params: [&(dyn ToSql + Sync); 25] = [
        &run.run_id,
        &run.hook_id.as_str(),
        &run.session_id.as_str(),
        &run.owner,
        &pid,
        &pid_start,
        &run.started_at,
        &run.finished_at,
        &status,
        &o.exit_code,
        &o.completed,
        &i64_of(o.num_turns),
        &o.cost_usd,
        &i64_of(u.input_tokens),
        &i64_of(u.cache_creation_input_tokens),
        &i64_of(u.cache_read_input_tokens),
        &i64_of(u.output_tokens),
        &o.usage.is_some(),
        &i64_of(o.duration_ms),
        &o.session_id,
        &o.result_text,
        &run.estimated_cost_usd,
        &run.model,
        &run.delivered,
        &replaces,
    ];
    let outcome_cols = [
        "status",
        "exit_code",
        "completed",
        "num_turns",
        "cost_usd",
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
        "has_usage",
        "duration_ms",
        "cli_session_id",
        "result_text",
    ];
    let replace_outcome: Vec<String> = outcome_cols
        .iter()
        .map(|c| format!("{c} = CASE WHEN $25 THEN EXCLUDED.{c} ELSE runs.{c} END"))
        .collect();
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
         $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24) \
         ON CONFLICT (run_id) DO UPDATE SET \
           owner = COALESCE(EXCLUDED.owner, runs.owner), \
           pid = COALESCE(EXCLUDED.pid, runs.pid), pid_start = COALESCE(EXCLUDED.pid_start, runs.pid_start), \
           finished_at = COALESCE(EXCLUDED.finished_at, runs.finished_at), \
           estimated_cost_usd = COALESCE(EXCLUDED.estimated_cost_usd, runs.estimated_cost_usd), \
           model = COALESCE(EXCLUDED.model, runs.model), \
           delivered = EXCLUDED.delivered OR runs.delivered, {} \
",
        replace_outcome.join(", ")
    );
    c.execute(&sql, &params)
        .await
        .map(|_| ())
        .map_err(super::db)
}

pub fn budget_from_row(r: &Row) -> Result<cost::Budget, StoreError> {
    let bad = |e: ValidationError| corrupt("budget", "the budget", &e);
    Ok(cost::Budget {
        daily: CostCap::from_usd(r.get(0)).map_err(bad)?,
        time_zone: r.get(1),
        when_reached: cost::WhenReached::parse(r.get(2)).map_err(bad)?,
    })
}

pub const SESSION_COLUMNS: &str = "session_id, cwd, transcript_path, origin, lease_run_id, \
     lease_hook_id, lease_owner, lease_host, lease_owner_pid, lease_owner_start, lease_child_pid, \
     lease_child_start, lease_started_at, lease_expires_at";

/// The lease columns set from `$2` to `$11` (`$1` is the session).
pub const LEASE_SET: &str = "lease_run_id = $2, lease_hook_id = $3, lease_owner = $4, \
     lease_host = $5, lease_owner_pid = $6, lease_owner_start = $7, lease_child_pid = $8, \
     lease_child_start = $9, lease_started_at = $10, lease_expires_at = $11";

/// The lease columns cleared.
pub const LEASE_CLEAR: &str = "lease_run_id = NULL, lease_hook_id = NULL, lease_owner = NULL, \
     lease_host = NULL, lease_owner_pid = NULL, lease_owner_start = NULL, lease_child_pid = NULL, \
     lease_child_start = NULL, lease_started_at = NULL, lease_expires_at = NULL";

fn process(pid: Option<i64>, start: Option<i64>) -> Option<ProcessRef> {
    Some(ProcessRef {
        pid: u32::try_from(pid?).ok()?,
        start: u64::try_from(start?).ok()?,
    })
}

/// A session's row by `SESSION_COLUMNS`: its state (without stamps) and its lease. A lease
/// that does not read still holds the session until it expires at once, as in the files.
pub fn session_from_row(r: &Row) -> (SessionState, Option<RunLease>) {
    let state = {
        let mut o = SessionState::default();
        o.cwd = r.get(1);
        o.transcript_path = r.get(2);
        o.origin = r
            .get::<_, Option<&str>>(3)
            .and_then(|o| Origin::parse(o).ok());
        o.stamps = Default::default();
        // The meta tells it from the agent's files; it is not kept.
        o.agent = None;
        o
    };
    let lease = r.get::<_, Option<String>>(4).map(|run_id| {
        let read = || -> Option<RunLease> {
            Some(RunLease {
                run_id: run_id.clone(),
                hook_id: HookId::parse(r.get::<_, Option<&str>>(5)?).ok()?,
                owner: r.get::<_, Option<String>>(6)?,
                host: r.get::<_, Option<String>>(7).unwrap_or_default(),
                owner_process: process(r.get(8), r.get(9)),
                child: process(r.get(10), r.get(11)),
                started_at: r.get::<_, Option<Timestamp>>(12)?,
                expires_at: r.get::<_, Option<Timestamp>>(13)?,
            })
        };
        read().unwrap_or_else(|| RunLease {
            run_id: run_id.clone(),
            hook_id: post_task_id(),
            owner: "unknown".to_owned(),
            host: String::new(),
            owner_process: None,
            child: None,
            started_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: OffsetDateTime::UNIX_EPOCH,
        })
    });
    (state, lease)
}

/// Owned parameters of `LEASE_SET`.
pub struct LeaseParams {
    session: String,
    run_id: String,
    hook: String,
    owner: String,
    host: String,
    owner_pid: Option<i64>,
    owner_start: Option<i64>,
    child_pid: Option<i64>,
    child_start: Option<i64>,
    started: OffsetDateTime,
    expires: OffsetDateTime,
}

impl LeaseParams {
    pub fn of(session: &SessionId, l: &RunLease) -> Self {
        let pid = |p: Option<ProcessRef>| p.map(|p| i64::from(p.pid));
        let start = |p: Option<ProcessRef>| p.and_then(|p| i64::try_from(p.start).ok());
        Self {
            session: session.to_string(),
            run_id: l.run_id.clone(),
            hook: l.hook_id.to_string(),
            owner: l.owner.clone(),
            host: l.host.clone(),
            owner_pid: pid(l.owner_process),
            owner_start: start(l.owner_process),
            child_pid: pid(l.child),
            child_start: start(l.child),
            started: l.started_at,
            expires: l.expires_at,
        }
    }

    pub fn as_refs(&self) -> [&(dyn ToSql + Sync); 11] {
        [
            &self.session,
            &self.run_id,
            &self.hook,
            &self.owner,
            &self.host,
            &self.owner_pid,
            &self.owner_start,
            &self.child_pid,
            &self.child_start,
            &self.started,
            &self.expires,
        ]
    }
}
