//! `/metrics` (Prometheus' text format) and `/api/v1/version`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::sync::atomic::Ordering;

use hooks_core::*;

use crate::state::{ApiError, HttpState};

/// A value that changes whenever what the page shows changes.
pub async fn version(s: &HttpState) -> Result<String, ApiError> {
    let snap = s.store.snapshot().await?;
    // The newest run stands for the log: a run that starts or ends changes it.
    let runs = s
        .store
        .runs(&RunFilter {
            limit: Some(1),
            ..RunFilter::default()
        })
        .await?;
    let mut v = format!("pause:{:?};", s.store.pause().await?);
    for h in &snap.hooks {
        let _ = write!(
            v,
            "{}:{}:{}:{}:{}:{:?};",
            h.id,
            h.enabled,
            h.delay.seconds(),
            h.name,
            h.history.len(),
            h.last_status
        );
    }
    for p in &snap.pending {
        let _ = write!(
            v,
            "{}/{}:{}:{}:{};",
            p.hook_id,
            p.session_id,
            p.due_at,
            p.claim.is_some(),
            p.waiting.is_some()
        );
    }
    let last = runs
        .last()
        .map(|r| format!("{:?}{:?}", r.run_id, r.finished_at))
        .unwrap_or_default();
    let _ = write!(v, "runs:{last}");
    // Short and stable: FNV-1a.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Ok(format!("{hash:016x}"))
}

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn status_class(s: &Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Error(_) => "error",
        Status::Skipped(_) => "skipped",
        Status::Requeued(_) => "requeued",
        Status::Other(_) => "other",
    }
}

/// The Prometheus text: counters of this process's HTTP events; runs, cost and tokens from
/// the run log; the lateness of what this daemon fired; the queue and the runs going on now.
pub async fn metrics(s: &HttpState) -> Result<String, ApiError> {
    let m = &s.metrics;
    let now = s.svc.now();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# HELP hooks_app_events_total Conversation events received over HTTP by this daemon.\n# TYPE hooks_app_events_total counter\nhooks_app_events_total {}",
        m.events.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_queued_total Follow-ups queued by events received over HTTP.\n# TYPE hooks_app_queued_total counter\nhooks_app_queued_total {}",
        m.queued.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_skipped_total Hooks not queued for an event received over HTTP, by reason.\n# TYPE hooks_app_skipped_total counter"
    );
    for (reason, n) in m.skipped.lock().map(|g| g.clone()).unwrap_or_default() {
        let _ = writeln!(
            t,
            "hooks_app_skipped_total{{reason=\"{}\"}} {n}",
            label(&reason)
        );
    }
    // Counters since this server started (as Prometheus counters are: a restart resets
    // them), so a scrape reads what is new, never the whole log.
    let runs = s
        .store
        .runs(&RunFilter {
            since: Some(s.started_at),
            ..RunFilter::default()
        })
        .await?;
    let mut by: BTreeMap<(String, &'static str), u64> = BTreeMap::new();
    let mut cost: BTreeMap<String, f64> = BTreeMap::new();
    let mut tokens: BTreeMap<(String, &'static str), u64> = BTreeMap::new();
    let mut duration = crate::state::Histogram::default();
    for r in runs
        .iter()
        .filter(|r| r.finished_at.is_some() || r.outcome.status.is_some())
    {
        let hook = r.hook_id.to_string();
        *by.entry((hook.clone(), status_class(&r.outcome.status())))
            .or_default() += 1;
        *cost.entry(hook.clone()).or_default() += r.outcome.cost_usd.unwrap_or(0.0);
        if let Some(u) = r.outcome.usage {
            for (kind, v) in [
                ("input", u.input_tokens),
                ("cache_creation_input", u.cache_creation_input_tokens),
                ("cache_read_input", u.cache_read_input_tokens),
                ("output", u.output_tokens),
            ] {
                *tokens.entry((hook.clone(), kind)).or_default() += v.unwrap_or(0);
            }
        }
        if let Some(ms) = r.outcome.duration_ms {
            duration.observe(crate::state::DURATION_BUCKETS, ms as f64 / 1000.0);
        }
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_runs_total Follow-up runs finished since this daemon started, by hook and status.\n# TYPE hooks_app_runs_total counter"
    );
    for ((hook, status), n) in &by {
        let _ = writeln!(
            t,
            "hooks_app_runs_total{{hook=\"{}\",status=\"{status}\"}} {n}",
            label(hook)
        );
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_cost_usd_total What follow-up runs started since this daemon started cost, as Claude reported it, by hook.\n# TYPE hooks_app_cost_usd_total counter"
    );
    for (hook, c) in &cost {
        let _ = writeln!(
            t,
            "hooks_app_cost_usd_total{{hook=\"{}\"}} {c}",
            label(hook)
        );
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_tokens_total Tokens of follow-up runs started since this daemon started, by hook and kind.\n# TYPE hooks_app_tokens_total counter"
    );
    for ((hook, kind), n) in &tokens {
        let _ = writeln!(
            t,
            "hooks_app_tokens_total{{hook=\"{}\",kind=\"{kind}\"}} {n}",
            label(hook)
        );
    }
    histogram(
        &mut t,
        "hooks_app_run_duration_seconds",
        "How long follow-up runs took.",
        crate::state::DURATION_BUCKETS,
        &duration,
    );
    let late = m.lateness.lock().map(|g| g.clone()).unwrap_or_default();
    histogram(
        &mut t,
        "hooks_app_lateness_seconds",
        "How late this daemon started follow-ups (start - due).",
        crate::state::LATENESS_BUCKETS,
        &late,
    );
    let snap = s.store.snapshot().await?;
    let mut states: BTreeMap<&str, u64> =
        [("claimed", 0), ("waiting", 0), ("due", 0), ("scheduled", 0)].into();
    for p in &snap.pending {
        let st = if p.is_claimed(now) {
            "claimed"
        } else if p.waiting.is_some() {
            "waiting"
        } else if p.due_at.is_due(now) {
            "due"
        } else {
            "scheduled"
        };
        *states.entry(st).or_default() += 1;
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_pending Queued follow-ups, by state.\n# TYPE hooks_app_pending gauge"
    );
    for (st, n) in states {
        let _ = writeln!(t, "hooks_app_pending{{state=\"{st}\"}} {n}");
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_paused Whether follow-ups are paused (hooks-app pause), for every daemon sharing the store.\n# TYPE hooks_app_paused gauge\nhooks_app_paused {}",
        u8::from(s.svc.paused().await?.is_some())
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_runs_in_progress Follow-ups this daemon is running now.\n# TYPE hooks_app_runs_in_progress gauge\nhooks_app_runs_in_progress {}",
        s.svc.running_leases().len()
    );
    Ok(t)
}

fn histogram(t: &mut String, name: &str, help: &str, buckets: &[f64], h: &crate::state::Histogram) {
    let _ = writeln!(t, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (i, b) in buckets.iter().enumerate() {
        let _ = writeln!(
            t,
            "{name}_bucket{{le=\"{b}\"}} {}",
            h.counts.get(i).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(
        t,
        "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}",
        h.count, h.sum, h.count
    );
}
