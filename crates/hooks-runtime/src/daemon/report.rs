//! What the daemon's log says of each fired entry.

use hooks_core::service::{FireAction, FireReport};
use hooks_core::stamp;
use tracing::{info, warn};

pub fn log_report(r: &FireReport) {
    let (hook, session) = (r.key.hook_id.as_str(), r.key.session_id.as_str());
    for w in &r.warnings {
        warn!(hook, session, "{w}");
    }
    match &r.action {
        FireAction::Waiting { due_at, waiting } => {
            info!(hook, session, until = %stamp::format(*due_at), reason = %waiting.reason, "waiting")
        }
        FireAction::Recovered(status) => {
            warn!(hook, session, status = %status, "its run had been started by a daemon that died")
        }
        FireAction::Dropped => info!(hook, session, "dropped: the hook was deleted or disabled"),
        FireAction::Finished(status) => info!(hook, session, status = %status, "not run"),
        FireAction::Retried {
            due_at,
            retries,
            why,
        } => {
            info!(hook, session, retries, due_at = %stamp::format(*due_at), reason = %why, "put back")
        }
        FireAction::LostStamp { at } => {
            info!(hook, session, stamped_at = %stamp::format(*at), "not run: another process fired it")
        }
        FireAction::Ran(run) => {
            let o = &run.outcome;
            info!(
                hook,
                session,
                status = %o.status(),
                // As people read them (and JSON keeps them typed), not Rust's `Some(false)`.
                completed = %o.completed.map_or("unknown", |c| if c { "yes" } else { "no" }),
                cost_usd = %o.cost_usd.map(|c| format!("{c:.4}")).unwrap_or_else(|| "unknown".into()),
                duration_ms = %o.duration_ms.map_or_else(|| "unknown".into(), |d| d.to_string()),
                "finished"
            )
        }
        FireAction::Limited {
            due_at,
            waiting,
            run,
        } => {
            info!(
                hook,
                session,
                status = %run.outcome.status(),
                until = %stamp::format(*due_at),
                reason = %waiting.reason,
                "hit a limit: back in the queue"
            )
        }
        FireAction::Fenced => warn!(
            hook,
            session, "the claim was lost before what was decided could be written"
        ),
    }
}
