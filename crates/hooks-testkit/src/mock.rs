//! A mock of the Anthropic Messages API on 127.0.0.1, written for this project's tests.
//!
//! Replies stream as server-sent events with usage figures. The reply text is
//! `MOCK REPLY #n`, followed by a line `DONE` when the last user message holds `SAY_DONE`,
//! `COMPLETED` when it holds `SAY_COMPLETED`, or the configured final line. A last user
//! message holding `USE_TOOL` gets a tool call instead (so `--max-turns 1` is reached);
//! one holding `SPAWN_AGENT` gets a call of Claude Code's subagent tool with the prompt
//! `SUBAGENT_WORK` (answered as a plain reply), so the CLI writes a subagent transcript.
//! One holding `CALL_TOOL[[NAME JSON]]` gets a call of the offered tool NAME with JSON as
//! its input (an MCP server's tool, `mcp__server__tool`), answered as `RUN_BASH` is.
//! One holding `RUN_BASH[[COMMAND]]` gets a call of the `Bash` tool running COMMAND, then,
//! with the tool's result in the request, a plain reply that quotes the result's first 400
//! characters (what an agent reads back).
//! A last user message holding `API_ERROR` is refused with a 400 `invalid_request_error`.
//! A last user message holding `SLOW_REPLY` is answered only after the slow delay
//! ([`MockApi::set_slow`], 8 s unless set): a turn that takes a while, as real ones do.
//! In [`MockMode::Hang`] requests are read and never answered. [`MockApi::set_limit`]
//! refuses messages requests the way Anthropic's API does when a limit is reached: a
//! `429` with the `anthropic-ratelimit-unified-*` headers a subscription's usage limit
//! carries, or a `529` overload.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// The text a user message says, its parts joined: a string `content`, or its `text` parts.
fn user_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

pub(crate) fn unique() -> u64 {
    UNIQUE.fetch_add(1, Ordering::SeqCst)
}

/// How the mock answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockMode {
    Normal,
    /// Accept and read requests, never answer.
    Hang,
}

struct Shared {
    mode: Mutex<MockMode>,
    final_line: Mutex<Option<String>>,
    usage: Mutex<(u64, u64, u64)>,
    output_tokens: AtomicU64,
    requests: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    slow: Mutex<std::time::Duration>,
    limit: Mutex<Option<Limit>>,
    stop: AtomicBool,
}

/// How the mock refuses messages requests while a limit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `429`, `anthropic-ratelimit-unified-status: rejected`, resetting at this Unix time
    /// (`five_hour` claim).
    RateLimited { reset: i64 },
    /// `529 overloaded_error`, this many more times (then answered again).
    Overloaded { times: u32 },
}

/// A running mock; stops when dropped.
pub struct MockApi {
    port: u16,
    shared: Arc<Shared>,
}

impl MockApi {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            mode: Mutex::new(MockMode::Normal),
            final_line: Mutex::new(None),
            usage: Mutex::new((100, 2000, 30_000)),
            output_tokens: AtomicU64::new(12),
            requests: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
            slow: Mutex::new(std::time::Duration::from_secs(8)),
            limit: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                thread::spawn(move || {
                    let _ = handle(conn, &s);
                });
            }
        });
        Self { port, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    pub fn set_mode(&self, m: MockMode) {
        *self.shared.mode.lock().expect("mode") = m;
    }
    /// A line every reply ends with (unless SAY_DONE/SAY_COMPLETED decide).
    pub fn set_final_line(&self, line: Option<&str>) {
        *self.shared.final_line.lock().expect("final") = line.map(str::to_owned);
    }
    /// input, cache creation and cache read tokens of every reply.
    pub fn set_usage(&self, input: u64, cache_creation: u64, cache_read: u64) {
        *self.shared.usage.lock().expect("usage") = (input, cache_creation, cache_read);
    }
    /// How long a `SLOW_REPLY` turn takes.
    /// The output tokens a plain reply reports (12 unless set).
    pub fn set_output_tokens(&self, n: u64) {
        self.shared.output_tokens.store(n, Ordering::SeqCst);
    }

    pub fn set_slow(&self, d: std::time::Duration) {
        *self.shared.slow.lock().expect("slow") = d;
    }
    /// Refuses every messages request as `limit` says until cleared with `None`.
    pub fn set_limit(&self, limit: Option<Limit>) {
        *self.shared.limit.lock().expect("limit") = limit;
    }
    /// Whether some messages request so far holds `text` anywhere.
    pub fn saw(&self, text: &str) -> bool {
        self.bodies().iter().any(|b| b.to_string().contains(text))
    }
    /// Messages requests answered or hung so far (count_tokens excluded).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
    /// The bodies of the messages requests so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.shared.bodies.lock().expect("bodies").clone()
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One HTTP/1.1 request read from `conn`: the reader (for what follows), its request line
/// and its body (by `content-length`).
pub(crate) fn read_request(
    conn: &TcpStream,
) -> std::io::Result<(BufReader<TcpStream>, String, Vec<u8>)> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok((reader, request_line, body))
}

