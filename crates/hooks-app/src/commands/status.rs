//! `status`: a summary of the store, the queue, the daemons, the budget and the pause.

use hooks_core::stamp;
use hooks_core::*;
use serde_json::json;

use crate::compose::block_on;
use crate::daemon::ondemand::daemon_running;
use crate::output::print_json;
use crate::{AppResult, Context};
use hooks_shapes::text::usd;

/// How far back `status` totals the run log.
const WINDOW_DAYS: i64 = 30;

pub fn status(ctx: &Context, as_json: bool) -> AppResult {
    let store = ctx.open_store()?;
    let snap = block_on(store.snapshot())??;
    let now = time::OffsetDateTime::now_utc();
    let due = snap
        .pending
        .iter()
        .filter(|p| p.due_at.is_due(now) && !p.is_claimed(now))
        .count();
    let claimed = snap.pending.iter().filter(|p| p.is_claimed(now)).count();
    // The next thing the clock brings: a try, not the give-up time of an entry that
    // waits for its conversation to close (closing it wakes that entry sooner).
    let next = snap
        .pending
        .iter()
        .filter(|p| !p.waits_for_close())
        .filter_map(|p| p.due_at.time())
        .filter(|t| *t > now)
        .min();
    let close_waits: Vec<_> = snap
        .pending
        .iter()
        .filter(|p| p.waits_for_close())
        .collect();
    let first_give_up = close_waits.iter().filter_map(|p| p.gives_up_at()).min();
    let runs = block_on(store.runs(&RunFilter {
        limit: Some(5),
        ..RunFilter::default()
    }))??;
    // The log grows without end: its totals are the last 30 days'.
    let all_runs = block_on(store.runs(&RunFilter {
        since: Some(time::OffsetDateTime::now_utc() - time::Duration::days(WINDOW_DAYS)),
        ..RunFilter::default()
    }))??;
    // A fold from +0.0: an empty sum of f64 is -0.0, which prints as `$-0.0000`.
    let cost: f64 = all_runs
        .iter()
        .filter_map(|r| r.outcome.cost_usd)
        .fold(0.0, |a, c| a + c);
    let waiting = snap.pending.iter().filter(|p| p.waiting.is_some()).count();
    let unfinished = all_runs.iter().filter(|r| r.finished_at.is_none()).count();
    let running = daemon_running(&ctx.data_dir);
    let daemon_cfg = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir);
    let mode = daemon_cfg.mode;
    let daemons = crate::daemon::ondemand::running(&ctx.data_dir);
    let (budget, paused) = {
        let (svc, _) = crate::compose::service(ctx)?;
        (block_on(svc.budget())??, block_on(svc.paused())??)
    };
    let http = crate::daemon::ondemand::http_url(&ctx.data_dir);
    let v = json!({
        "dataDir": ctx.data_dir.display().to_string(),
        "store": ctx.store.describe(),
        "hostId": ctx.host_id,
        "http": http,
        "daemonRunning": running,
        "daemonMode": crate::daemon::ondemand::mode_name(mode),
        "daemons": daemons,
        "hooks": snap.hooks.len(),
        "enabledHooks": snap.hooks.iter().filter(|h| h.enabled).count(),
        "pending": snap.pending.len(),
        "due": due,
        "claimed": claimed,
        "waiting": waiting,
        "runsUnfinished": unfinished,
        "nextDueAt": next.map(stamp::format),
        "waitingForClose": close_waits.len(),
        "firstGivesUpAt": first_give_up.map(stamp::format),
        "costUsd30d": cost,
        "runs30d": all_runs.len(),
        "budget": budget.as_ref().map(|(b, bv)| hooks_shapes::json::budget(b, bv)),
        "pause": hooks_shapes::json::pause(paused.as_ref()),
        "recentRuns": runs.iter().map(hooks_shapes::json::run).collect::<Vec<_>>(),
    });
    if as_json {
        print_json(&v);
        return Ok(());
    }
    crate::say!("data dir      {}", ctx.data_dir.display());
    if !matches!(
        &ctx.store,
        crate::compose::StoreChoice::Json {
            explicit: false,
            ..
        }
    ) {
        crate::say!(
            "store         {} (this host: {})",
            ctx.store.describe(),
            ctx.host_id
        );
    }
    if let Some(url) = &http {
        crate::say!("http          {url} (`hooks-app open` for the page)");
    }
    let now = time::OffsetDateTime::now_utc();
    let described: Vec<String> = daemons
        .iter()
        .map(|d| {
            let up = d["startedAt"]
                .as_str()
                .and_then(stamp::parse)
                .map(|t| hooks_core::live::format_span(now - t))
                .unwrap_or_else(|| "?".into());
            let log = d["log"]
                .as_str()
                .map(|l| format!(", log {l}"))
                .unwrap_or_default();
            format!("pid {}, up {up}{log}", d["pid"])
        })
        .collect();
    crate::say!(
        "daemon        {} (mode: {})",
        match (running, described.is_empty()) {
            (true, false) => described.join("; "),
            (true, true) => "running".into(),
            (false, _) if mode == crate::options::DaemonMode::OnDemand =>
                "not running; claude-hook starts one when it queues something".into(),
            // Uninstalled: nothing should run, and the way back is install.
            (false, _) if daemon_cfg.before_uninstall.is_some() =>
                "not running; uninstalled (`hooks-app install` puts the hooks and the daemon back)"
                    .into(),
            (false, _) => "not running (start it with `hooks-app serve`)".into(),
        },
        crate::daemon::ondemand::mode_name(mode)
    );
    crate::say!(
        "hooks         {} ({} enabled)",
        snap.hooks.len(),
        v["enabledHooks"]
    );
    crate::say!(
        "pending       {} ({due} due now, {claimed} claimed, {waiting} waiting{})",
        snap.pending.len(),
        next.map(|t| format!(", next at {}", stamp::format(t)))
            .unwrap_or_default()
    );
    if let Some(t) = first_give_up {
        crate::say!(
            "              {} {} until {} closed (they run then; the first gives up at {})",
            close_waits.len(),
            if close_waits.len() == 1 {
                "waits"
            } else {
                "wait"
            },
            if close_waits.len() == 1 {
                "its conversation is"
            } else {
                "their conversations are"
            },
            stamp::format(t)
        );
    }
    if let Some(p) = &paused {
        crate::say!(
            "paused        {} (`hooks-app unpause` lets follow-ups start again)",
            p.reason().trim_start_matches("paused ")
        );
    }
    match &budget {
        Some((b, bv)) => crate::say!("budget        {}", hooks_shapes::text::budget_line(b, bv)),
        None => crate::say!("budget        none (hooks-app budget set --daily-usd X)"),
    }
    crate::say!(
        "runs          {} in the last {WINDOW_DAYS} days ({unfinished} running or unaccounted for), cost {}",
        all_runs.len(),
        usd(cost)
    );
    for r in &runs {
        crate::say!(
            "  {}  {}  {}  {}",
            stamp::format(r.started_at),
            r.hook_id,
            r.session_id,
            r.status_text()
        );
    }
    Ok(())
}
