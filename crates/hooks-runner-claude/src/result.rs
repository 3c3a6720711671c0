//! Reading the CLI's `--output-format json` result object, leniently: unknown fields are
//! ignored and missing ones are null.

use hooks_core::{COMPLETED_MARKER, RunOutcome, Status, Usage, ends_with_marker};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResultJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    is_error: Option<bool>,
    result: Option<String>,
    errors: Option<Vec<serde_json::Value>>,
    num_turns: Option<u64>,
    total_cost_usd: Option<f64>,
    duration_ms: Option<u64>,
    session_id: Option<String>,
    /// The HTTP status of the API error the turn ended on (2.1.197 and later).
    api_error_status: Option<u16>,
    usage: Option<UsageJson>,
    #[serde(rename = "modelUsage")]
    model_usage: Option<std::collections::BTreeMap<String, ModelUsageJson>>,
}

/// One model's line of `modelUsage`.
#[derive(Debug, Default, Deserialize, Clone, Copy)]
#[serde(default, rename_all = "camelCase")]
struct ModelUsageJson {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// Tokens weighted by what each kind costs against input, the same for every Claude model's
/// price: cache writes 1.25×, cache reads 0.1×, output 5×.
fn weighted(input: Option<u64>, write: Option<u64>, read: Option<u64>, output: Option<u64>) -> f64 {
    let n = |v: Option<u64>| v.unwrap_or(0) as f64;
    n(input) + 1.25 * n(write) + 0.1 * n(read) + 5.0 * n(output)
}

/// The run's own cost. Claude Code 2.1.197 reports it as `total_cost_usd`. 2.1.332 reports
/// there what the whole conversation has cost across every process that resumed it, with
/// `modelUsage` counting the conversation's tokens and `usage` this run's: then the run's
/// share of the total is its tokens' share, each kind weighted by its price against input.
fn own_cost(r: &ResultJson) -> Option<f64> {
    let total = r.total_cost_usd?;
    let (Some(u), Some(models)) = (r.usage, r.model_usage.as_ref()) else {
        return Some(total);
    };
    let all: f64 = models
        .values()
        .map(|m| {
            weighted(
                m.input_tokens,
                m.cache_creation_input_tokens,
                m.cache_read_input_tokens,
                m.output_tokens,
            )
        })
        .sum();
    let own = weighted(
        u.input_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens,
        u.output_tokens,
    );
    // A run stopped early may report no usage of its own (2.1.197 at its budget): then the
    // report is all there is.
    if own > 0.0 && all > own * 1.001 {
        Some(total * own / all)
    } else {
        Some(total)
    }
}

#[derive(Debug, Default, Deserialize, Clone, Copy)]
#[serde(default)]
struct UsageJson {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(300).collect())
}

fn find_result(stdout: &[u8]) -> Option<ResultJson> {
    let text = String::from_utf8_lossy(stdout);
    if let Ok(r) = serde_json::from_str::<ResultJson>(text.trim()) {
        return Some(r);
    }
    // Something printed around the object: take the last line that is a result object.
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<ResultJson>(l.trim()).ok())
        .find(|r| r.kind.as_deref() == Some("result"))
}

