//! The forms of money, time, counts and yes/no that the CLI prints and the page shows, and
//! a conversation's facts as sentences.

use hooks_core::stamp;
use serde_json::Value;

pub fn yes(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

/// Milliseconds as seconds with one decimal: `1.4s`.
pub fn seconds(ms: i128) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// Dollars as people read them: the core's one rule ([`hooks_core::cost::usd`]), so a
/// figure reads the same in `status`, `budget`, `runs`, the page and a skip's reason.
pub fn usd(v: f64) -> String {
    hooks_core::cost::usd(v)
}

/// `n thing` or `n things`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One line for `status` and `budget show`: today's spend against the budget (in the
/// amounts the budget's decisions print).
pub fn budget_line(b: &hooks_core::cost::Budget, v: &hooks_core::cost::BudgetView) -> String {
    use hooks_core::cost::{WhenReached, usd};
    format!(
        "{} spent today ({}, {}) of {} a day; a follow-up it cannot pay for {}",
        usd(v.spent_today),
        v.today.date,
        v.zone,
        usd(v.daily_usd),
        match b.when_reached {
            WhenReached::Wait => "waits for the next day",
            WhenReached::Skip => "is skipped",
        }
    )
}

/// The session lookup as sentences, one `(label, text)` per line: what `session` prints
/// and the page shows.
pub fn session_lines(r: &hooks_core::lookup::SessionReport) -> Vec<(&'static str, String)> {
    let v = crate::json::session(r);
    let (facts, pending, now) = (&r.facts, &r.pending, r.now);
    let mut out = Vec::new();
    let show = |x: &Value| match x {
        Value::Null => "unknown".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => yes(*b),
        other => other.to_string(),
    };
    for (k, label) in [
        ("sessionId", "session"),
        ("transcriptPath", "transcript"),
        ("cwd", "cwd"),
        ("subagent", "subagent"),
        ("contextTokens", "context tokens"),
        ("model", "model"),
        ("agent", "agent"),
        ("lastChange", "last change"),
        ("origin", "origin"),
    ] {
        out.push((label, show(&v[k])));
    }
    if facts.state.stamps.is_empty() {
        out.push((
            "stamps",
            "none (no hook has fired for this session)".to_owned(),
        ));
    }
    for (h, at) in &facts.state.stamps {
        out.push(("stamp", format!("{h} fired at {}", stamp::format(*at))));
    }
    for e in v["estimates"].as_array().into_iter().flatten() {
        let cap = match (e["maxCostUsd"].as_f64(), e["skippedBecause"].as_str()) {
            (Some(_), Some(why)) => format!("; the cap skips it: {why}"),
            (Some(c), None) => format!(" (cap {})", usd(c)),
            (None, _) => String::new(),
        };
        out.push((
            "cost",
            format!("{}: {}{cap}", show(&e["hookId"]), show(&e["text"])),
        ));
    }
    out.push((
        "conversation",
        match &facts.open {
            Some(o) => format!("open in {}, {o}", o.agent),
            None => "not open (no agent process holds it)".to_owned(),
        },
    ));
    if let Some(l) = &facts.lease {
        out.push((
            "running",
            format!(
                "{} ({}) by {} since {}{}",
                l.lease.hook_id,
                l.lease.run_id,
                l.lease.owner,
                stamp::format(l.lease.started_at),
                if l.is_live(now) {
                    ""
                } else {
                    "; its runner is gone"
                }
            ),
        ));
    }
    for p in pending {
        let state = match p.state_text(now).as_str() {
            "due" | "queued" => format!("due at {}", p.due_at),
            other => other.to_owned(),
        };
        out.push(("pending", format!("{} {state}", p.hook_id)));
    }
    for r in v["runs"].as_array().into_iter().flatten() {
        let cost = r["costUsd"]
            .as_f64()
            .map(|c| format!(", cost {}", usd(c)))
            .unwrap_or_default();
        out.push((
            "run",
            format!(
                "{} at {}: {}{cost}",
                show(&r["hookId"]),
                show(&r["startedAt"]),
                show(&r["status"])
            ),
        ));
        if let Some(reply) = r["reply"].as_str() {
            // Under the label's column: the reply's lines follow one another there.
            let indent = format!("\n{:16}", "");
            out.push((
                "reply",
                reply.trim_end().lines().collect::<Vec<_>>().join(&indent),
            ));
        }
    }
    out
}
