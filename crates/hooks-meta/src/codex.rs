//! Facts read from an OpenAI Codex rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`),
//! the same facts [`crate::transcript`] reads from a Claude Code transcript, so every rule
//! holds for a Codex conversation too.
//!
//! A rollout's first line is `{"type":"session_meta","payload":{"cwd",…}}`; then
//! `turn_context` lines (`payload.model`), `response_item` lines (the messages), and
//! `event_msg` lines, among them `token_count` (`payload.info.last_token_usage`: the last
//! request's tokens). Read from the end within the same budget as a transcript:
//!
//! - context tokens: the last `token_count`'s `last_token_usage.input_tokens` (cached
//!   input is part of it);
//! - the last assistant text and when it was written: the last `response_item` message
//!   with `role: assistant`, its `output_text` blocks;
//! - the model: the last `turn_context`'s `model`;
//! - the folder: `session_meta.payload.cwd`;
//! - a last turn ended on an error: the last `task_complete` with an `error`
//!   (`codex_error_info`, see [`failure_kind`]) and, within that turn, the `token_count`
//!   whose `rate_limits` window is used up, for when the limit resets.

use std::fs::File;
use std::io::Read;

use hooks_core::TranscriptFacts;
use serde_json::Value;

/// The agent name Codex's conversations go by.
pub const AGENT: &str = "codex";

/// Whether a transcript path names a Codex rollout (`…/rollout-<time>-<thread>.jsonl`):
/// the agent of a conversation known by its path alone, with nothing read.
pub fn is_rollout_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.starts_with("rollout-") && file.ends_with(".jsonl")
}

/// The agent a remembered transcript path says a conversation is of: Codex for a
/// rollout, otherwise none named (Claude Code's, [`hooks_core::DEFAULT_AGENT`]).
pub fn agent_of_path(path: Option<&str>) -> Option<String> {
    path.filter(|p| is_rollout_path(p))
        .map(|_| AGENT.to_owned())
}

/// Whether `head` (the first bytes of a file) is a Codex rollout's: its first line is a
/// `session_meta` record (`{"timestamp":…,"ordinal":0,"type":"session_meta",…`).
pub fn is_rollout(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let near = &first[..first.len().min(200)];
    let key = b"\"type\":\"session_meta\"";
    near.windows(key.len()).any(|w| w == key)
}

/// The `cwd` of a rollout's `session_meta` line, from the head of the file (a line longer
/// than the head still gives it: its `"cwd":"…"` string).
fn head_cwd(head: &[u8]) -> Option<String> {
    let first = head.split(|&b| b == b'\n').next()?;
    if let Ok(v) = serde_json::from_slice::<Value>(first) {
        return v["payload"]["cwd"].as_str().map(str::to_owned);
    }
    let key = b"\"cwd\":";
    let at = first.windows(key.len()).position(|w| w == key)? + key.len();
    serde_json::Deserializer::from_slice(&first[at..])
        .into_iter::<String>()
        .next()?
        .ok()
}

