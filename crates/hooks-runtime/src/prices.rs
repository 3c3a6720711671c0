//! `<data-dir>/prices.json`: the user's additions to, and changes of, the built-in price
//! table (`hooks_core::cost`). Prices are US dollars per million tokens:
//!
//! ```json
//! {
//!   "models": {
//!     "claude-sonnet-4-5": { "input": 3, "output": 15 },
//!     "my-gateway-model": { "input": 2, "output": 8, "cacheWrite5m": 2.5, "cacheWrite1h": 4, "cacheRead": 0.2 }
//!   },
//!   "aliases": { "fast": "my-gateway-model" }
//! }
//! ```
//!
//! The cache prices default to Anthropic's multipliers of the input price. A file that is
//! not valid is an error naming its line and column and what is wrong; it is never passed
//! over, so a cap is never checked against prices the user did not mean.

use std::collections::BTreeMap;
use std::path::Path;

use hooks_core::cost::{Price, PriceTable};
use serde::Deserialize;

use crate::{AppError, AppResult};

/// The file's name in the data folder.
pub const PRICES_FILE: &str = "prices.json";

/// A price: a finite number of dollars, not below zero.
#[derive(Debug, Clone, Copy)]
struct Usd(f64);

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && v >= 0.0 {
            Ok(Usd(v))
        } else {
            Err(serde::de::Error::custom(format!(
                "a price must be a number of dollars per million tokens, 0 or more (got {v})"
            )))
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PriceDto {
    input: Usd,
    output: Usd,
    cache_write_5m: Option<Usd>,
    cache_write_1h: Option<Usd>,
    cache_read: Option<Usd>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesDto {
    #[serde(default)]
    models: BTreeMap<String, PriceDto>,
    #[serde(default)]
    aliases: BTreeMap<String, String>,
}

/// The built-in table with `text` (the content of a prices file at `path`) applied.
pub fn parse(path: &Path, text: &str) -> AppResult<PriceTable> {
    let dto: PricesDto = serde_json::from_str(text).map_err(|e| {
        AppError::invalid(format!(
            "{}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let mut table = PriceTable::builtin();
    for (model, p) in &dto.models {
        if model.trim().is_empty() {
            return Err(AppError::invalid(format!(
                "{}: models: a model id must not be empty",
                path.display()
            )));
        }
        let mut price = Price::standard(p.input.0, p.output.0);
        if let Some(v) = p.cache_write_5m {
            price.cache_write_5m = v.0;
        }
        if let Some(v) = p.cache_write_1h {
            price.cache_write_1h = v.0;
        }
        if let Some(v) = p.cache_read {
            price.cache_read = v.0;
        }
        table.set(model, price);
    }
    for (alias, model) in &dto.aliases {
        if table.lookup(model).is_none() {
            return Err(AppError::invalid(format!(
                "{}: aliases: {alias:?} names {model:?}, which has no price",
                path.display()
            )));
        }
        table.alias(alias, model);
    }
    Ok(table)
}

/// The price table for the data folder `dir`: the built-in one, with `prices.json` applied
/// when there is one.
pub fn load(dir: &Path) -> AppResult<PriceTable> {
    let path = dir.join(PRICES_FILE);
    match hooks_platform::read_regular(&path, hooks_platform::ReadLimit::bytes(4 * 1024 * 1024))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    {
        Ok(text) => parse(&path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PriceTable::builtin()),
        Err(e) => Err(AppError::runtime(format!(
            "could not read {}: {e}",
            path.display()
        ))),
    }
}

/// `hooks-app prices`: the table as estimates see it, and where each price comes from.
pub fn command(ctx: &crate::Context, json: bool) -> AppResult {
    let table = load(&ctx.data_dir)?;
    let learned = learned(ctx, &table)?;
    let builtin = PriceTable::builtin();
    let source = |m: &str, p: &hooks_core::cost::Price| match builtin.lookup(m) {
        Some((_, b)) if b == *p => "built in",
        _ => PRICES_FILE,
    };
    if json {
        let models: Vec<serde_json::Value> = table
            .models()
            .map(|(m, p)| {
                serde_json::json!({"model": m, "input": p.input, "output": p.output,
                    "cacheWrite5m": p.cache_write_5m, "cacheWrite1h": p.cache_write_1h,
                    "cacheRead": p.cache_read, "source": source(m, p)})
            })
            .collect();
        let aliases: serde_json::Map<String, serde_json::Value> = table
            .aliases()
            .map(|(a, m)| (a.to_owned(), serde_json::Value::String(m.to_owned())))
            .collect();
        let learned: Vec<serde_json::Value> = learned
            .iter()
            .map(|(m, p, runs)| {
                serde_json::json!({"model": m, "input": p.input, "output": p.output,
                    "cacheWrite5m": p.cache_write_5m, "cacheRead": p.cache_read, "runs": runs})
            })
            .collect();
        crate::output::print_json(&serde_json::json!({
            "taken": hooks_core::cost::PRICES_TAKEN,
            "source": hooks_core::cost::PRICES_SOURCE,
            "models": models,
            "aliases": aliases,
            "learned": learned,
        }));
        return Ok(());
    }
    let row = |m: &str, p: &hooks_core::cost::Price, from: String| {
        vec![
            m.to_owned(),
            format!("{}", p.input),
            format!("{}", p.output),
            format!("{}", p.cache_write_5m),
            format!("{}", p.cache_read),
            from,
        ]
    };
    let rows: Vec<Vec<String>> = table
        .models()
        .map(|(m, p)| row(m, p, source(m, p).to_owned()))
        .chain(
            learned
                .iter()
                .map(|(m, p, n)| row(m, p, format!("learned from {n} runs"))),
        )
        .collect();
    crate::output::print_table(
        &[
            "MODEL",
            "INPUT",
            "OUTPUT",
            "CACHE WRITE",
            "CACHE READ",
            "SOURCE",
        ],
        &rows,
    );
    crate::say!("");
    for (a, m) in table.aliases() {
        crate::say!("{a} → {m}");
    }
    crate::say!(
        "\nUS dollars per million tokens. Built-in table taken {}: {}. A model it lacks is \
         priced as the dearest of its family (opus, sonnet, haiku, fable, mythos; astra, sol, \
         terra, luna) and says so; \
         add or change prices in {}.",
        hooks_core::cost::PRICES_TAKEN,
        hooks_core::cost::PRICES_SOURCE,
        ctx.data_dir.join(PRICES_FILE).display()
    );
    Ok(())
}

/// Prices solved from the run log for the models it names that the table lacks: model,
/// price, and how many runs. Nothing when there is no store yet (nothing is created).
fn learned(
    ctx: &crate::Context,
    table: &PriceTable,
) -> AppResult<Vec<(String, hooks_core::cost::Price, usize)>> {
    let Ok(store) = ctx.existing_store() else {
        return Ok(Vec::new());
    };
    let runs = crate::blocking::block_on(store.runs(&hooks_core::RunFilter {
        limit: Some(500),
        ..hooks_core::RunFilter::default()
    }))??;
    let mut by_model: std::collections::BTreeMap<String, Vec<(hooks_core::Usage, f64)>> =
        std::collections::BTreeMap::new();
    for r in &runs {
        if let (Some(m), Some(u), Some(c), Some(hooks_core::Status::Ok)) = (
            r.model.as_deref(),
            r.outcome.usage,
            r.outcome.cost_usd,
            r.outcome.status.as_ref(),
        ) && table.lookup(m).is_none()
        {
            by_model.entry(m.to_owned()).or_default().push((u, c));
        }
    }
    Ok(by_model
        .into_iter()
        .filter_map(|(m, samples)| {
            hooks_core::cost::learn_price(&samples).map(|p| (m, p, samples.len()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("/d/prices.json")
    }

    #[test]
    fn a_file_adds_and_changes_prices() {
        let t = parse(
            p(),
            r#"{"models": {"claude-sonnet-4-5": {"input": 4, "output": 20},
                 "gw-model": {"input": 2, "output": 8, "cacheWrite5m": 2.5, "cacheRead": 0.2}},
                "aliases": {"fast": "gw-model"}}"#,
        )
        .unwrap();
        let (id, s) = t.lookup("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(
            (id.as_str(), s.input, s.cache_write_5m),
            ("claude-sonnet-4-5", 4.0, 5.0)
        );
        let (id, g) = t.lookup("fast").unwrap();
        assert_eq!(id, "gw-model");
        assert_eq!(
            (g.cache_write_5m, g.cache_write_1h, g.cache_read),
            (2.5, 4.0, 0.2)
        );
        assert!(t.lookup("claude-haiku-4-5").is_some(), "the rest stays");
    }

    #[test]
    fn a_bad_file_is_refused_naming_the_place_and_the_rule() {
        let cases: &[(&str, &str)] = &[
            (
                "{\n  \"models\": {\"m\": {\"input\": -1, \"output\": 1}}\n}",
                "line 2",
            ),
            (
                "{\"models\": {\"m\": {\"input\": 1}}}",
                "missing field `output`",
            ),
            (
                "{\"models\": {\"m\": {\"input\": 1, \"output\": 1, \"cache\": 1}}}",
                "unknown field `cache`",
            ),
            ("{\"model\": {}}", "unknown field `model`"),
            (
                "{\"models\": {\"m\": {\"input\": \"1\", \"output\": 1}}}",
                "invalid type",
            ),
            ("{\"models\": {}, }", "line 1"),
            (
                "{\"aliases\": {\"fast\": \"nowhere\"}}",
                "\"nowhere\", which has no price",
            ),
            (
                "{\"models\": {\" \": {\"input\": 1, \"output\": 1}}}",
                "must not be empty",
            ),
        ];
        for (text, want) in cases {
            let e = parse(p(), text).unwrap_err();
            assert_eq!(e.code, 2, "{text}");
            assert!(
                e.message.contains("/d/prices.json") && e.message.contains(want),
                "{text}: {}",
                e.message
            );
        }
        assert!(
            parse(p(), "{\"models\": {\"m\": {\"input\": -1, \"output\": 1}}}")
                .unwrap_err()
                .message
                .contains("0 or more (got -1)")
        );
    }
}
