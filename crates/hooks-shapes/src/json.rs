//! The JSON shapes of the CLI's `--json` output (spec §5), built from the core's types.
//!
//! They use the store file's field names, so a script that reads `hooks.json` reads these
//! too, but they are this module's: any store (a file today, a database tomorrow) gives the
//! same output, and a store's on-disk schema can change without changing them.

use hooks_core::cost::{Budget, BudgetView};
use hooks_core::stamp;
use hooks_core::{Hook, Pause, PendingEntry, RunRecord};
use serde_json::{Map, Value, json};

/// A hook: `hooks list|show --json`.
pub fn hook(h: &Hook) -> Value {
    let mut v = Map::new();
    v.insert("id".into(), json!(h.id.as_str()));
    v.insert("name".into(), json!(h.name));
    v.insert("event".into(), json!(h.event.as_str()));
    v.insert("delaySeconds".into(), json!(h.delay.seconds()));
    v.insert("promptFile".into(), json!(h.prompt_file.as_str()));
    v.insert("enabled".into(), json!(h.enabled));
    v.insert("skipCron".into(), json!(h.skip_cron));
    v.insert("skipSubagents".into(), json!(h.skip_subagents));
    v.insert("maxContextK".into(), json!(h.max_context.k()));
    if let Some(l) = h.max_lateness.limit() {
        v.insert("maxLatenessSeconds".into(), json!(l.whole_seconds()));
    }
    if let Some(usd) = h.max_cost.usd() {
        v.insert("maxCostUsd".into(), json!(usd));
    }
    if h.deliver != hooks_core::Delivery::Auto {
        v.insert("deliver".into(), json!(h.deliver.as_str()));
    }
    // Absent for every agent, as in the store.
    if h.agent != hooks_core::AgentScope::All {
        v.insert("agent".into(), json!(h.agent.as_str()));
    }
    if h.repeat != hooks_core::Repeat::Once {
        v.insert("repeat".into(), json!(h.repeat.as_str()));
    }
    if h.event == hooks_core::Event::ConversationFailed {
        v.insert("errors".into(), json!(h.errors.names()));
    }
    v.insert("createdAt".into(), json!(h.created_at.map(stamp::format)));
    v.insert(
        "lastStatus".into(),
        json!(h.last_status.as_ref().map(ToString::to_string)),
    );
    let history: std::collections::BTreeMap<&str, &str> = h
        .history
        .entries()
        .iter()
        .map(|e| (e.key.as_str(), e.session.as_str()))
        .collect();
    v.insert("history".into(), json!(history));
    Value::Object(v)
}

/// Each conversation's agent by session, as `hooks_core::service::agents_of` gives it.
pub type Agents = std::collections::BTreeMap<hooks_core::SessionId, String>;

/// `v` (a pending entry's or a run's object) with `agent`: the agent of its conversation,
/// `null` when the app knows nothing of the conversation.
fn with_agent(mut v: Value, agents: &Agents, session: &hooks_core::SessionId) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.insert("agent".into(), json!(agents.get(session)));
    }
    v
}

/// Pending entries with their conversations' agents: `pending --json`, the API's queue.
pub fn pending_list(entries: &[PendingEntry], agents: &Agents) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| with_agent(pending(e), agents, &e.session_id))
            .collect(),
    )
}

/// Runs with their conversations' agents: `runs --json`, the API's run log.
pub fn run_list(runs: &[RunRecord], agents: &Agents) -> Value {
    Value::Array(
        runs.iter()
            .map(|r| with_agent(run(r), agents, &r.session_id))
            .collect(),
    )
}