/// Reads a rollout's facts. `file` is at its start; `len` is its length; it is read in
/// chunks of `chunk` bytes, at most `max_scan` from its end (a transcript's budgets).
pub fn read(
    mut file: File,
    len: u64,
    mut facts: TranscriptFacts,
    (chunk, max_scan): (usize, u64),
) -> std::io::Result<(TranscriptFacts, u64)> {
    let mut head = vec![0u8; chunk];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    head.truncate(n);
    facts.cwd = head_cwd(&head);
    let mut lines = hooks_platform::files::LinesFromEnd::new(file, len, max_scan, chunk);
    let mut text_done = false;
    // The last turn's end (or its start, while it runs) was seen; within a failed last
    // turn, until its start.
    let (mut end_seen, mut in_failed_turn) = (false, false);
    while let Some(raw) = lines.next_line()? {
        if text_done
            && facts.context_tokens.is_some()
            && facts.model.is_some()
            && end_seen
            && !in_failed_turn
        {
            break;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        let p = &v["payload"];
        let at = || {
            v["timestamp"].as_str().and_then(|s| {
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
            })
        };
        match v["type"].as_str() {
            // The last turn ended on an error: the conversation's last word is a failure.
            Some("event_msg") if p["type"] == "task_complete" && !end_seen => {
                end_seen = true;
                if p["error"].is_object() {
                    facts.ends_in_error = true;
                    facts.failed_at = at();
                    facts.failed_kind = Some(failure_kind(&p["error"]["codex_error_info"]).into());
                    in_failed_turn = true;
                }
            }
            Some("event_msg") if p["type"] == "task_started" => {
                end_seen = true;
                in_failed_turn = false;
            }
            Some("event_msg") if p["type"] == "token_count" => {
                if in_failed_turn && facts.failed_resets_at.is_none() {
                    facts.failed_resets_at = limit_reset(&p["rate_limits"]);
                }
                if facts.context_tokens.is_none() {
                    facts.context_tokens = p["info"]["last_token_usage"]["input_tokens"].as_u64();
                }
            }
            Some("turn_context") if facts.model.is_none() => {
                facts.model = p["model"].as_str().map(str::to_owned);
            }
            Some("response_item")
                if !text_done && p["type"] == "message" && p["role"] == "assistant" =>
            {
                let text: Vec<&str> = p["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "output_text")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                facts.last_assistant_text = Some(text.join("\n"));
                facts.last_reply_at = v["timestamp"].as_str().and_then(|s| {
                    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                        .ok()
                });
                text_done = true;
            }
            _ => {}
        }
    }
    Ok((facts, max_scan - lines.budget_left()))
}

/// The failure a `task_complete`'s `error.codex_error_info` names, by the names the core
/// knows (Claude Code's): `usage_limit_exceeded` and a `429` are a usage or rate limit, a
/// `529` or `503` an overload, another 5xx a server error; anything else unknown.
/// Measured on 0.171.0: `"usage_limit_exceeded"` for a subscription's limit (OpenAI's
/// `usage_limit_reached`), `{"response_too_many_failed_attempts":{"http_status_code":429}}`
/// for a plain `429`.
pub fn failure_kind(info: &Value) -> &'static str {
    let status = info
        .as_object()
        .and_then(|o| o.values().find_map(|v| v["http_status_code"].as_u64()));
    match (info.as_str(), status) {
        (Some("usage_limit_exceeded"), _) | (_, Some(429)) => "rate_limit",
        (Some("server_overloaded"), _) | (_, Some(503 | 529)) => "overloaded",
        (_, Some(500..=599)) => "server_error",
        _ => "unknown",
    }
}

/// When a `token_count`'s `rate_limits` say the limit resets: the latest `resets_at`
/// (seconds since the epoch) of the windows used up (`used_percent` 100); none used up,
/// none known.
fn limit_reset(limits: &Value) -> Option<hooks_core::stamp::Timestamp> {
    ["primary", "secondary"]
        .iter()
        .map(|w| &limits[w])
        .filter(|w| w["used_percent"].as_f64().is_some_and(|p| p >= 100.0))
        .filter_map(|w| w["resets_at"].as_i64())
        .max()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
}

#[cfg(test)]
mod tests {
    use super::failure_kind;
    use serde_json::json;

    #[test]
    fn codex_error_infos_name_the_core_s_failures() {
        for (info, kind) in [
            (json!("usage_limit_exceeded"), "rate_limit"),
            (
                json!({"response_too_many_failed_attempts": {"http_status_code": 429}}),
                "rate_limit",
            ),
            (
                json!({"response_stream_failed": {"http_status_code": 529}}),
                "overloaded",
            ),
            (
                json!({"response_stream_failed": {"http_status_code": 502}}),
                "server_error",
            ),
            (json!("context_window_exceeded"), "unknown"),
            (json!(null), "unknown"),
        ] {
            assert_eq!(failure_kind(&info), kind, "{info}");
        }
    }
}
