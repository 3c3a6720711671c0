//! What the API reads from a request: JSON objects, queries, a hook's fields (the same
//! `HookPatch` the CLI builds), run filters, and Claude Code's events.

use std::sync::atomic::Ordering;

use hooks_core::service::{NotifyEvent, NotifyOutcome, NotifyReport};
use hooks_core::*;
use serde_json::{Map, Value, json};

use crate::state::*;

pub fn hook_id(id: &str) -> Result<HookId, ApiError> {
    HookId::parse(id).map_err(|e| ApiError::not_found("id", e.rule))
}

pub fn run_filter(q: &[(String, String)]) -> Result<RunFilter, ApiError> {
    let mut f = RunFilter::default();
    for (k, v) in q {
        match k.as_str() {
            "hook" => {
                f.hook_id = Some(HookId::parse(v).map_err(|e| ApiError::bad("hook", e.rule))?)
            }
            "session" => {
                f.session_id =
                    Some(SessionId::parse(v).map_err(|e| ApiError::bad("session", e.rule))?)
            }
            "limit" => {
                f.limit =
                    Some(RunFilter::parse_limit(v).map_err(|e| ApiError::bad("limit", e.rule))?)
            }
            other => {
                return Err(ApiError::bad(
                    other,
                    "is not a parameter of /runs (hook, session, limit)",
                ));
            }
        }
    }
    Ok(f)
}

pub const HOOK_FIELDS: &[&str] = &[
    "name",
    "promptFile",
    "delaySeconds",
    "event",
    "maxContextK",
    "maxCostUsd",
    "maxLatenessSeconds",
    "deliver",
    "agent",
    "repeat",
    "errors",
    "enabled",
    "skipCron",
    "skipSubagents",
];

pub fn check_fields(m: &Map<String, Value>) -> Result<(), ApiError> {
    match m.keys().find(|k| !HOOK_FIELDS.contains(&k.as_str())) {
        Some(k) => Err(ApiError::bad(
            // The field names come from the request; a bounded copy is named.
            &k.chars().take(64).collect::<String>(),
            format!("is not a field of a hook ({})", HOOK_FIELDS.join(", ")),
        )),
        None => Ok(()),
    }
}

pub fn text<'a>(m: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad(k, "must be a string")),
    }
}

pub fn flag(m: &Map<String, Value>, k: &str) -> Result<Option<bool>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::bad(k, "must be true or false")),
    }
}

pub fn number(m: &Map<String, Value>, k: &str) -> Result<Option<String>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(ApiError::bad(k, "must be a number")),
    }
}

pub fn spec_from(m: &Map<String, Value>) -> Result<HookSpec, ApiError> {
    check_fields(m)?;
    let name = text(m, "name")?.ok_or_else(|| ApiError::bad("name", "is required"))?;
    let pf = text(m, "promptFile")?.ok_or_else(|| ApiError::bad("promptFile", "is required"))?;
    let mut spec = HookSpec::new(name, PromptFile::parse(pf)?)?;
    spec.apply(&patch_from(m)?);
    Ok(spec)
}