/// A pending entry: `pending --json`.
pub fn pending(e: &PendingEntry) -> Value {
    let mut v = Map::new();
    v.insert("hookId".into(), json!(e.hook_id.as_str()));
    v.insert("sessionId".into(), json!(e.session_id.as_str()));
    v.insert("dueAt".into(), json!(e.became_due().to_string()));
    if let Some(q) = e.queued_at {
        v.insert("queuedAt".into(), json!(stamp::format(q)));
    }
    v.insert("retries".into(), json!(e.retries));
    // Counted apart from the not-ready looks, and shown where there are some.
    if e.attempts > 0 {
        v.insert("attempts".into(), json!(e.attempts));
    }
    if e.not_taken > 0 {
        v.insert("notTaken".into(), json!(e.not_taken));
    }
    if let Some(c) = &e.claim {
        v.insert("claimedBy".into(), json!(c.owner));
        v.insert("claimExpiresAt".into(), json!(stamp::format(c.expires_at)));
    }
    if let Some(w) = &e.waiting {
        v.insert(
            "waiting".into(),
            json!({
                "reason": w.reason,
                "since": stamp::format(w.since),
                "open": w.waits_for_close(),
                "kind": w.kind.as_str(),
            }),
        );
    }
    if let Some(t) = e.gives_up_at() {
        v.insert("givesUpAt".into(), json!(stamp::format(t)));
    }
    if let Some(k) = e.error {
        v.insert("error".into(), json!(k.as_str()));
    }
    Value::Object(v)
}

/// A run, its log lines folded: `runs --json`, `status --json`.
pub fn run(r: &RunRecord) -> Value {
    let o = &r.outcome;
    let mut v = Map::new();
    if let Some(id) = &r.run_id {
        v.insert("runId".into(), json!(id));
    }
    v.insert("hookId".into(), json!(r.hook_id.as_str()));
    v.insert("sessionId".into(), json!(r.session_id.as_str()));
    if let Some(owner) = &r.owner {
        v.insert("owner".into(), json!(owner));
    }
    if let Some(p) = r.process {
        v.insert("pid".into(), json!(p.pid));
        v.insert("procStart".into(), json!(p.start));
    }
    v.insert("startedAt".into(), json!(stamp::format(r.started_at)));
    if let Some(f) = r.finished_at {
        v.insert("finishedAt".into(), json!(stamp::format(f)));
    }
    let done = r.finished_at.is_some() || o.status.is_some();
    v.insert("status".into(), json!(done.then(|| o.status().to_string())));
    v.insert("exitCode".into(), json!(o.exit_code));
    v.insert("completed".into(), json!(o.completed));
    v.insert("numTurns".into(), json!(o.num_turns));
    v.insert("costUsd".into(), json!(o.cost_usd));
    if let Some(e) = r.estimated_cost_usd {
        v.insert("estimatedCostUsd".into(), json!(e));
    }
    if let Some(m) = &r.model {
        v.insert("model".into(), json!(m));
    }
    v.insert(
        "usage".into(),
        json!(o.usage.map(|u| json!({
            "inputTokens": u.input_tokens,
            "cacheCreationInputTokens": u.cache_creation_input_tokens,
            "cacheReadInputTokens": u.cache_read_input_tokens,
            "outputTokens": u.output_tokens,
        }))),
    );
    v.insert("durationMs".into(), json!(o.duration_ms));
    if let Some(reply) = &o.result_text {
        v.insert("reply".into(), json!(reply));
    }
    if r.started() {
        // How it reached the conversation: a turn in the open TUI, or a resume.
        v.insert(
            "delivery".into(),
            json!(if r.delivered { "open" } else { "resumed" }),
        );
    }
    if let Some(d) = r.took() {
        v.insert("tookMs".into(), json!(d.whole_milliseconds()));
    }
    Value::Object(v)
}

/// The pause as `status --json` and the API show it.
/// What a follow-up at a time queued (`after`, `every`, `POST
/// /api/v1/sessions/{id}/follow-ups`): the conversation, the prompt file, and each
/// occurrence's hook and due time.
pub fn scheduled(session: &hooks_core::SessionId, s: &hooks_core::schedule::Scheduled) -> Value {
    json!({
        "sessionId": session.as_str(),
        "promptFile": s.prompt_file.as_str(),
        "followUps": s.occurrences.iter().map(|(h, t)| json!({
            "hookId": h.as_str(),
            "dueAt": hooks_core::stamp::format(*t),
        })).collect::<Vec<_>>(),
    })
}

