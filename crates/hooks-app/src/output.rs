//! What commands print: tables, JSON, and the forms of money, time and yes/no they share
//! with the page. A leaf.

use serde_json::Value;

pub fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into())
    );
}

/// Prints rows as a table with aligned columns.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
}

pub fn yes(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

/// Milliseconds as seconds with one decimal: `1.4s`.
pub fn seconds(ms: i128) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// Dollars as people read them: `$0.00` for nothing, cents for a dollar or more, and four
/// places below, where single runs usually are.
pub fn usd(v: f64) -> String {
    if v == 0.0 {
        "$0.00".to_owned()
    } else if v.abs() >= 1.0 {
        format!("${v:.2}")
    } else {
        format!("${v:.4}")
    }
}

/// `n thing` or `n things`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One line for `status` and `budget show`: today's spend against the budget (in the
/// amounts the budget's decisions print).
pub fn budget_line(b: &hooks_core::cost::Budget, v: &hooks_core::cost::BudgetView) -> String {
    use hooks_core::cost::{WhenReached, usd};
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
