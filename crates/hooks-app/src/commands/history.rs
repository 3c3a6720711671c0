//! `history ID`: how a hook's entries ended.

use std::collections::HashSet;

use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::commands::ids::hook_id;
use crate::compose::{block_on, service};
use crate::output::{print_json, print_table};
use crate::{AppResult, Context};
use hooks_shapes::text::seconds;

pub fn history(ctx: &Context, id: &str, json: bool) -> AppResult {
    let (svc, store) = service(ctx)?;
    let h = block_on(svc.get_hook(&hook_id(id)?))??;
    // Every ending of the hook's entries is in the run log; firings an older log does not
    // hold come from the hook's own history.
    let runs = block_on(store.runs(&RunFilter {
        hook_id: Some(h.id.clone()),
        ..RunFilter::default()
    }))??;
    let logged: HashSet<&str> = runs.iter().map(|r| r.session_id.as_str()).collect();
    let mut rows: Vec<(Option<stamp::Timestamp>, Value)> = h
        .history
        .entries()
        .iter()
        .filter(|e| !logged.contains(e.session.as_str()))
        .map(|e| (e.at(), json!({"at": e.key, "sessionId": e.session})))
        .collect();
    rows.extend(runs.iter().map(|r| {
        let mut v = json!({
            "at": stamp::format(r.started_at),
            "sessionId": r.session_id.as_str(),
            "status": r.status_text(),
            "costUsd": r.outcome.cost_usd,
        });
        if let Some(d) = r.took() {
            v["tookMs"] = json!(d.whole_milliseconds());
        }
        (Some(r.started_at), v)
    }));
    rows.sort_by_key(|(at, _)| *at);
    if json {
        print_json(&Value::Array(rows.into_iter().map(|(_, v)| v).collect()));
        return Ok(());
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    print_table(
        &["AT", "SESSION", "STATUS", "TOOK", "COST"],
        &rows
            .iter()
            .map(|(_, v)| {
                vec![
                    text(&v["at"]),
                    text(&v["sessionId"]),
                    text(&v["status"]),
                    v["tookMs"]
                        .as_i64()
                        .map_or("-".into(), |ms| seconds(i128::from(ms))),
                    v["costUsd"]
                        .as_f64()
                        .map_or("-".into(), hooks_shapes::text::usd),
                ]
            })
            .collect::<Vec<_>>(),
    );
    Ok(())
}
