//! What follow-ups cost: `budget set|show|clear` and `runs --summary`.

use std::collections::BTreeMap;

use hooks_core::cost::{Budget, BudgetView, WhenReached};
use hooks_core::*;
use serde_json::{Value, json};

use crate::cli::BudgetCmd;
use crate::context::SystemClock;
use crate::context::{block_on, service};
use crate::options::SummaryBy;
use crate::output::usd;
use crate::output::{print_json, print_table};
use crate::{AppError, AppResult, Context};

/// One line for `status` and `budget show`: today's spend against the budget (in the
/// amounts the budget's decisions print).
pub fn budget_line(b: &Budget, v: &BudgetView) -> String {
    use hooks_core::cost::usd;
    format!(
        "{} spent today ({}, {}) of {} a day; a follow-up it cannot pay for {}",
        usd(v.spent_today),
        v.today.date,
        v.zone,
        usd(v.daily_usd),
        match b.when_reached {
            WhenReached::Wait => "waits for the next day",
            WhenReached::Skip => "is skipped",
        }
    )
}

pub fn budget_json(b: &Budget, v: &BudgetView) -> Value {
    json!({
        "dailyUsd": v.daily_usd,
        "timeZone": b.time_zone,
        "whenReached": b.when_reached.as_str(),
        "today": v.today.date.to_string(),
        "spentTodayUsd": v.spent_today,
        "leftTodayUsd": (v.daily_usd - v.spent_today).max(0.0),
    })
}

pub fn budget(ctx: &Context, cmd: BudgetCmd) -> AppResult {
    let (svc, _) = service(ctx)?;
    match cmd {
        BudgetCmd::Set {
            daily_usd,
            time_zone,
            when_reached,
        } => {
            let rule = format!(
                "dailyUsd: must be a number of US dollars over 0 and at most 10000 (got {daily_usd:?}; `hooks-app budget clear` removes the budget)"
            );
            let daily = CostCap::parse(&daily_usd).map_err(|_| AppError::invalid(rule.clone()))?;
            if daily.usd().is_none() {
                return Err(AppError::invalid(rule));
            }
            let budget = Budget {
                daily,
                time_zone: time_zone
                    .as_deref()
                    .map(Budget::validate_zone)
                    .transpose()?,
                when_reached: WhenReached::parse(&when_reached)?,
            };
            let woken = block_on(svc.set_budget(Some(budget)))??;
            let (b, v) = block_on(svc.budget())??
                .ok_or_else(|| AppError::runtime("the budget was not kept"))?;
            println!("budget set: {}", budget_line(&b, &v));
            if woken > 0 {
                println!("{woken} follow-up(s) that waited for the budget are due again");
            }
        }
        BudgetCmd::Show(j) => {
            let current = block_on(svc.budget())??;
            match (current, j.json) {
                (Some((b, v)), true) => print_json(&budget_json(&b, &v)),
                (None, true) => print_json(&Value::Null),
                (Some((b, v)), false) => println!("{}", budget_line(&b, &v)),
                (None, false) => println!("no daily budget (hooks-app budget set --daily-usd X)"),
            }
        }
        BudgetCmd::Clear => {
            let woken = block_on(svc.set_budget(None))??;
            println!("budget cleared");
            if woken > 0 {
                println!("{woken} follow-up(s) that waited for the budget are due again");
            }
        }
    }
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
pub fn runs_summary(
    ctx: &Context,
    runs: Vec<RunRecord>,
    summary: bool,
    by: Option<SummaryBy>,
    since: Option<&str>,
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
        Some(s) => {
            let date =
                time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
                    .map_err(|_| {
                        AppError::invalid(format!("--since: must be a date YYYY-MM-DD (got {s:?})"))
                    })?;
            let noon = time::PrimitiveDateTime::new(date, time::macros::time!(12:00)).assume_utc();
            let from = day(noon)?.start;
            runs.into_iter().filter(|r| r.started_at >= from).collect()
        }
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