/// The outcome of a run from its exit code and output. Success only on exit 0 with
/// `is_error: false`; otherwise the status carries the subtype, the first of `errors`, the
/// result text, or the first line of stderr. A run Claude stopped at its budget is
/// `error: over budget: …`.
pub fn parse_outcome(exit_code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> RunOutcome {
    let Some(r) = find_result(stdout) else {
        let why = first_line(stderr)
            .or_else(|| first_line(stdout).map(|l| format!("unreadable output: {l}")));
        let status = match (why, exit_code) {
            (Some(w), _) => w,
            (None, Some(c)) => format!("exit code {c} with no output"),
            (None, None) => "killed by a signal with no output".to_owned(),
        };
        return {
            let mut o = RunOutcome::new(Status::error(status));
            o.exit_code = exit_code;
            o
        };
    };
    let ok = exit_code == Some(0) && r.is_error == Some(false);
    let status = if ok {
        Status::Ok
    } else {
        let first_error = r.errors.as_ref().and_then(|e| e.first()).map(|e| match e {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let subtype = r.subtype.clone().filter(|s| s != "success");
        let why = match (subtype, first_error) {
            // Claude stopped the run at the hook's cost cap (`--max-budget-usd`).
            (Some(s), e) if s == "error_max_budget_usd" => format!(
                "over budget: {}",
                e.unwrap_or_else(|| "stopped by Claude at the hook's cost cap".to_owned())
            ),
            (Some(s), Some(e)) => format!("{s}: {e}"),
            (Some(s), None) => s,
            (None, Some(e)) => e,
            (None, None) => r
                .result
                .as_deref()
                .and_then(|t| first_line(t.as_bytes()))
                .or_else(|| first_line(stderr))
                .unwrap_or_else(|| format!("exit code {exit_code:?}, is_error {:?}", r.is_error)),
        };
        Status::error(why)
    };
    {
        let mut o = RunOutcome::default();
        // Only for a run that did not succeed: a limit after success changes nothing.
        o.api_error_status = r.api_error_status.filter(|_| !ok);
        o.status = Some(status);
        o.exit_code = exit_code;
        o.completed = r
            .result
            .as_deref()
            .map(|t| ends_with_marker(t, COMPLETED_MARKER));
        o.num_turns = r.num_turns;
        o.cost_usd = own_cost(&r);
        o.usage = r.usage.map(|u| {
            let mut o = Usage::default();
            o.input_tokens = u.input_tokens;
            o.cache_creation_input_tokens = u.cache_creation_input_tokens;
            o.cache_read_input_tokens = u.cache_read_input_tokens;
            o.output_tokens = u.output_tokens;
            o
        });
        o.duration_ms = r.duration_ms;
        o.session_id = r.session_id;
        o.result_text = r.result;
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What 2.1.332 printed for a second resume of a conversation (trimmed): the total and
    /// `modelUsage` count the whole conversation, `usage` this run.
    const RUNNING_TOTAL: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","num_turns":1,
        "total_cost_usd":0.033304,
        "usage":{"input_tokens":104,"cache_creation_input_tokens":2000,"cache_read_input_tokens":30000,"output_tokens":12},
        "modelUsage":{"claude-opus-5-5":{"inputTokens":206,"outputTokens":24,"cacheReadInputTokens":60000,"cacheCreationInputTokens":4000,"costUSD":0.033304}}}"#;

    #[test]
    fn a_running_total_becomes_the_runs_own_cost() {
        let o = parse_outcome(Some(0), RUNNING_TOTAL.as_bytes(), b"");
        // The first process cost 0.016648 (2.1.332's own figure for it), so this one
        // cost 0.016656.
        let own = o.cost_usd.unwrap();
        assert!((own - 0.016656).abs() < 0.016656 * 0.001, "{own}");
    }

    #[test]
    fn a_runs_own_cost_stands() {
        // 2.1.197: modelUsage counts this run only.
        let one = RUNNING_TOTAL
            .replace("\"inputTokens\":206,\"outputTokens\":24,\"cacheReadInputTokens\":60000,\"cacheCreationInputTokens\":4000", "\"inputTokens\":104,\"outputTokens\":12,\"cacheReadInputTokens\":30000,\"cacheCreationInputTokens\":2000");
        let o = parse_outcome(Some(0), one.as_bytes(), b"");
        assert_eq!(o.cost_usd, Some(0.033304));
        let bare = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5}"#;
        assert_eq!(
            parse_outcome(Some(0), bare.as_bytes(), b"").cost_usd,
            Some(0.5)
        );
    }

    #[test]
    fn a_limit_is_read_with_its_status_and_message() {
        // What 2.1.332 printed for a subscription's usage limit (trimmed).
        let limited = r#"{"subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 7:20am (UTC)","type":"result","num_turns":1,"total_cost_usd":0}"#;
        let o = parse_outcome(Some(1), limited.as_bytes(), b"");
        assert_eq!(o.api_error_status, Some(429));
        assert_eq!(
            o.status(),
            Status::error("You've hit your 5-hour limit · resets 7:20am (UTC)")
        );
        // A run that succeeded is not a limit, whatever a field says.
        let fine = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":429,"result":"ok"}"#;
        assert_eq!(
            parse_outcome(Some(0), fine.as_bytes(), b"").api_error_status,
            None
        );
    }
}
