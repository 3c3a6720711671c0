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
//! - the folder: `session_meta.payload.cwd`.

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
    while let Some(raw) = lines.next_line()? {
        if text_done && facts.context_tokens.is_some() && facts.model.is_some() {
            break;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        let p = &v["payload"];
        match v["type"].as_str() {
            Some("event_msg") if p["type"] == "token_count" && facts.context_tokens.is_none() => {
                facts.context_tokens = p["info"]["last_token_usage"]["input_tokens"].as_u64();
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
