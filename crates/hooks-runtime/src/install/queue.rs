//! What `install` and `uninstall` do with the queue: nothing fires after `uninstall`
//! unless the user asks, and what is queued runs again once the hook is back.
//!
//! `uninstall` (the hook gone from every settings file) says what is queued. With
//! `--drop-queue` it drops it, each entry ending as a logged skip; otherwise, on the
//! JSON store (this host's alone), it pauses follow-ups, as [`UNINSTALL_PAUSER`], so a
//! daemon started by hand later fires nothing. A shared database is left as it is: a
//! pause there would stop every host. `install` lifts that pause (never one a person
//! set) and, in the on-demand mode, starts the daemon when something is queued.

use hooks_core::*;

use crate::compose::{StoreChoice, block_on, service};
use crate::{AppResult, Context};

/// Who a pause set by `uninstall` is by: `install` lifts only that one.
pub const UNINSTALL_PAUSER: &str = "hooks-app uninstall";

/// Why an entry dropped by `uninstall --drop-queue` ended.
pub const DROPPED_AT_UNINSTALL: &str = "dropped at uninstall";

/// After the hook left the last settings file.
pub fn after_uninstall(ctx: &Context, drop_queue: bool) -> AppResult {
    if ctx.require_store().is_err() {
        return Ok(());
    }
    let (svc, store) = service(ctx)?;
    let queued = block_on(store.snapshot())??.pending;
    if queued.is_empty() {
        return Ok(());
    }
    if drop_queue {
        let keys: Vec<EntryKey> = queued.iter().map(PendingEntry::key).collect();
        let (gone, warnings) = block_on(svc.drop_pending(&keys, DROPPED_AT_UNINSTALL))??;
        for w in warnings {
            eprintln!("warning: {}", crate::output::safe(&w));
        }
        crate::say!(
            "dropped {} queued follow-up(s) (skipped: {DROPPED_AT_UNINSTALL}, in the run log){}",
            gone.len(),
            if gone.len() < keys.len() {
                format!(
                    "; {} being fired right now end on their own",
                    keys.len() - gone.len()
                )
            } else {
                String::new()
            }
        );
        return Ok(());
    }
    let listed = summary(&queued);
    if !matches!(ctx.store, StoreChoice::Json { .. }) {
        crate::say!(
            "{listed} stay queued in the shared store, for the host each was queued on; \
             `hooks-app uninstall --drop-queue` drops them"
        );
        return Ok(());
    }
    if block_on(svc.paused())??.is_none() {
        block_on(svc.pause(None, UNINSTALL_PAUSER))??;
    }
    crate::say!(
        "{listed} stay queued, paused so that none fires: `hooks-app install` takes them up \
         again, `hooks-app uninstall --drop-queue` (or `pending drop HOOK SESSION`) drops them"
    );
    Ok(())
}

/// After `install` put the hook in place (not on a dry run).
pub fn after_install(ctx: &Context) -> AppResult {
    if ctx.require_store().is_err() {
        return Ok(());
    }
    let (svc, store) = service(ctx)?;
    if let Some(p) = block_on(svc.paused())??
        && p.by == UNINSTALL_PAUSER
    {
        block_on(svc.unpause())??;
        crate::say!("follow-ups resume: uninstall had paused them");
    }
    let queued = block_on(store.snapshot())??.pending;
    if !queued.is_empty() && crate::daemon::ondemand::ensure_running(ctx, false)? {
        crate::say!("started the daemon: {} queued", summary(&queued));
    }
    Ok(())
}

/// `3 follow-ups (2 due now)`.
fn summary(queued: &[PendingEntry]) -> String {
    let now = time::OffsetDateTime::now_utc();
    let due = queued.iter().filter(|p| p.due_at.is_due(now)).count();
    format!(
        "{} follow-up{} ({due} due now)",
        queued.len(),
        if queued.len() == 1 { "" } else { "s" }
    )
}
