//! What is known about one conversation, shared by `session`, the API and the page: the
//! id a person gave resolved to one conversation, its facts as JSON, and as sentences.

use hooks_core::ports::SessionMeta;
use hooks_core::service::Service;
use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::{AppError, AppResult};

/// Why text a person gave as a session id names no one conversation.
#[derive(Debug)]
pub enum SessionLookup {
    /// Not a session id at all.
    Invalid(AppError),
    /// A prefix several conversations share.
    Ambiguous(String),
    /// Nothing known by that id or prefix.
    Unknown(String),
}

impl From<SessionLookup> for AppError {
    fn from(e: SessionLookup) -> Self {
        match e {
            SessionLookup::Invalid(e) => e,
            SessionLookup::Ambiguous(m) => AppError::invalid(m),
            SessionLookup::Unknown(m) => AppError::runtime(m),
        }
    }
}

/// The shortest prefix of a session id accepted in its place.
pub const SESSION_PREFIX_MIN: usize = 8;

/// The conversation `text` names: its whole id, or a prefix of 8 or more characters only
/// one known conversation starts with. Known means remembered by hooks-app, with a
/// transcript, queued, or in the run log.
pub async fn resolve_session(
    meta: &dyn SessionMeta,
    store: &crate::compose::Store,
    text: &str,
) -> Result<SessionId, SessionLookup> {
    let text = text.trim();
    let asked = SessionId::parse(text).map_err(|e| SessionLookup::Invalid(e.into()))?;
    let store_err = |e: hooks_core::ports::StoreError| SessionLookup::Invalid(e.into());
    let (mut known, searched) = meta
        .sessions_starting(text)
        .await
        .map_err(|e| SessionLookup::Invalid(AppError::runtime(e.to_string())))?;
    let pending = store.snapshot().await.map_err(store_err)?.pending;
    let runs = store.runs(&RunFilter::default()).await.map_err(store_err)?;
    known.extend(
        pending
            .iter()
            .map(|p| &p.session_id)
            .chain(runs.iter().map(|r| &r.session_id))
            .filter(|s| s.as_str().starts_with(text))
            .cloned(),
    );
    known.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    known.dedup();
    if known.contains(&asked) {
        return Ok(asked);
    }
    let short = text.chars().count() < SESSION_PREFIX_MIN;
    match known.as_slice() {
        [one] if !short => Ok(one.clone()),
        _ if short => Err(SessionLookup::Unknown(format!(
            "no conversation {text}: not found in {searched}, the queue or the run log \
             (a prefix needs {SESSION_PREFIX_MIN} characters or more)"
        ))),
        [] | [_] => Err(SessionLookup::Unknown(format!(
            "no conversation {text}: not found in {searched}, the queue or the run log{}",
            if short {
                format!(" (a prefix needs {SESSION_PREFIX_MIN} characters or more)")
            } else {
                String::new()
            }
        ))),
        many => Err(SessionLookup::Ambiguous(format!(
            "session: {text} starts {} conversations ({}); give more of the id",
            many.len(),
            many.iter()
                .take(5)
                .map(SessionId::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// What is known about a conversation (`session --json`, `GET /api/v1/sessions/{id}`), with
/// the facts and entries it was built from.
pub async fn session_view(
    svc: &Service,
    meta: &dyn SessionMeta,
    store: &crate::compose::Store,
    sid: &SessionId,
) -> AppResult<(Value, SessionFacts, Vec<PendingEntry>)> {
    let facts = meta
        .facts(sid)
        .await
        .map_err(|e| AppError::runtime(e.to_string()))?;
    let t = facts.transcript.as_ref();
    let known_subagent = t.is_some() || facts.state.transcript_path.is_some();
    let pending: Vec<PendingEntry> = store
        .snapshot()
        .await?
        .pending
        .into_iter()
        .filter(|p| p.session_id == *sid)
        .collect();
    let now = svc.now();
    // What a follow-up of each enabled hook would cost now, and whether its cap allows it.
    let mut estimates = Vec::new();
    for h in svc.list_hooks().await?.iter().filter(|h| h.enabled) {
        let view = svc.estimate(h, &facts).await;
        let cap = h.max_cost.usd();
        let (text, usd, model, over) = match &view {
            Ok(v @ cost::CostView::Estimated(e)) => (
                format!("a follow-up now would cost {e}"),
                Some(e.usd),
                Some(e.model.clone()),
                cost::over_cap(h.max_cost, v),
            ),
            Ok(v) => (
                v.no_estimate().unwrap_or_default(),
                None,
                None,
                cost::over_cap(h.max_cost, v),
            ),
            Err(e) => (format!("no estimate: {e}"), None, None, None),
        };
        estimates.push(json!({
            "hookId": h.id.as_str(),
            "estimatedCostUsd": usd,
            "model": model,
            "maxCostUsd": cap,
            "text": text,
            "skippedBecause": over,
        }));
    }
    let runs = store
        .runs(&RunFilter {
            session_id: Some(sid.clone()),
            ..RunFilter::default()
        })
        .await?;
    let lease = facts.lease.as_ref().map(|l| {
        json!({
            "runId": l.lease.run_id,
            "hookId": l.lease.hook_id.as_str(),
            "owner": l.lease.owner,
            "startedAt": stamp::format(l.lease.started_at),
            "expiresAt": stamp::format(l.lease.expires_at),
            "live": l.is_live(now),
        })
    });
    let v = json!({
        "sessionId": sid.as_str(),
        "transcriptPath": t.map(|t| t.path.clone()).or_else(|| facts.state.transcript_path.clone()),
        "cwd": facts.cwd(),
        "subagent": known_subagent.then(|| facts.is_subagent()),
        "contextTokens": t.and_then(|t| t.context_tokens),
        "model": t.and_then(|t| t.model.clone()),
        "estimates": estimates,
        "lastChange": t.and_then(|t| t.last_change).map(stamp::format),
        "origin": facts.state.origin.map(Origin::as_str),
        "stamps": facts.state.stamps.iter().map(|(k, v)| (k.to_string(), Value::from(stamp::format(*v)))).collect::<serde_json::Map<_, _>>(),
        "openIn": facts.open.as_ref().map(|o| json!({"pid": o.pid, "kind": o.kind, "status": o.status})),
        "lease": lease,
        "pending": pending.iter().map(|p| json!({
            "hookId": p.hook_id.as_str(),
            "dueAt": p.became_due().to_string(),
            "givesUpAt": p.gives_up_at().map(stamp::format),
            "waiting": p.waiting.as_ref().map(|w| w.reason.clone()),
        })).collect::<Vec<_>>(),
        "runs": runs.iter().map(hooks_shapes::json::run).collect::<Vec<_>>(),
    });
    Ok((v, facts, pending))
}
