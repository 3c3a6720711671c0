//! `after` and `every`: follow-ups at a time, into one conversation.

use hooks_core::schedule::{Ask, Schedule, Sent};
use hooks_core::span::parse_span;
use hooks_core::{ValidationError, stamp};
use hooks_runtime::schedule::{Done, Found};
use serde_json::json;

use crate::output::print_json;
use crate::{AppResult, Context};

/// `after WHEN PROMPT [--session S]`.
pub fn after(
    ctx: &Context,
    when: &str,
    prompt: &str,
    session: Option<&str>,
    json: bool,
) -> AppResult {
    let ask = Ask {
        after: Some(when),
        ..Ask::default()
    };
    queue(ctx, &ask, prompt, session, json)
}

/// `every INTERVAL PROMPT [--session S] (--times N | --until WHEN)`.
pub fn every(
    ctx: &Context,
    interval: &str,
    prompt: &str,
    session: Option<&str>,
    (times, until): (Option<u32>, Option<&str>),
    json: bool,
) -> AppResult {
    let ask = Ask {
        every: Some(interval),
        times,
        until,
        ..Ask::default()
    };
    queue(ctx, &ask, prompt, session, json)
}

/// Checks everything first (nothing is looked up for what is refused), then queues.
fn queue(
    ctx: &Context,
    ask: &Ask<'_>,
    prompt: &str,
    session: Option<&str>,
    json: bool,
) -> AppResult {
    let schedule = Schedule::parse(ask, time::OffsetDateTime::now_utc())?;
    hooks_core::schedule::check_prompt(prompt)?;
    let target = hooks_runtime::schedule::target(ctx, session)?;
    report(
        hooks_runtime::schedule::schedule(ctx, target, &schedule, prompt)?,
        json,
    );
    Ok(())
}

/// `send SESSION PROMPT [--key K]`.
pub fn send(
    ctx: &Context,
    session: &str,
    prompt: &str,
    key: Option<&str>,
    json: bool,
) -> AppResult {
    hooks_core::schedule::check_prompt(prompt)?;
    let target = hooks_runtime::schedule::target(ctx, Some(session))?;
    let (sent, daemon) = hooks_runtime::schedule::send(ctx, &target, key, prompt)?;
    let sid = &target.session;
    let v = hooks_shapes::json::sent(sid, &sent);
    if json {
        print_json(&v);
    } else {
        match &sent {
            Sent::Queued(s) => crate::say!(
                "sent: {} into conversation {sid}, due now (into the open TUI, or once it is closed)",
                s.occurrences
                    .first()
                    .map(|(h, _)| h.as_str())
                    .unwrap_or_default()
            ),
            Sent::Already { hook, status } => crate::say!(
                "not sent again: key {} went as {hook} ({})",
                key.unwrap_or_default(),
                status
                    .as_ref()
                    .map_or("still queued".to_owned(), ToString::to_string)
            ),
        }
        if !daemon {
            crate::say!(
                "no daemon is running: nothing is sent until `hooks-app serve` (or `tick`) runs"
            );
        }
    }
    Ok(())
}

/// `mcp`: the MCP server, with the person's limits.
pub fn mcp(
    ctx: &Context,
    max_queued: usize,
    max_ahead: &str,
    max_cost_usd: Option<f64>,
) -> AppResult {
    if !(1..=hooks_core::schedule::MAX_QUEUED_PER_SESSION).contains(&max_queued) {
        return Err(ValidationError::new(
            "max-queued",
            format!(
                "must be a whole number from 1 to {}",
                hooks_core::schedule::MAX_QUEUED_PER_SESSION
            ),
        )
        .into());
    }
    let max_ahead = parse_span("max-ahead", max_ahead)?;
    if max_ahead > hooks_core::schedule::MAX_AHEAD || max_ahead.is_zero() {
        return Err(
            ValidationError::new("max-ahead", "must be more than 0 and up to a year").into(),
        );
    }
    let max_cost = max_cost_usd
        .map(hooks_core::model::CostCap::from_usd)
        .transpose()?
        .unwrap_or(hooks_core::model::CostCap::NONE);
    hooks_runtime::mcp::serve(
        ctx,
        hooks_runtime::mcp::Limits {
            queue: hooks_core::schedule::Limits {
                max_queued,
                max_ahead,
            },
            max_cost,
        },
    )
}

fn report(done: Done, json: bool) {
    let sid = done.target.session.as_str().to_owned();
    let found = match &done.target.found {
        Found::Named => "named".to_owned(),
        Found::Calling => "calling".to_owned(),
        Found::NewestHere(_) => "newest".to_owned(),
    };
    let occ = &done.scheduled.occurrences;
    if json {
        let mut v = hooks_shapes::json::scheduled(&done.target.session, &done.scheduled);
        v["found"] = json!(found);
        v["daemonStarted"] = json!(done.started);
        print_json(&v);
    } else {
        let whose = match &done.target.found {
            Found::Named => String::new(),
            Found::Calling => " (the conversation that ran this command)".to_owned(),
            Found::NewestHere(dir) => {
                format!(" (the most recent conversation in {})", dir.display())
            }
        };
        let short = &sid[..sid.len().min(8)];
        match occ.as_slice() {
            [(hook, due)] => crate::say!(
                "queued {hook} into conversation {sid}{whose}: due at {}\n\
                 `hooks-app pending` shows it; `hooks-app pending drop {hook} {short}` cancels it",
                stamp::format(*due)
            ),
            [(first, from), .., (last, to)] => crate::say!(
                "queued {} follow-ups into conversation {sid}{whose}: {first} at {} … {last} at {}\n\
                 `hooks-app pending` shows them; `hooks-app pending drop HOOK {short}` cancels one",
                occ.len(),
                stamp::format(*from),
                stamp::format(*to)
            ),
            [] => {}
        }
        if done.started {
            crate::say!("started the daemon");
        } else if !done.daemon && done.not_started.is_none() {
            crate::say!(
                "no daemon is running: nothing fires until `hooks-app serve` (or `tick`) runs"
            );
        }
    }
    if let Some(why) = done.not_started {
        eprintln!("warning: {}", crate::output::safe(&why));
    }
}
