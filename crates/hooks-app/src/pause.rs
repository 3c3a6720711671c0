//! `pause [--for DURATION]` and `unpause`: the kill switch. The pause is store state, so
//! every daemon and host sharing the store holds still while it lasts.

use hooks_core::{Pause, stamp};
use serde_json::{Value, json};

use crate::context::{block_on, service};
use crate::output::print_json;
use crate::{AppError, AppResult, Context};

/// A length of time as people write it: `90s`, `30m`, `2h`, `1d`, `1h30m`.
pub fn parse_span(text: &str) -> Result<time::Duration, AppError> {
    let bad = || {
        AppError::invalid(format!(
            "for: must be a length of time such as 90s, 30m, 2h, 1d or 1h30m (got {text:?})"
        ))
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = time::Duration::ZERO;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        // Any figure, however long: too long is the service's rule to state, never an
        // overflow here.
        let secs = n.checked_mul(unit).ok_or_else(bad)?;
        total = total
            .checked_add(time::Duration::seconds(secs))
            .ok_or_else(bad)?;
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

/// Who is pausing: the user and this host, for whoever wonders why nothing runs.
fn who() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "someone".into());
    let host = hooks_platform::process::hostname().unwrap_or_else(|| "this host".into());
    format!("{user}@{host}")
}

/// The pause as `status --json` and the API show it.
pub fn pause_json(p: Option<&Pause>) -> Value {
    match p {
        None => json!({"paused": false}),
        Some(p) => json!({
            "paused": true,
            "since": stamp::format(p.since),
            "until": p.until.map(stamp::format),
            "by": p.by,
        }),
    }
}

pub fn pause(ctx: &Context, span: Option<&str>, json: bool) -> AppResult {
    let span = span.map(parse_span).transpose()?;
    let (svc, _) = service(ctx)?;
    let p = block_on(svc.pause(span, &who()))??;
    if json {
        print_json(&pause_json(Some(&p)));
    } else {
        match p.until {
            Some(u) => println!(
                "paused until {}: nothing starts until then (`hooks-app unpause` ends it sooner)",
                stamp::format(u)
            ),
            None => println!("paused: nothing starts until `hooks-app unpause`"),
        }
    }
    Ok(())
}

pub fn unpause(ctx: &Context, json: bool) -> AppResult {
    let (svc, _) = service(ctx)?;
    let was = block_on(svc.paused())??;
    let woken = block_on(svc.unpause())??;
    if json {
        print_json(&json!({"paused": false, "woken": woken}));
    } else if was.is_none() {
        println!("not paused");
    } else {
        println!(
            "unpaused; {} woken",
            crate::output::count(woken, "waiting follow-up", "waiting follow-ups")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_as_people_write_them() {
        for (t, secs) in [
            ("90s", 90),
            ("30m", 1800),
            ("2h", 7200),
            ("1d", 86_400),
            ("1h30m", 5400),
        ] {
            assert_eq!(parse_span(t).unwrap(), time::Duration::seconds(secs), "{t}");
        }
        for t in ["", "5", "h", "2x", "1.5h", "-3m", "99999999999999999d"] {
            let e = parse_span(t).unwrap_err();
            assert!(
                e.message.starts_with("for: must be a length of time"),
                "{t}: {}",
                e.message
            );
        }
    }
}
