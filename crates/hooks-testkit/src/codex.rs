//! OpenAI's Codex CLI for the tests: the pinned release installed from npm into
//! `target/test-deps/`, a loopback mock of the Responses API it talks to, and a scratch
//! `CODEX_HOME` pointed at the mock (no network, no account).
//!
//! The mock answers `POST /v1/responses` with server-sent events (`response.created`,
//! `response.output_item.added`, `response.output_text.delta`, `response.output_item.done`,
//! `response.completed` with `usage`). The reply is `CODEX REPLY #n`, then a line `DONE`
//! when the last user input holds `SAY_DONE`, else `COMPLETED` when it holds
//! `SAY_COMPLETED`, else the configured final line. While a rate limit is set it answers
//! `429` as OpenAI's API does; while a usage limit is set, the `429` a ChatGPT plan's limit
//! gets (`usage_limit_reached` with `resets_at`, and the `x-codex-primary-*` headers).

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// The Codex CLI release the tests pin.
pub const CODEX_VERSION: &str = "0.171.0";

/// Where the pinned Codex CLI is installed.
pub fn codex_install_dir() -> PathBuf {
    crate::workspace_root().join(format!("target/test-deps/codex-{CODEX_VERSION}"))
}

fn codex_has_version(bin: &Path) -> bool {
    bin.exists()
        && Command::new(bin)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(CODEX_VERSION))
}

/// The pinned `codex` binary, installing it from npm when it is not there yet. Panics
/// with a clear message when it cannot be had: these tests are never skipped.
pub fn codex_bin() -> PathBuf {
    let dir = codex_install_dir();
    let bin = dir.join("node_modules/.bin/codex");
    if !codex_has_version(&bin) {
        std::fs::create_dir_all(&dir).expect("create the test-deps folder");
        let lock =
            std::fs::File::create(dir.with_extension("lock")).expect("create the install lock");
        lock.lock().expect("lock the install");
        if !codex_has_version(&bin) {
            crate::npm_install(&dir, &format!("@openai/codex@{CODEX_VERSION}"));
        }
        assert!(
            codex_has_version(&bin),
            "{} does not report version {CODEX_VERSION} after install",
            bin.display()
        );
    }
    bin
}

struct Shared {
    final_line: Mutex<Option<String>>,
    usage: Mutex<(u64, u64, u64)>,
    rate_limited: AtomicBool,
    usage_limit: Mutex<Option<i64>>,
    requests: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    stop: AtomicBool,
}

/// A running mock of the Responses API; stops when dropped.
pub struct MockResponses {
    port: u16,
    shared: Arc<Shared>,
}

impl MockResponses {
    /// Starts it on 127.0.0.1 at a free port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            final_line: Mutex::new(None),
            usage: Mutex::new((1000, 200, 50)),
            rate_limited: AtomicBool::new(false),
            usage_limit: Mutex::new(None),
            requests: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
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

    /// The provider's base URL, as Codex's `model_providers.*.base_url` takes it.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
    /// A line every reply ends with (unless SAY_DONE or SAY_COMPLETED decide).
    pub fn set_final_line(&self, line: Option<&str>) {
        *self.shared.final_line.lock().expect("final") = line.map(str::to_owned);
    }
    /// The input, cached input and output tokens every reply reports.
    pub fn set_usage(&self, input: u64, cached: u64, output: u64) {
        *self.shared.usage.lock().expect("usage") = (input, cached, output);
    }
    /// Refuses every request with a 429 while set.
    pub fn set_rate_limited(&self, on: bool) {
        self.shared.rate_limited.store(on, Ordering::SeqCst);
    }
    /// Refuses every request as a plan's usage limit that resets at `reset` (seconds since
    /// the epoch) while set.
    pub fn set_usage_limited(&self, reset: Option<i64>) {
        *self.shared.usage_limit.lock().expect("usage limit") = reset;
    }
    /// Requests answered so far (title requests included).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
    /// Whether some request so far holds `text` anywhere.
    pub fn saw(&self, text: &str) -> bool {
        self.shared
            .bodies
            .lock()
            .expect("bodies")
            .iter()
            .any(|b| b.to_string().contains(text))
    }
}

impl Drop for MockResponses {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn handle(conn: TcpStream, s: &Shared) -> std::io::Result<()> {
    let (_, request_line, body) = crate::mock::read_request(&conn)?;
    let mut w = conn;
    if !request_line.starts_with("POST ") || !request_line.contains("/responses") {
        let b = "{}";
        write!(
            w,
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
            b.len()
        )?;
        return w.flush();
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
    s.bodies.lock().expect("bodies").push(req.clone());
    if let Some(reset) = *s.usage_limit.lock().expect("usage limit") {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let b = json!({"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
            "plan_type": "plus", "resets_at": reset, "resets_in_seconds": reset - now}})
        .to_string();
        write!(
            w,
            "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nx-codex-primary-used-percent: 100\r\nx-codex-primary-window-minutes: 300\r\nx-codex-primary-reset-at: {reset}\r\nx-codex-primary-reset-after-seconds: {}\r\nx-codex-secondary-used-percent: 40\r\nx-codex-secondary-window-minutes: 10080\r\nx-codex-secondary-reset-at: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
            (reset - now).max(0),
            reset + 86_400,
            b.len()
        )?;
        return w.flush();
    }
    if s.rate_limited.load(Ordering::SeqCst) {
        let b = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}).to_string();
        write!(
            w,
            "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 3600\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
            b.len()
        )?;
        return w.flush();
    }
    // The last user input: what decides the reply.
    let last_user = req["input"]
        .as_array()
        .and_then(|items| items.iter().rev().find(|i| i["role"] == "user"))
        .map(Value::to_string)
        .unwrap_or_default();
    let title = req["text"]["format"]["type"] == "json_schema";
    let mut text = format!("CODEX REPLY #{n}");
    if title {
        text = json!({"title": "A conversation"}).to_string();
    } else if last_user.contains("SAY_DONE") {
        text.push_str("\nDONE");
    } else if last_user.contains("SAY_COMPLETED") {
        text.push_str("\nCOMPLETED");
    } else if let Some(l) = s.final_line.lock().expect("final").clone() {
        text.push('\n');
        text.push_str(&l);
    }
    let (input, cached, output) = *s.usage.lock().expect("usage");
    let usage = json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output});
    let (rid, iid) = (format!("resp_mock{n}"), format!("msg_mock{n}"));
    let item = json!({"type": "message", "id": iid, "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let events = [
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": rid}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "id": iid, "role": "assistant", "status": "in_progress", "content": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": iid, "output_index": 0,
                "content_index": 0, "delta": text}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": rid, "usage": usage, "output": [item]}}),
        ),
    ];
    let mut out = String::new();
    for (name, data) in &events {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
        out.len()
    )?;
    w.flush()
}

