//! `hooks-app alerts set|show|clear|test`: where and when a follow-up that fails (or is
//! skipped, stopped by the budget, or waits on a limit) is told about.

use std::io::Read;

use hooks_alerts::*;
use serde_json::{Value, json};

use crate::output::print_json;
use crate::{AppError, AppResult, Context};

/// What `alerts set` does to one setting.
pub enum Change<T> {
    Keep,
    Clear,
    To(T),
}

/// `alerts set`: changes what it is given (`desktop`: `None` keeps it) and keeps the rest
/// of what was set.
pub fn set(ctx: &Context, url: Change<&str>, on: Option<&str>, desktop: Option<bool>) -> AppResult {
    let before = Alerts::read(&ctx.data_dir).map_err(AppError::runtime)?;
    let url = match url {
        Change::Keep => before.as_ref().and_then(|b| b.url.clone()),
        Change::Clear => None,
        Change::To("-") => {
            let mut s = String::new();
            std::io::stdin()
                .take(8192)
                .read_to_string(&mut s)
                .map_err(|e| AppError::runtime(format!("url: could not read stdin: {e}")))?;
            Some(check_url(&s).map_err(AppError::invalid)?)
        }
        Change::To(u) => Some(check_url(u).map_err(AppError::invalid)?),
    };
    let desktop_too = desktop.unwrap_or_else(|| before.as_ref().is_some_and(|b| b.desktop));
    if url.is_none() && !desktop_too {
        return Err(AppError::invalid(
            "url: give --url URL (or --url - to read it from stdin), --desktop, or both (or `alerts clear`)",
        ));
    }
    let on: Vec<String> = match on {
        None => before
            .as_ref()
            .map_or_else(|| vec!["failure".into()], |b| b.on.clone()),
        Some(list) => {
            let kinds: Vec<String> = list.split(',').map(|k| k.trim().to_owned()).collect();
            if let Some(bad) = kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
                return Err(AppError::invalid(format!(
                    "on: must be a comma-separated list of {} (got {bad:?})",
                    KINDS.join(", ")
                )));
            }
            kinds
        }
    };
    let a = Alerts {
        url,
        on,
        desktop: desktop_too,
    };
    save(&ctx.data_dir, &a).map_err(AppError::runtime)?;
    crate::say!(
        "alerts on {} to {}{}",
        a.on.join(", "),
        a.url.as_deref().map_or("no URL".into(), redacted),
        if a.desktop { " and the desktop" } else { "" }
    );
    Ok(())
}

/// `alerts show`.
pub fn show(ctx: &Context, json_out: bool) -> AppResult {
    let a = Alerts::read(&ctx.data_dir).map_err(AppError::runtime)?;
    match (a, json_out) {
        (None, true) => print_json(&Value::Null),
        (None, false) => crate::say!("no alerts (hooks-app alerts set --url URL)"),
        (Some(a), true) => print_json(&a.json(true)),
        (Some(a), false) => crate::say!(
            "alerts on {} to {}{}",
            a.on.join(", "),
            a.url.as_deref().map_or("no URL".into(), redacted),
            if a.desktop { " and the desktop" } else { "" }
        ),
    }
    Ok(())
}

/// `alerts clear`.
pub fn clear(ctx: &Context) -> AppResult {
    match std::fs::remove_file(ctx.data_dir.join(ALERTS_FILE)) {
        Ok(()) => crate::say!("alerts cleared"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => crate::say!("no alerts were set"),
        Err(e) => {
            return Err(AppError::runtime(format!(
                "could not clear the alerts: {e}"
            )));
        }
    }
    Ok(())
}

/// `alerts test`: one alert now, and whether it was delivered.
pub fn test(ctx: &Context) -> AppResult {
    let Some(a) = Alerts::read(&ctx.data_dir).map_err(AppError::runtime)? else {
        return Err(AppError::runtime(
            "no alerts are set (hooks-app alerts set --url URL)",
        ));
    };
    let body = json!({
        "text": "hooks-app: a test alert (hooks-app alerts test)",
        "kind": "test",
    });
    let mut failed = false;
    if let Some(url) = &a.url {
        match post(url, &body) {
            Ok(code) => crate::say!("delivered to {} ({code})", redacted(url)),
            Err(e) => {
                failed = true;
                crate::say!("not delivered: {e}");
            }
        }
    }
    if a.desktop {
        match desktop("hooks-app", "a test alert (hooks-app alerts test)") {
            Ok(()) => crate::say!("shown on the desktop"),
            Err(e) => {
                failed = true;
                crate::say!("not shown on the desktop: {e}");
            }
        }
    }
    if failed {
        return Err(AppError::runtime("an alert was not delivered"));
    }
    Ok(())
}
