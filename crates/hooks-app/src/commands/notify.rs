//! `notify`: queue the hooks for a conversation by hand.

use hooks_core::service::{NotifyEvent, NotifyOutcome};
use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppResult, Context};

pub fn notify(
    ctx: &Context,
    session: &str,
    event: &str,
    cwd: Option<String>,
    transcript: Option<String>,
    origin: Option<String>,
    json: bool,
) -> AppResult {
    let ev = NotifyEvent {
        failure: None,
        session: SessionId::parse(session)?,
        event: Event::parse(event)?,
        update: SessionUpdate {
            cwd: cwd.map(|c| {
                std::path::absolute(&c)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or(c)
            }),
            transcript_path: transcript.map(|t| {
                std::path::absolute(&t)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or(t)
            }),
            origin: origin.as_deref().map(Origin::parse).transpose()?,
        },
        subagent: false,
    };
    let (svc, _) = service(ctx)?;
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
            crate::say!("no hook listens to {event}");
        }
    }
    Ok(())
}
