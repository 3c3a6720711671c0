//! Facts read from a Claude Code transcript (`<session>.jsonl`), or from a Codex rollout
//! ([`crate::codex`]), told apart by its first line.
//!
//! The file is read from its end in chunks of [`CHUNK`] bytes, at most [`MAX_SCAN_BYTES`]
//! in all, and from its head for at most one chunk: the work does not grow with the
//! transcript. Lines that are partial (the file is being appended to), blank, not JSON or
//! of an unknown type are passed over.
//!
//! - context tokens: the last `assistant` line with `message.usage` that is not synthetic
//!   (`message.model` `<synthetic>`, `isApiErrorMessage`) and, in a main transcript, not a
//!   sidechain line: `input + cache_creation_input + cache_read_input` tokens;
//! - the last assistant text: every text block of that last assistant message, which
//!   Claude Code may have split over several lines sharing one `message.id`;
//! - subagent or not: the path (`…/subagents/agent-*.jsonl`, legacy `agent-*.jsonl`) or the
//!   first conversation line's `isSidechain: true`;
//! - the model of that last assistant message (`message.model`) and its line's `timestamp`;
//! - whether the last assistant line is an API error written in place of a reply;
//! - the hook whose delivered follow-up the last turn answered, when its prompt (the first
//!   user line with words back from the last reply) is one
//!   ([`hooks_core::live::delivered_follow_up`]);
//! - the folder the conversation was started in (the `cwd` of the first line that has one,
//!   read from the head: later lines follow the agent's `cd`s), and the file's last change.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use hooks_core::{TranscriptFacts, is_subagent_path};
use serde::Deserialize;
use serde_json::Value;

