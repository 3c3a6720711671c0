//! What follow-ups cost: `budget set|show|clear` and `runs --summary`.

use hooks_core::cost::{Budget, WhenReached};
use hooks_core::*;
use serde_json::Value;

use crate::cli::BudgetCmd;
use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppError, AppResult, Context};

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
            crate::say!("budget set: {}", hooks_shapes::text::budget_line(&b, &v));
            if woken > 0 {
                crate::say!("{woken} follow-up(s) that waited for the budget are due again");
            }
        }
        BudgetCmd::Show(j) => {
            let current = block_on(svc.budget())??;
            match (current, j.json) {
                (Some((b, v)), true) => print_json(&hooks_shapes::json::budget(&b, &v)),
                (None, true) => print_json(&Value::Null),
                (Some((b, v)), false) => crate::say!("{}", hooks_shapes::text::budget_line(&b, &v)),
                (None, false) => {
                    crate::say!("no daily budget (hooks-app budget set --daily-usd X)")
                }
            }
        }
        BudgetCmd::Clear => {
            let woken = block_on(svc.set_budget(None))??;
            crate::say!("budget cleared");
            if woken > 0 {
                crate::say!("{woken} follow-up(s) that waited for the budget are due again");
            }
        }
    }
    Ok(())
}
