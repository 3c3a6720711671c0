//! `hooks run ID --session S [--force]`: a follow-up now, on demand. It is queued due now
//! and goes through every check a queued follow-up meets; the command then waits for what
//! becomes of it (a daemon runs it: the on-demand one is started if need be).

use std::time::{Duration, Instant};

use hooks_core::service::RunNowQueue;
use hooks_core::*;
use serde_json::json;

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppError, AppResult, Context};

/// How long the command waits for the outcome before leaving it to the daemon.
const WAIT: Duration = Duration::from_secs(600);

pub fn run(
    ctx: &Context,
    id: &str,
    session: &str,
    force: bool,
    no_wait: bool,
    json: bool,
) -> AppResult {
    let hook = HookId::parse(id)?;
    SessionId::parse(session)?;
    let (svc, store) = service(ctx)?;
    let sid = block_on(svc.find_session(session))??;
    let r = block_on(svc.run_now(&hook, &sid, force))??;
    let queued = match &r.queued {
        RunNowQueue::Skipped(status) => {
            if json {
                print_json(
                    &json!({"hookId": hook.as_str(), "sessionId": sid.as_str(), "status": status.to_string()}),
                );
            } else {
                crate::say!("{hook} on {sid}: {status} (--force runs it again)");
            }
            return Ok(());
        }
        RunNowQueue::Queued => "queued",
        RunNowQueue::AlreadyQueued { woken: true } => "was queued and waiting; made due now",
        RunNowQueue::AlreadyQueued { woken: false } => "was queued already",
    };
    let said = format!(
        "{hook} on {sid}: {queued}{}",
        if r.unstamped {
            " (its earlier follow-up forgotten: --force)"
        } else {
            ""
        }
    );
    let started = crate::daemon::ondemand::ensure_running(ctx, false)?;
    let daemon = started || crate::daemon::ondemand::daemon_running(&ctx.data_dir);
    if no_wait || !daemon {
        let next = if daemon {
            "the daemon runs it"
        } else {
            "no daemon runs: `hooks-app serve` (or `tick`) runs it"
        };
        if json {
            print_json(
                &json!({"hookId": hook.as_str(), "sessionId": sid.as_str(), "queued": queued, "unstamped": r.unstamped, "outcome": null}),
            );
        } else {
            crate::say!("{said}; {next}");
        }
        return Ok(());
    }
    if !json {
        eprintln!("{said}; waiting for the daemon (Ctrl-C leaves it queued)");
    }
    let filter = RunFilter {
        hook_id: Some(hook.clone()),
        session_id: Some(sid.clone()),
        // Only what ran since it was asked for.
        since: Some(r.at),
        ..RunFilter::default()
    };
    let begun = Instant::now();
    loop {
        let ended = block_on(store.runs(&filter))??
            .into_iter()
            .rev()
            .find(|x| x.started_at >= r.at && x.finished_at.is_some());
        if let Some(run) = ended {
            if json {
                print_json(&hooks_shapes::json::run(&run));
            } else {
                let cost = run
                    .outcome
                    .cost_usd
                    .map(|c| format!(", cost {}", hooks_shapes::text::usd(c)))
                    .unwrap_or_default();
                crate::say!("{hook} on {sid}: {}{cost}", run.status_text());
            }
            return Ok(());
        }
        let pending = block_on(store.snapshot())??
            .pending
            .into_iter()
            .find(|p| p.hook_id == hook && p.session_id == sid);
        if let Some(p) = &pending
            && let Some(w) = &p.waiting
            && w.kind != hooks_core::WaitKind::Quiet
        {
            // Waiting (but for seconds of quiet) is an outcome for now: it runs when what it
            // waits for ends.
            if json {
                print_json(&hooks_shapes::json::pending(p));
            } else {
                crate::say!("{hook} on {sid}: waits: {}", w.reason);
            }
            return Ok(());
        }
        if begun.elapsed() > WAIT {
            return Err(AppError::runtime(format!(
                "{hook} on {sid}: no outcome after {} s; it stays queued (`hooks-app session {sid}` shows it)",
                WAIT.as_secs()
            )));
        }
        // Polling the store the daemon writes to; there is nothing to block on here.
        std::thread::sleep(Duration::from_millis(100));
    }
}
