//! `prune --older-than DAYS`: forget old sessions.

use std::collections::HashSet;

use hooks_core::ports::Clock;
use hooks_core::*;

use crate::compose::block_on;
use crate::{AppError, AppResult, Context, compose};

pub fn prune(ctx: &Context, days: u64) -> AppResult {
    let store = ctx.open_store()?;
    let keep: HashSet<SessionId> = block_on(store.snapshot())??
        .pending
        .into_iter()
        .map(|p| p.session_id)
        .collect();
    let before = compose::SystemClock.now() - time::Duration::days(days.min(1_000_000) as i64);
    let removed = block_on(store.sessions.prune(before, &keep))?
        .map_err(|e| AppError::runtime(e.to_string()))?;
    crate::say!(
        "removed {} session{} not changed for {days} days",
        removed.len(),
        if removed.len() == 1 { "" } else { "s" }
    );
    Ok(())
}
