//! Hook ids as commands take them, and the closest ids when one names no hook.

use hooks_core::*;

use crate::compose::block_on;
use crate::{AppError, AppResult, Context};

pub fn hook_id(s: &str) -> AppResult<HookId> {
    Ok(HookId::parse(s)?)
}

/// An unknown hook id's error, with the ids it is closest to (or the ids there are).
pub fn suggest_hook(ctx: &Context, e: AppError) -> AppError {
    let Some(id) = e.message.strip_prefix("no hook with id ") else {
        return e;
    };
    let ids: Vec<String> = ctx
        .existing_store()
        .ok()
        .and_then(|store| block_on(store.snapshot()).ok()?.ok())
        .map(|snap| snap.hooks.iter().map(|h| h.id.to_string()).collect())
        .unwrap_or_default();
    let mut near: Vec<(usize, &str)> = ids
        .iter()
        .map(|h| (strsim::levenshtein(id, h), h.as_str()))
        .filter(|(d, _)| *d <= (id.chars().count() / 3).max(2))
        .collect();
    near.sort();
    let hint = match near.first() {
        Some((_, best)) => format!(" (did you mean {best}?)"),
        None if ids.is_empty() => String::new(),
        None => format!(" (the hooks are: {})", ids.join(", ")),
    };
    AppError::invalid(format!("{}{hint}", e.message))
}