/// What a send did (`send`, `POST /api/v1/sessions/{id}/prompts`): `sent` and its hook,
/// or `sent: false` with how the first send of its key went (`status`, null while queued).
pub fn sent(session: &hooks_core::SessionId, s: &hooks_core::schedule::Sent) -> Value {
    use hooks_core::schedule::Sent;
    match s {
        Sent::Queued(q) => {
            let mut v = scheduled(session, q);
            v["sent"] = json!(true);
            v["hookId"] = json!(q.occurrences.first().map(|(h, _)| h.as_str()));
            v
        }
        Sent::Already { hook, status } => json!({
            "sessionId": session.as_str(),
            "sent": false,
            "hookId": hook.as_str(),
            "status": status.as_ref().map(ToString::to_string),
        }),
    }
}

pub fn pause(p: Option<&Pause>) -> Value {
    match p {
        None => json!({"paused": false}),
        Some(p) => json!({
            "paused": true,
            "since": stamp::format(p.since),
            "until": p.until.map(stamp::format),
            "by": p.by,
        }),
    }
}

/// The daily budget: `budget show --json`, `status --json` and the API.
pub fn budget(b: &Budget, v: &BudgetView) -> Value {
    json!({
        "dailyUsd": v.daily_usd,
        "timeZone": b.time_zone,
        "whenReached": b.when_reached.as_str(),
        "today": v.today.date.to_string(),
        "spentTodayUsd": v.spent_today,
        "leftTodayUsd": (v.daily_usd - v.spent_today).max(0.0),
    })
}