/// A scratch home for the real Codex CLI: `HOME` and `CODEX_HOME` in a temporary folder,
/// `config.toml` pointing at a [`MockResponses`], a dummy key, and a project folder; the
/// TUI's first-run questions (the project's trust, a newer model's notice) answered as a
/// person would have answered them.
pub struct CodexEnv {
    /// The temporary folder holding it all.
    pub dir: tempfile::TempDir,
    /// A project folder to run in.
    pub proj: PathBuf,
}

impl CodexEnv {
    /// A fresh home pointed at `api`.
    pub fn new(api: &MockResponses) -> Self {
        // Outside any git repository (Codex's TUI asks to trust a repository's root), and
        // the project trusted as a person would have it.
        let dir = tempfile::Builder::new()
            .prefix("codex-test")
            .tempdir()
            .expect("a scratch folder");
        let home = dir.path().join("home");
        let codex_home = home.join(".codex");
        let proj = dir.path().join("proj");
        for d in [&codex_home, &proj] {
            std::fs::create_dir_all(d).expect("create the scratch folders");
        }
        std::fs::write(
            codex_home.join("config.toml"),
            format!(
                "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n\n[tui]\nscreen_reader_detection_done = true\n\n[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n",
                api.base_url(),
                proj.display()
            ),
        )
        .expect("write config.toml");
        Self { dir, proj }
    }

    /// `CODEX_HOME`.
    pub fn codex_home(&self) -> PathBuf {
        self.dir.path().join("home/.codex")
    }

    /// The variables every Codex process of this home needs.
    pub fn vars(&self) -> Vec<(String, String)> {
        vec![
            (
                "HOME".into(),
                self.dir.path().join("home").to_string_lossy().into_owned(),
            ),
            (
                "CODEX_HOME".into(),
                self.codex_home().to_string_lossy().into_owned(),
            ),
            ("OPENAI_API_KEY".into(), "sk-test-dummy".into()),
        ]
    }

    /// Starts a conversation: `codex exec --json "prompt"` in the project folder; returns
    /// the thread id.
    pub fn new_conversation(&self, prompt: &str) -> String {
        self.exec_conversation(prompt, &[])
    }

    /// The same, with the hooks of `hooks.json` run as if a person had trusted them (a
    /// person does once, in Codex's TUI).
    pub fn new_conversation_running_hooks(&self, prompt: &str) -> String {
        self.exec_conversation(prompt, &["--dangerously-bypass-hook-trust"])
    }

    fn exec_conversation(&self, prompt: &str, extra: &[&str]) -> String {
        let mut args = vec!["exec", "--json", "--skip-git-repo-check"];
        args.extend_from_slice(extra);
        args.push(prompt);
        let out = self.exec(&args).output().expect("run codex exec");
        let stdout = String::from_utf8_lossy(&out.stdout);
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "thread.started")
            .and_then(|v| v["thread_id"].as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                panic!(
                    "codex exec started no thread: {stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    }

    /// `codex ARGS` in the project folder with this home's variables, stdin closed (as
    /// `codex exec` needs).
    fn exec(&self, args: &[&str]) -> Command {
        let mut c = Command::new(codex_bin());
        c.args(args)
            .envs(self.vars())
            .env_remove("OPENAI_BASE_URL")
            .current_dir(&self.proj)
            .stdin(std::process::Stdio::null());
        c
    }

    /// The person goes on in thread `id`: `codex exec resume <id> --json "prompt"`.
    pub fn resume(&self, id: &str, prompt: &str) {
        let out = self
            .exec(&[
                "exec",
                "resume",
                id,
                "--json",
                "--skip-git-repo-check",
                prompt,
            ])
            .output()
            .expect("run codex exec resume");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("turn.completed"),
            "the person's turn: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The rollout file of thread `id`.
    pub fn rollout(&self, id: &str) -> Option<PathBuf> {
        fn walk(dir: &Path, id: &str) -> Option<PathBuf> {
            for e in std::fs::read_dir(dir).ok()?.flatten() {
                let p = e.path();
                if p.is_dir() {
                    if let Some(f) = walk(&p, id) {
                        return Some(f);
                    }
                } else if p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(&format!("{id}.jsonl")))
                {
                    return Some(p);
                }
            }
            None
        }
        walk(&self.codex_home().join("sessions"), id)
    }
}
