//! `pause [--for DURATION]` and `unpause`: the kill switch. The pause is store state, so
//! every daemon and host sharing the store holds still while it lasts.

use hooks_core::stamp;
use serde_json::json;

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppResult, Context};

/// Who is pausing: the user (by the user database, not `$USER`, which a service or a
/// cron job may not set) and this host, for whoever wonders why nothing runs.
fn who() -> String {
    let user = hooks_platform::account::name_of(hooks_platform::account::uid());
    match hooks_platform::process::hostname() {
        Some(host) => format!("{user}@{host}"),
        None => user,
    }
}

pub fn pause(ctx: &Context, span: Option<&str>, json: bool) -> AppResult {
    let span = span.map(hooks_shapes::span::parse_span).transpose()?;
    let (svc, _) = service(ctx)?;
    let p = block_on(svc.pause(span, &who()))??;
    if json {
        print_json(&hooks_shapes::json::pause(Some(&p)));
    } else {
        match p.until {
            Some(u) => crate::say!(
                "paused until {}: nothing starts until then (`hooks-app unpause` ends it sooner)",
                stamp::format(u)
            ),
            None => crate::say!("paused: nothing starts until `hooks-app unpause`"),
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
        crate::say!("not paused");
    } else {
        crate::say!(
            "unpaused; {} woken",
            hooks_shapes::text::count(woken, "waiting follow-up", "waiting follow-ups")
        );
    }
    Ok(())
}