/// What is known about a conversation: `session --json`, `GET /api/v1/sessions/{id}`.
pub fn session(r: &hooks_core::lookup::SessionReport) -> Value {
    let facts = &r.facts;
    let t = facts.transcript.as_ref();
    let known_subagent = t.is_some() || facts.state.transcript_path.is_some();
    let lease = facts.lease.as_ref().map(|l| {
        json!({
            "runId": l.lease.run_id,
            "hookId": l.lease.hook_id.as_str(),
            "owner": l.lease.owner,
            "startedAt": stamp::format(l.lease.started_at),
            "expiresAt": stamp::format(l.lease.expires_at),
            "live": l.is_live(r.now),
        })
    });
    let estimates: Vec<Value> = r
        .estimates
        .iter()
        .map(|e| {
            json!({
                "hookId": e.hook_id.as_str(),
                "estimatedCostUsd": e.usd,
                "model": e.model,
                "maxCostUsd": e.max_cost_usd,
                "text": e.text,
                "skippedBecause": e.skipped_because,
            })
        })
        .collect();
    json!({
        "sessionId": r.session.as_str(),
        "transcriptPath": t.map(|t| t.path.clone()).or_else(|| facts.state.transcript_path.clone()),
        "cwd": facts.cwd(),
        "subagent": known_subagent.then(|| facts.is_subagent()),
        "contextTokens": t.and_then(|t| t.context_tokens),
        "model": t.and_then(|t| t.model.clone()),
        "agent": t.map(|t| t.agent.clone().unwrap_or_else(|| "claude".to_owned())),
        "estimates": estimates,
        "lastChange": t.and_then(|t| t.last_change).map(stamp::format),
        "origin": facts.state.origin.map(hooks_core::Origin::as_str),
        "stamps": facts.state.stamps.iter().map(|(k, v)| (k.to_string(), Value::from(stamp::format(*v)))).collect::<Map<_, _>>(),
        "openIn": facts.open.as_ref().map(|o| json!({"agent": o.agent, "pid": o.pid, "kind": o.kind, "status": o.status})),
        "lease": lease,
        "pending": r.pending.iter().map(|p| json!({
            "hookId": p.hook_id.as_str(),
            "dueAt": p.became_due().to_string(),
            "givesUpAt": p.gives_up_at().map(stamp::format),
            "waiting": p.waiting.as_ref().map(|w| w.reason.clone()),
        })).collect::<Vec<_>>(),
        "runs": r.runs.iter().map(run).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    //! The shapes as `--json` printed them when they were the JSON store's own file format,
    //! field for field and in that order: scripts that read them keep working.
    use super::*;
    use hooks_core::*;
    use time::Duration;

    fn t(s: &str) -> stamp::Timestamp {
        stamp::parse(s).expect("a time")
    }

    fn hooks() -> Vec<Hook> {
        let mut h = HookSpec::post_task().into_hook(post_task_id(), t("2026-11-01T00:00:00+0000"));
        let bare = h.clone();
        h.history.push(t("2026-11-02T10:00:00+0000"), "s1");
        h.history.push(t("2026-11-02T10:00:00+0000"), "s2");
        h.last_status = Some(Status::skipped("context 83k over the 60k cap"));
        h.max_cost = CostCap::parse("0.5").expect("cap");
        let mut no_created = bare.clone();
        no_created.created_at = None;
        vec![h, bare, no_created]
    }

    #[test]
    fn a_hook_is_shown_as_the_store_keeps_it() {
        let want = [
            r#"{"id":"post-task","name":"Post-task follow-up","event":"conversation-done","delaySeconds":10,"promptFile":".claude/agents/hooks/post-task.md","enabled":true,"skipCron":true,"skipSubagents":true,"maxContextK":60,"maxCostUsd":0.5,"createdAt":"2026-11-01T00:00:00+0000","lastStatus":"skipped: context 83k over the 60k cap","history":{"2026-11-02T10:00:00+0000":"s1","2026-11-02T10:00:00.000000+0000":"s2"}}"#,
            r#"{"id":"post-task","name":"Post-task follow-up","event":"conversation-done","delaySeconds":10,"promptFile":".claude/agents/hooks/post-task.md","enabled":true,"skipCron":true,"skipSubagents":true,"maxContextK":60,"createdAt":"2026-11-01T00:00:00+0000","lastStatus":null,"history":{}}"#,
            r#"{"id":"post-task","name":"Post-task follow-up","event":"conversation-done","delaySeconds":10,"promptFile":".claude/agents/hooks/post-task.md","enabled":true,"skipCron":true,"skipSubagents":true,"maxContextK":60,"createdAt":null,"lastStatus":null,"history":{}}"#,
        ];
        for (h, want) in hooks().iter().zip(want) {
            assert_eq!(hook(h).to_string(), want);
        }
    }

    #[test]
    fn a_pending_entry_is_shown_as_the_store_keeps_it() {
        let base = {
            let mut o = PendingEntry::new(
                post_task_id(),
                SessionId::parse("s1").expect("id"),
                DueAt::At(t("2026-12-01T00:00:10+0000")),
            );
            o.error = None;
            o.queued_at = Some(t("2026-12-01T00:00:00+0000"));
            o.retries = 2;
            o.claim = None;
            o.waiting = None;
            o
        };
        let claimed = {
            let mut o = base.clone();
            o.claim = Some(Claim {
                owner: "vm:42:abc".into(),
                expires_at: t("2026-12-01T00:01:40+0000"),
            });
            o.waiting = Some(Waiting::new(
                WaitKind::Open,
                "conversation open in claude, pid 7, interactive, idle",
                t("2026-12-01T00:00:20+0000"),
            ));
            // Waiting for the conversation to close, it is kept until it gives up.
            o.due_at = DueAt::At(t("2026-12-02T00:00:20+0000"));
            o
        };
        let legacy = {
            let mut o = base.clone();
            o.due_at = DueAt::Unparseable("soon".into());
            o.queued_at = None;
            o
        };
        let want = [
            r#"{"hookId":"post-task","sessionId":"s1","dueAt":"2026-12-01T00:00:10+0000","queuedAt":"2026-12-01T00:00:00+0000","retries":2}"#,
            r#"{"hookId":"post-task","sessionId":"s1","dueAt":"2026-12-01T00:00:20+0000","queuedAt":"2026-12-01T00:00:00+0000","retries":2,"claimedBy":"vm:42:abc","claimExpiresAt":"2026-12-01T00:01:40+0000","waiting":{"reason":"conversation open in claude, pid 7, interactive, idle","since":"2026-12-01T00:00:20+0000","open":true,"kind":"open"},"givesUpAt":"2026-12-02T00:00:20+0000"}"#,
            r#"{"hookId":"post-task","sessionId":"s1","dueAt":"soon","retries":2}"#,
        ];
        for (e, want) in [base, claimed, legacy].iter().zip(want) {
            assert_eq!(pending(e).to_string(), want);
        }
    }

    #[test]
    fn a_run_is_shown_as_the_run_log_keeps_it() {
        let started = {
            let mut o = RunRecord::new(
                post_task_id(),
                SessionId::parse("s1").expect("id"),
                t("2026-12-01T00:00:10+0000"),
            );
            o.run_id = Some("vm:42:abc#3".into());
            o.owner = Some("vm:42:abc".into());
            o.process = None;
            o.finished_at = None;
            o.outcome = RunOutcome::default();
            o.estimated_cost_usd = Some(0.42);
            o.model = Some("claude-sonnet-4-5".into());
            o.delivered = false;
            o
        };
        let finished = {
            let mut o = started.clone();
            o.process = Some(ProcessRef {
                pid: 4242,
                start: 99,
            });
            o.finished_at = Some(started.started_at + Duration::seconds(30));
            o.outcome = {
                let mut o = RunOutcome::default();
                o.api_error_status = None;
                o.status = Some(Status::Ok);
                o.exit_code = Some(0);
                o.completed = Some(true);
                o.num_turns = Some(3);
                o.cost_usd = Some(0.38);
                o.usage = Some({
                    let mut o = Usage::default();
                    o.input_tokens = Some(10);
                    o.cache_creation_input_tokens = Some(100_000);
                    o.cache_read_input_tokens = None;
                    o.output_tokens = Some(900);
                    o
                });
                o.duration_ms = Some(30_000);
                o.session_id = None;
                o.result_text = None;
                o
            };
            o
        };
        let legacy = {
            let mut o = finished.clone();
            o.run_id = None;
            o.owner = None;
            o.estimated_cost_usd = None;
            o.model = None;
            o
        };
        let want = [
            r#"{"runId":"vm:42:abc#3","hookId":"post-task","sessionId":"s1","owner":"vm:42:abc","startedAt":"2026-12-01T00:00:10+0000","status":null,"exitCode":null,"completed":null,"numTurns":null,"costUsd":null,"estimatedCostUsd":0.42,"model":"claude-sonnet-4-5","usage":null,"durationMs":null,"delivery":"resumed"}"#,
            r#"{"runId":"vm:42:abc#3","hookId":"post-task","sessionId":"s1","owner":"vm:42:abc","pid":4242,"procStart":99,"startedAt":"2026-12-01T00:00:10+0000","finishedAt":"2026-12-01T00:00:40+0000","status":"ok","exitCode":0,"completed":true,"numTurns":3,"costUsd":0.38,"estimatedCostUsd":0.42,"model":"claude-sonnet-4-5","usage":{"inputTokens":10,"cacheCreationInputTokens":100000,"cacheReadInputTokens":null,"outputTokens":900},"durationMs":30000,"delivery":"resumed","tookMs":30000}"#,
            r#"{"hookId":"post-task","sessionId":"s1","pid":4242,"procStart":99,"startedAt":"2026-12-01T00:00:10+0000","finishedAt":"2026-12-01T00:00:40+0000","status":"ok","exitCode":0,"completed":true,"numTurns":3,"costUsd":0.38,"usage":{"inputTokens":10,"cacheCreationInputTokens":100000,"cacheReadInputTokens":null,"outputTokens":900},"durationMs":30000,"delivery":"resumed","tookMs":30000}"#,
        ];
        for (r, want) in [started, finished, legacy].iter().zip(want) {
            assert_eq!(run(r).to_string(), want);
        }
    }
}