fn handle(conn: TcpStream, s: &Shared) -> std::io::Result<()> {
    let (mut reader, request_line, body) = read_request(&conn)?;
    let mut w = conn;
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("");
    if method != "POST" {
        return respond_json(&mut w, &json!({}));
    }
    if path.contains("count_tokens") {
        return respond_json(&mut w, &json!({"input_tokens": 1234}));
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
    s.bodies.lock().expect("bodies").push(req.clone());
    if *s.mode.lock().expect("mode") == MockMode::Hang {
        // Keep the connection open and say nothing until the mock is dropped or the
        // client goes away.
        let mut sink = [0u8; 1];
        while !s.stop.load(Ordering::SeqCst) {
            w.set_read_timeout(Some(std::time::Duration::from_millis(200)))?;
            match reader.read(&mut sink) {
                Ok(0) => break,
                _ => continue,
            }
        }
        return Ok(());
    }
    let refuse = {
        let mut limit = s.limit.lock().expect("limit");
        match *limit {
            Some(Limit::Overloaded { times }) => {
                *limit = (times > 1).then(|| Limit::Overloaded { times: times - 1 });
                Some(Limit::Overloaded { times })
            }
            other => other,
        }
    };
    match refuse {
        Some(Limit::RateLimited { reset }) => {
            let b = json!({"type": "error", "error": {"type": "rate_limit_error",
                "message": "This request would exceed your account's rate limit. Please try again later."}})
            .to_string();
            write!(
                w,
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nrequest-id: req_mock\r\n\
                 x-should-retry: false\r\nanthropic-ratelimit-unified-status: rejected\r\n\
                 anthropic-ratelimit-unified-reset: {reset}\r\n\
                 anthropic-ratelimit-unified-representative-claim: five_hour\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            )?;
            return w.flush();
        }
        Some(Limit::Overloaded { .. }) => {
            return respond_status(
                &mut w,
                "529 Overloaded",
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            );
        }
        None => {}
    }
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let last_user = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(Value::to_string)
        .unwrap_or_default();
    let has_result = Value::Array(msgs.clone())
        .to_string()
        .contains("tool_result");
    let model = req["model"].as_str().unwrap_or("claude-mock").to_owned();
    let (i, cc, cr) = *s.usage.lock().expect("usage");
    let usage = json!({"input_tokens": i, "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr, "output_tokens": 1});
    let id = format!("msg_mock{n:04}");
    let stream = req["stream"].as_bool().unwrap_or(false);
    if last_user.contains("API_ERROR") {
        return respond_status(
            &mut w,
            "400 Bad Request",
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "the mock refuses this request"}}),
        );
    }
    // The subagent tool is `Task` in older CLIs and `Agent` in newer ones: use what is offered.
    let agent_tool = req["tools"].as_array().and_then(|tools| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|n| *n == "Task" || *n == "Agent")
            .map(str::to_owned)
    });
    let tool_call = if has_result || !stream {
        None
    } else if last_user.contains("SPAWN_AGENT")
        && let Some(name) = agent_tool
    {
        Some((
            name,
            json!({"description": "Look around", "prompt": "SUBAGENT_WORK: say what is here", "subagent_type": "general-purpose"}),
        ))
    } else if let Some((name, input)) = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| {
            user_text(m)
                .split_once("CALL_TOOL[[")
                .map(|(_, r)| r.to_owned())
        })
        .and_then(|rest| rest.split_once("]]").map(|(c, _)| c.to_owned()))
        .and_then(|call| {
            let (name, input) = call.split_once(' ')?;
            Some((name.to_owned(), serde_json::from_str::<Value>(input).ok()?))
        })
    {
        Some((name, input))
    } else if let Some(command) = last_user
        .split_once("RUN_BASH[[")
        .and_then(|(_, rest)| rest.split_once("]]"))
        .map(|(c, _)| c.to_owned())
    {
        Some((
            "Bash".to_owned(),
            json!({"command": command, "description": "Run a command"}),
        ))
    } else if last_user.contains("USE_TOOL") {
        Some(("Read".to_owned(), json!({"file_path": "/dev/null"})))
    } else {
        None
    };
    if let Some((tool, input)) = tool_call {
        let start = json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": usage});
        let input = input.to_string();
        let events = [
            (
                "message_start",
                json!({"type": "message_start", "message": start}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": format!("toolu_mock{n}"), "name": tool, "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 20}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        return respond_sse(&mut w, &events);
    }
    if last_user.contains("SLOW_REPLY") {
        let d = *s.slow.lock().expect("slow");
        thread::sleep(d);
    }
    let mut text = format!("MOCK REPLY #{n} (messages in request: {})", msgs.len());
    if last_user.contains("tool_result") {
        text.push_str("\nTOOL RESULT: ");
        text.extend(last_user.chars().take(400));
    }
    if last_user.contains("SAY_DONE") {
        text.push_str("\nDONE");
    } else if last_user.contains("SAY_COMPLETED") {
        text.push_str("\nCOMPLETED");
    } else if let Some(l) = s.final_line.lock().expect("final").clone() {
        text.push('\n');
        text.push_str(&l);
    }
    let output_tokens = s.output_tokens.load(Ordering::SeqCst);
    if !stream {
        let mut usage = usage;
        usage["output_tokens"] = json!(output_tokens);
        let msg = json!({"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null, "usage": usage});
        return respond_json(&mut w, &msg);
    }
    let start = json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage});
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": start}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    respond_sse(&mut w, &events)
}

fn respond_json(w: &mut TcpStream, v: &Value) -> std::io::Result<()> {
    let b = v.to_string();
    write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
        b.len()
    )?;
    w.flush()
}

fn respond_status(w: &mut TcpStream, status: &str, v: &Value) -> std::io::Result<()> {
    let b = v.to_string();
    write!(
        w,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nrequest-id: req_mock\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
        b.len()
    )?;
    w.flush()
}

fn respond_sse(w: &mut TcpStream, events: &[(&str, Value)]) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nrequest-id: req_mock\r\nconnection: close\r\n\r\n"
    )?;
    for (name, data) in events {
        write!(w, "event: {name}\ndata: {data}\n\n")?;
        w.flush()?;
    }
    Ok(())
}
