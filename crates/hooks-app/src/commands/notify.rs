//! `notify`: queue the hooks for a conversation by hand.

use hooks_core::service::{NotifyEvent, NotifyOutcome};
use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppError, AppResult, Context};
use hooks_core::lookup::SessionLookup;

pub fn notify(
    ctx: &Context,
    session: &str,
    event: &str,
    cwd: Option<String>,
    transcript: Option<String>,
    origin: Option<String>,
    json: bool,
) -> AppResult {
    // What cannot be a conversation is refused here, naming the field, rather than queued
    // to be retried for ten minutes with the reason only in the daemon's log.
    let absolute = |p: String| {
        std::path::absolute(&p)
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or(p)
    };
    let cwd = cwd.map(absolute);
    if let Some(c) = &cwd
        && !std::path::Path::new(c).is_dir()
    {
        return Err(AppError::invalid(format!(
            "cwd: must be an existing folder; there is none at {c}"
        )));
    }
    let transcript = transcript.map(absolute);
    if let Some(t) = &transcript
        && !std::fs::metadata(t).is_ok_and(|m| m.is_file())
    {
        return Err(AppError::invalid(format!(
            "transcript: must be a conversation's transcript file; there is none at {t}"
        )));
    }
    let event_name = event;
    let event = Event::parse(event)?;
    let origin = origin.as_deref().map(Origin::parse).transpose()?;
    let parsed = SessionId::parse(session)?;
    let (svc, _) = service(ctx)?;
    // Without a transcript, the session must be one this host knows (a whole id, or a
    // prefix only one known conversation starts with): a follow-up needs its transcript.
    let session = match &transcript {
        Some(_) => parsed,
        None => match block_on(svc.find_session(session))? {
            Ok(s) => s,
            Err(SessionLookup::Unknown(m)) => {
                return Err(AppError::invalid(format!(
                    "session: {m}; name its transcript with --transcript"
                )));
            }
            Err(e) => return Err(e.into()),
        },
    };
    let ev = NotifyEvent {
        failure: None,
        session,
        event,
        update: SessionUpdate {
            cwd,
            transcript_path: transcript,
            origin,
        },
        subagent: false,
    };
    let reports = block_on(svc.notify_checked(&ev))??;
    if json {
        print_json(&Value::Array(
            reports
                .iter()
                .map(|r| match &r.outcome {
                    NotifyOutcome::Queued { due_at } => json!({"hookId": r.hook_id.as_str(), "outcome": "queued", "reason": null, "dueAt": stamp::format(*due_at)}),
                    NotifyOutcome::Skipped(why) => json!({"hookId": r.hook_id.as_str(), "outcome": "skipped", "reason": why.to_string(), "dueAt": null}),
                })
                .collect(),
        ));
    } else {
        for r in &reports {
            match &r.outcome {
                NotifyOutcome::Queued { due_at } => {
                    crate::say!("{}: queued, due {}", r.hook_id, stamp::format(*due_at))
                }
                NotifyOutcome::Skipped(why) => crate::say!("{}: skipped ({why})", r.hook_id),
            }
        }
        if reports.is_empty() {
            crate::say!("no hook listens to {event_name}");
        }
    }
    Ok(())
}
