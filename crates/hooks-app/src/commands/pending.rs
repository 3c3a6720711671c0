//! `pending`: the queue, with what each entry waits for.

use hooks_core::*;

use crate::compose::{block_on, service};
use crate::output::{print_json, print_table};
use crate::{AppError, AppResult, Context};

/// Why an entry dropped by hand ended.
pub const DROPPED: &str = "dropped by hand";

/// `pending drop HOOK SESSION`: one queued entry out, ending as a logged skip.
pub fn drop(ctx: &Context, hook: &str, session: &str, json: bool) -> AppResult {
    let hook = HookId::parse(hook)?;
    SessionId::parse(session)?;
    let (svc, store) = service(ctx)?;
    let sid = block_on(svc.find_session(session))??;
    let key = EntryKey {
        hook_id: hook.clone(),
        session_id: sid.clone(),
    };
    let queued = block_on(store.snapshot())??
        .pending
        .into_iter()
        .find(|p| p.key() == key);
    if queued.is_none() {
        return Err(AppError::invalid(format!(
            "session: no follow-up of {hook} is queued for {sid} (`hooks-app pending` lists them)"
        )));
    }
    let (gone, warnings) = block_on(svc.drop_pending(std::slice::from_ref(&key), DROPPED))??;
    for w in warnings {
        eprintln!("warning: {}", crate::output::safe(&w));
    }
    if gone.is_empty() {
        return Err(AppError::runtime(format!(
            "{hook} on {sid} is being fired right now: not dropped (`hooks-app pause` stops what has not started)"
        )));
    }
    if json {
        print_json(
            &serde_json::json!({"hookId": hook.as_str(), "sessionId": sid.as_str(), "status": format!("skipped: {DROPPED}")}),
        );
    } else {
        crate::say!("{hook} on {sid}: dropped (skipped: {DROPPED}, in the run log)");
    }
    Ok(())
}

pub fn pending(ctx: &Context, json: bool) -> AppResult {
    let store = ctx.open_store()?;
    let snap = block_on(store.snapshot())??;
    // Nothing is priced here: a prices.json gone bad never hides the queue.
    let ids: Vec<SessionId> = snap.pending.iter().map(|p| p.session_id.clone()).collect();
    let agents = block_on(hooks_core::service::agents_of(&ctx.meta(&store), &ids))??;
    if json {
        print_json(&hooks_shapes::json::pending_list(&snap.pending, &agents));
        return Ok(());
    }
    let now = time::OffsetDateTime::now_utc();
    let rows: Vec<Vec<String>> = snap
        .pending
        .iter()
        .map(|p| {
            vec![
                p.hook_id.to_string(),
                p.session_id.to_string(),
                p.became_due().to_string(),
                p.retries.to_string(),
                p.state_text(now),
                agents
                    .get(&p.session_id)
                    .cloned()
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    print_table(
        &["HOOK", "SESSION", "DUE AT", "RETRIES", "STATE", "AGENT"],
        &rows,
    );
    Ok(())
}