/// How much is read at a time.
pub const CHUNK: usize = 64 * 1024;
/// The most read from the end of one transcript.
pub const MAX_SCAN_BYTES: u64 = 16 * 1024 * 1024;
/// The most read from the end looking for the last turn's prompt.
pub const PROMPT_SCAN_BYTES: u64 = 2 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    is_sidechain: Option<bool>,
    #[serde(default)]
    is_api_error_message: Option<bool>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
    /// An API error line's kind (`rate_limit`, …); anything else elsewhere.
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<UsageLine>,
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Deserialize)]
struct UsageLine {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl Line {
    fn is_synthetic(&self) -> bool {
        self.is_api_error_message == Some(true)
            || self.message.as_ref().and_then(|m| m.model.as_deref()) == Some("<synthetic>")
    }
    fn texts(&self) -> Vec<String> {
        match self.message.as_ref().and_then(|m| m.content.as_ref()) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn parse(line: &[u8]) -> Option<Line> {
    serde_json::from_slice(line).ok()
}

/// What the head of a transcript says.
#[derive(Default)]
struct Head {
    /// The first conversation line (user or assistant) says `isSidechain: true`.
    sidechain: bool,
    /// The `cwd` of the first line that has one.
    cwd: Option<String>,
}

/// Reads the head of the file (one chunk). A line cut off by the chunk's end (a long
/// first prompt) still gives its `cwd`, which Claude Code writes before the message.
fn read_head(file: &mut File) -> std::io::Result<Head> {
    let mut head = vec![0u8; CHUNK];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    head.truncate(n);
    // A first line longer than the chunk (a long first prompt; 2.1.332 writes `cwd` after
    // the message): it is read whole, within the scan budget, so the folder is the one it
    // names, never guessed from a project folder's name.
    if n == CHUNK && !head.contains(&b'\n') {
        let mut chunk = vec![0u8; CHUNK];
        while (head.len() as u64) < MAX_SCAN_BYTES {
            let k = file.read(&mut chunk)?;
            if k == 0 {
                break;
            }
            if let Some(end) = chunk[..k].iter().position(|&b| b == b'\n') {
                head.extend_from_slice(&chunk[..end]);
                break;
            }
            head.extend_from_slice(&chunk[..k]);
        }
    }
    let mut out = Head::default();
    let mut seen_conversation = false;
    for raw in head.split(|&b| b == b'\n') {
        match parse(raw) {
            Some(l) => {
                if out.cwd.is_none() {
                    out.cwd.clone_from(&l.cwd);
                }
                if !seen_conversation && matches!(l.kind.as_deref(), Some("user" | "assistant")) {
                    seen_conversation = true;
                    out.sidechain = l.is_sidechain == Some(true);
                }
            }
            None if out.cwd.is_none() => out.cwd = cwd_of_partial(raw),
            None => {}
        }
        if out.cwd.is_some() && seen_conversation {
            break;
        }
    }
    Ok(out)
}

/// The `"cwd":"…"` string of a line that does not parse whole.
fn cwd_of_partial(raw: &[u8]) -> Option<String> {
    let key = b"\"cwd\":";
    let at = raw.windows(key.len()).position(|w| w == key)? + key.len();
    serde_json::Deserializer::from_slice(&raw[at..])
        .into_iter::<String>()
        .next()?
        .ok()
}

/// Reads the facts of the transcript at `path`.
pub fn read_facts(path: &Path) -> std::io::Result<TranscriptFacts> {
    read_facts_counted(path).map(|(f, _)| f)
}

/// [`read_facts`], also returning how many bytes were read from the end of the file: the
/// measure of its cost, which must not grow with the file.
pub fn read_facts_counted(path: &Path) -> std::io::Result<(TranscriptFacts, u64)> {
    // A FIFO or a device named as the transcript is refused at once, never waited on.
    let mut file = hooks_platform::open_regular(path, false)?;
    let meta = file.metadata()?;
    let last_change = meta.modified().ok().map(time::OffsetDateTime::from);
    let path_str = path.to_string_lossy().into_owned();
    // A Codex rollout has facts of the same kind in other records.
    let mut peek = [0u8; 256];
    let mut got = 0;
    while got < peek.len() {
        match file.read(&mut peek[got..])? {
            0 => break,
            k => got += k,
        }
    }
    std::io::Seek::rewind(&mut file)?;
    if crate::codex::is_rollout(&peek[..got]) {
        let facts = {
            let mut o = TranscriptFacts::default();
            o.path = path_str;
            o.last_change = last_change;
            o.agent = Some("codex".into());
            o
        };
        return crate::codex::read(file, meta.len(), facts, (CHUNK, MAX_SCAN_BYTES));
    }
    let head = read_head(&mut file)?;
    let subagent = is_subagent_path(&path_str) || head.sidechain;
    let mut facts = {
        let mut o = TranscriptFacts::default();
        o.path = path_str;
        o.subagent = subagent;
        o.last_change = last_change;
        o.cwd = head.cwd;
        o
    };

    let mut lines =
        hooks_platform::files::LinesFromEnd::new(file, meta.len(), MAX_SCAN_BYTES, CHUNK);
    // The id of the last assistant message, and its text blocks gathered back to front.
    let mut last_msg: Option<Option<String>> = None;
    let mut texts_rev: Vec<String> = Vec::new();
    let mut text_done = false;
    let mut seen_assistant = false;
    // The prompt of the turn that holds the last assistant message has been read.
    let mut prompt_done = false;
    while let Some(raw) = lines.next_line()? {
        // A turn of many tool calls is not read back to its prompt past this: it is then
        // taken for the person's.
        if text_done && MAX_SCAN_BYTES - lines.budget_left() > PROMPT_SCAN_BYTES {
            prompt_done = true;
        }
        if facts.context_tokens.is_some() && text_done && prompt_done {
            break;
        }
        // Cheap filter: only lines that can matter are parsed. The tool results between a
        // turn's prompt and its reply are many, and never its prompt.
        let maybe_assistant = contains(&raw, b"\"assistant\"");
        let maybe_turn_start = last_msg.is_some()
            && (!text_done || (!prompt_done && !contains(&raw, b"\"tool_result\"")))
            && contains(&raw, b"\"user\"");
        if !maybe_assistant && !maybe_turn_start {
            continue;
        }
        let Some(line) = parse(&raw) else { continue };
        if !subagent && line.is_sidechain == Some(true) {
            continue;
        }
        if line.kind.as_deref() == Some("user") && last_msg.is_some() {
            // The turn that holds the last assistant message starts here: its text is whole.
            text_done = true;
            // Its prompt is the first line back with words (a tool's result has none).
            let texts = line.texts();
            if !prompt_done && !texts.is_empty() {
                prompt_done = true;
                facts.follow_up_of = texts
                    .iter()
                    .find_map(|t| hooks_core::live::delivered_follow_up(t))
                    .map(str::to_owned);
            }
            continue;
        }
        if line.kind.as_deref() != Some("assistant") {
            continue;
        }
        // The last word is a reply or an API error; other synthetic lines ("No response
        // requested.") are neither.
        let api_error = line.is_api_error_message == Some(true);
        if !seen_assistant && (api_error || !line.is_synthetic()) {
            seen_assistant = true;
            facts.ends_in_error = api_error;
            if api_error {
                facts.failed_at = line.timestamp.as_deref().and_then(parse_time);
                facts.failed_kind = line
                    .error
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
        }
        if line.is_synthetic() {
            continue;
        }
        let id = line.message.as_ref().and_then(|m| m.id.clone());
        if !text_done {
            match &last_msg {
                None => {
                    last_msg = Some(id.clone());
                    facts.model = line.message.as_ref().and_then(|m| m.model.clone());
                    facts.last_reply_at = line.timestamp.as_deref().and_then(parse_time);
                    texts_rev.extend(line.texts().into_iter().rev());
                }
                Some(prev) if prev.is_some() && *prev == id => {
                    texts_rev.extend(line.texts().into_iter().rev())
                }
                Some(_) => text_done = true,
            }
        }
        if facts.context_tokens.is_none()
            && let Some(u) = line.message.as_ref().and_then(|m| m.usage.as_ref())
            && u.input_tokens.is_some()
        {
            facts.context_tokens = Some(
                u.input_tokens.unwrap_or(0)
                    + u.cache_creation_input_tokens.unwrap_or(0)
                    + u.cache_read_input_tokens.unwrap_or(0),
            );
        }
    }
    if last_msg.is_some() {
        texts_rev.reverse();
        facts.last_assistant_text = Some(texts_rev.join("\n"));
    }
    Ok((facts, MAX_SCAN_BYTES - lines.budget_left()))
}

/// A line's `timestamp` (RFC 3339, as Claude Code writes it).
fn parse_time(s: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
