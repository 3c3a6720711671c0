//! `pending`: the queue, with what each entry waits for.

use serde_json::Value;

use crate::compose::block_on;
use crate::output::{print_json, print_table};
use crate::{AppResult, Context};

pub fn pending(ctx: &Context, json: bool) -> AppResult {
    let store = ctx.open_store()?;
    let snap = block_on(store.snapshot())??;
    if json {
        print_json(&Value::Array(
            snap.pending
                .iter()
                .map(hooks_shapes::json::pending)
                .collect(),
        ));
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
            ]
        })
        .collect();
    print_table(&["HOOK", "SESSION", "DUE AT", "RETRIES", "STATE"], &rows);
    Ok(())
}
