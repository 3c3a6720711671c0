//! `runs`: the run log, filtered, or its totals.

use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::compose::SystemClock;
use crate::compose::block_on;
use crate::options::SummaryBy;
use crate::output::{print_json, print_table};
use crate::{AppError, AppResult, Context};
use hooks_shapes::text::usd;
use hooks_shapes::text::{seconds, yes};
use std::collections::BTreeMap;

pub fn runs(
    ctx: &Context,
    hook: Option<String>,
    session: Option<String>,
    limit: Option<usize>,
    (summary, by, since): (bool, Option<crate::options::SummaryBy>, Option<String>),
    json: bool,
) -> AppResult {
    // A conversation named by a prefix is looked up through the service; its store is then
    // the one read, so the store is opened once either way.
    let (svc, store) = match &session {
        Some(_) => {
            let (svc, store) = crate::compose::service(ctx)?;
            (Some(svc), store)
        }
        None => (None, ctx.open_store()?),
    };
    let hook_id = hook.as_deref().map(HookId::parse).transpose()?;
    // An id that names no hook is a mistake, not an empty list.
    if let Some(id) = &hook_id
        && block_on(store.get_hook(id))??.is_none()
    {
        return Err(hooks_core::ports::StoreError::HookNotFound(id.clone()).into());
    }
    let filter = RunFilter {
        hook_id,
        session_id: match session.as_deref() {
            None => None,
            Some(s) => {
                SessionId::parse(s)?;
                let svc = svc
                    .as_ref()
                    .expect("a service is built when a session is named");
                Some(block_on(svc.find_session(s))??)
            }
        },
        limit: if summary || since.is_some() {
            None
        } else {
            limit
        },
        // The store reads back to the start of that day and no further.
        since: since.as_deref().map(|s| since_day(ctx, s)).transpose()?,
    };
    let runs = block_on(store.runs(&filter))??;
    let Some(mut runs) = runs_summary(ctx, runs, summary, by, filter.since, json)? else {
        return Ok(());
    };
    if let Some(n) = limit {
        runs.drain(..runs.len().saturating_sub(n));
    }
    // Nothing is priced here: a prices.json gone bad never hides the run log.
    let ids: Vec<SessionId> = runs.iter().map(|r| r.session_id.clone()).collect();
    let agents = block_on(hooks_core::service::agents_of(&ctx.meta(&store), &ids))??;
    if json {
        print_json(&hooks_shapes::json::run_list(&runs, &agents));
        return Ok(());
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let o = &r.outcome;
            let tokens = o.usage.map(|u| {
                let input = u.input_tokens.unwrap_or(0)
                    + u.cache_creation_input_tokens.unwrap_or(0)
                    + u.cache_read_input_tokens.unwrap_or(0);
                format!("{input} in / {} out", u.output_tokens.unwrap_or(0))
            });
            vec![
                stamp::format(r.started_at),
                r.hook_id.to_string(),
                r.session_id.to_string(),
                r.status_text(),
                opt(o.completed.map(yes)),
                opt(o.cost_usd.map(hooks_shapes::text::usd)),
                opt(r.estimated_cost_usd.map(hooks_shapes::text::usd)),
                opt(tokens),
                opt(r.took().map(|d| seconds(d.whole_milliseconds()))),
                opt(o.duration_ms.map(|d| seconds(i128::from(d)))),
                opt(agents.get(&r.session_id).cloned()),
            ]
        })
        .collect();
    print_table(
        &[
            "STARTED",
            "HOOK",
            "SESSION",
            "STATUS",
            "COMPLETED",
            "COST",
            "ESTIMATED",
            "TOKENS",
            "TOOK",
            "API TIME",
            "AGENT",
        ],
        &rows,
    );
    Ok(())
}

/// Totals of one group of runs.
#[derive(Default)]
struct Totals {
    runs: u64,
    /// Entries that ended before anything ran (skips, errors before a start).
    not_run: u64,
    completed: u64,
    cost: f64,
    /// The estimate and the cost of the runs that have both, to compare like with like.
    estimated: f64,
    cost_of_estimated: f64,
    input: u64,
    cache_write: u64,
    cache_read: u64,
    output: u64,
}

impl Totals {
    fn add(&mut self, r: &RunRecord) {
        let o = &r.outcome;
        if !r.started() {
            self.not_run += 1;
            return;
        }
        self.runs += 1;
        self.completed += u64::from(o.completed == Some(true));
        self.cost += o.cost_usd.unwrap_or(0.0);
        if let (Some(e), Some(c)) = (r.estimated_cost_usd, o.cost_usd) {
            self.estimated += e;
            self.cost_of_estimated += c;
        }
        if let Some(u) = o.usage {
            self.input += u.input_tokens.unwrap_or(0);
            self.cache_write += u.cache_creation_input_tokens.unwrap_or(0);
            self.cache_read += u.cache_read_input_tokens.unwrap_or(0);
            self.output += u.output_tokens.unwrap_or(0);
        }
    }