pub fn patch_from(m: &Map<String, Value>) -> Result<HookPatch, ApiError> {
    check_fields(m)?;
    let mut p = HookPatch::default();
    if let Some(n) = text(m, "name")? {
        p.name = Some(validate_name(n)?);
    }
    if let Some(f) = text(m, "promptFile")? {
        p.prompt_file = Some(PromptFile::parse(f)?);
    }
    if let Some(d) = number(m, "delaySeconds")? {
        p.delay = Some(Delay::parse(&d)?);
    }
    if let Some(e) = text(m, "event")? {
        p.event = Some(Event::parse(e)?);
    }
    if let Some(k) = number(m, "maxContextK")? {
        p.max_context = Some(ContextCap::parse(&k)?);
    }
    if let Some(l) = number(m, "maxLatenessSeconds")? {
        p.max_lateness = Some(MaxLateness::parse(&l)?);
    }
    if let Some(d) = text(m, "deliver")? {
        p.deliver = Some(Delivery::parse(d)?);
    }
    if let Some(a) = text(m, "agent")? {
        p.agent = Some(AgentScope::parse(a)?);
    }
    if let Some(r) = text(m, "repeat")? {
        p.repeat = Some(Repeat::parse(r)?);
    }
    if let Some(c) = number(m, "maxCostUsd")? {
        p.max_cost = Some(CostCap::parse(&c)?);
    }
    match m.get("errors") {
        None => {}
        Some(Value::Array(items)) => {
            let names = items
                .iter()
                .map(|i| {
                    i.as_str()
                        .ok_or_else(|| ApiError::bad("errors", "must be a list of failure names"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            p.errors = Some(FailureKinds::new(&names)?);
        }
        Some(_) => return Err(ApiError::bad("errors", "must be a list of failure names")),
    }
    p.enabled = flag(m, "enabled")?;
    p.skip_cron = flag(m, "skipCron")?;
    p.skip_subagents = flag(m, "skipSubagents")?;
    Ok(p)
}

pub fn report_json(r: &NotifyReport) -> Value {
    match &r.outcome {
        NotifyOutcome::Queued { due_at } => {
            json!({"hookId": r.hook_id.as_str(), "outcome": "queued", "reason": null, "dueAt": stamp::format(*due_at)})
        }
        NotifyOutcome::Skipped(why) => {
            json!({"hookId": r.hook_id.as_str(), "outcome": "skipped", "reason": why.to_string(), "dueAt": null})
        }
    }
}

/// `POST /api/v1/events`: a Claude Code hook input (it has `hook_event_name`), or the fields
/// of `notify`. Answers with `notify --json`'s reports.
pub async fn events(
    s: &HttpState,
    caller: &Caller,
    bytes: &[u8],
    follow_up: Option<&str>,
    on_end: bool,
) -> Result<Vec<NotifyReport>, ApiError> {
    let m = json_object(bytes)?;
    s.metrics.events.fetch_add(1, Ordering::Relaxed);
    let hook = *caller == Caller::Hook;
    let reports = if m.contains_key("hook_event_name") {
        // A follow-up's own event changes nothing, as the command hook's
        // (`Service::ignores_follow_ups_event`).
        let session = m
            .get("session_id")
            .and_then(Value::as_str)
            .and_then(|sid| SessionId::parse(sid).ok());
        let done = !on_end && m.get("hook_event_name").and_then(Value::as_str) == Some("Stop");
        let ignored = match session {
            Some(session) => {
                s.svc
                    .ignores_follow_ups_event(&session, follow_up, done)
                    .await?
            }
            None => false,
        };
        if ignored {
            Vec::new()
        } else {
            s.backend.hook_input(bytes, on_end, hook).await?
        }
    } else if hook {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "hook_event_name",
            "the hook token sends Claude Code's hook input only",
        ));
    } else {
        const FIELDS: &[&str] = &["sessionId", "event", "cwd", "transcriptPath", "origin"];
        if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(ApiError::bad(
                &k.chars().take(64).collect::<String>(),
                format!(
                    "is not a field of an event ({}), nor is this a Claude Code hook input (hook_event_name)",
                    FIELDS.join(", ")
                ),
            ));
        }
        let sid =
            text(&m, "sessionId")?.ok_or_else(|| ApiError::bad("sessionId", "is required"))?;
        let ev = NotifyEvent {
            failure: None,
            session: SessionId::parse(sid)?,
            event: Event::parse(text(&m, "event")?.unwrap_or("conversation-done"))?,
            update: SessionUpdate {
                cwd: text(&m, "cwd")?.map(str::to_owned),
                transcript_path: text(&m, "transcriptPath")?.map(str::to_owned),
                origin: text(&m, "origin")?.map(Origin::parse).transpose()?,
            },
            subagent: false,
        };
        s.svc.notify_checked(&ev).await?
    };
    for r in &reports {
        match &r.outcome {
            NotifyOutcome::Queued { .. } => {
                s.metrics.queued.fetch_add(1, Ordering::Relaxed);
            }
            NotifyOutcome::Skipped(why) => {
                let reason = skip_label(why);
                *lock(&s.metrics.skipped)
                    .entry(reason.to_owned())
                    .or_default() += 1;
            }
        }
    }
    Ok(reports)
}

pub fn skip_label(why: &hooks_core::decide::SkipReason) -> &'static str {
    use hooks_core::decide::SkipReason as R;
    match why {
        R::Disabled => "disabled",
        R::AlreadyRan { .. } => "already_ran",
        R::CronSession => "cron_session",
        R::Subagent => "subagent",
        R::AlreadyPending => "already_pending",
        R::HookDeleted => "hook_deleted",
        R::NotItsError(_) => "not_its_error",
        R::FollowUpsTurn => "follow_up_turn",
    }
}
