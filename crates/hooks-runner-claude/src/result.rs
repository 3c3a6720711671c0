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
    usage: Option<UsageJson>,
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
        return RunOutcome {
            status: Some(Status::error(status)),
            exit_code,
            ..RunOutcome::default()
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
    RunOutcome {
        status: Some(status),
        exit_code,
        completed: r
            .result
            .as_deref()
            .map(|t| ends_with_marker(t, COMPLETED_MARKER)),
        num_turns: r.num_turns,
        cost_usd: r.total_cost_usd,
        usage: r.usage.map(|u| Usage {
            input_tokens: u.input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            output_tokens: u.output_tokens,
        }),
        duration_ms: r.duration_ms,
        session_id: r.session_id,
        result_text: r.result,
    }
}