    fn json(&self, key: &str) -> Value {
        json!({
            "key": key,
            "runs": self.runs,
            "notRun": self.not_run,
            "completed": self.completed,
            "completedRate": self.completed as f64 / self.runs.max(1) as f64,
            "costUsd": self.cost,
            "estimatedCostUsd": self.estimated,
            "costOfEstimatedUsd": self.cost_of_estimated,
            "tokens": {
                "input": self.input,
                "cacheCreation": self.cache_write,
                "cacheRead": self.cache_read,
                "output": self.output,
            },
        })
    }

    fn row(&self, key: &str) -> Vec<String> {
        vec![
            key.to_owned(),
            self.runs.to_string(),
            self.not_run.to_string(),
            format!(
                "{:.0}%",
                100.0 * self.completed as f64 / self.runs.max(1) as f64
            ),
            usd(self.cost),
            if self.cost_of_estimated > 0.0 {
                format!(
                    "{} for {}",
                    usd(self.estimated),
                    usd(self.cost_of_estimated)
                )
            } else {
                "-".into()
            },
            self.input.to_string(),
            self.cache_write.to_string(),
            self.cache_read.to_string(),
            self.output.to_string(),
        ]
    }
}

/// The zone days are counted in: the budget's, else this machine's.
fn day_zone(ctx: &Context) -> AppResult<Option<String>> {
    let store = ctx.open_store()?;
    Ok(block_on(store.budget())??.and_then(|b| b.time_zone))
}

/// `runs` with `--since` and `--summary`.
/// The start of the day `--since` names (`YYYY-MM-DD`), in the zone days are counted in.
fn since_day(ctx: &Context, s: &str) -> AppResult<stamp::Timestamp> {
    let date = time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
        .map_err(|_| {
            AppError::invalid(format!("--since: must be a date YYYY-MM-DD (got {s:?})"))
        })?;
    let noon = time::PrimitiveDateTime::new(date, time::macros::time!(12:00)).assume_utc();
    let zone = day_zone(ctx)?;
    hooks_core::ports::Clock::day(&SystemClock, zone.as_deref(), noon)
        .map(|d| d.start)
        .map_err(|e| AppError::runtime(format!("days: {e}")))
}

pub fn runs_summary(
    ctx: &Context,
    runs: Vec<RunRecord>,
    summary: bool,
    by: Option<SummaryBy>,
    since: Option<stamp::Timestamp>,
    json: bool,
) -> AppResult<Option<Vec<RunRecord>>> {
    let zone = day_zone(ctx)?;
    let clock = SystemClock;
    let day = |t| {
        hooks_core::ports::Clock::day(&clock, zone.as_deref(), t)
            .map_err(|e| AppError::runtime(format!("days: {e}")))
    };
    let runs = match since {
        None => runs,
        Some(from) => runs.into_iter().filter(|r| r.started_at >= from).collect(),
    };
    if !summary {
        return Ok(Some(runs));
    }
    let mut groups: BTreeMap<String, Totals> = BTreeMap::new();
    for r in &runs {
        let key = match by {
            None => "all".to_owned(),
            Some(SummaryBy::Day) => day(r.started_at)?.date.to_string(),
            Some(SummaryBy::Hook) => r.hook_id.to_string(),
            Some(SummaryBy::Model) => r.model.clone().unwrap_or_else(|| "unknown".into()),
        };
        groups.entry(key).or_default().add(r);
    }
    if json {
        print_json(&Value::Array(
            groups.iter().map(|(k, t)| t.json(k)).collect(),
        ));
        return Ok(None);
    }
    let first = match by {
        None => "RUNS OF",
        Some(SummaryBy::Day) => "DAY",
        Some(SummaryBy::Hook) => "HOOK",
        Some(SummaryBy::Model) => "MODEL",
    };
    print_table(
        &[
            first,
            "RUNS",
            "NOT RUN",
            "COMPLETED",
            "COST",
            "ESTIMATED FOR ACTUAL",
            "INPUT",
            "CACHE WRITE",
            "CACHE READ",
            "OUTPUT",
        ],
        &groups.iter().map(|(k, t)| t.row(k)).collect::<Vec<_>>(),
    );
    Ok(None)
}
