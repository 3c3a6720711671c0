//! The runner port over OpenAI's Codex CLI.
//!
//! `codex exec resume <thread> --json --skip-git-repo-check [-m MODEL] -`, in the
//! conversation's folder, the prompt on stdin (never on the command line), the environment
//! inherited plus [`hooks_core::FOLLOW_UP_ENV`] naming the hook (so the follow-up's own Stop
//! hook queues nothing). The child leads its own process group; at the timeout the group
//! gets SIGTERM, then SIGKILL after the grace, and what is left in it when the child exits
//! is ended. Its JSONL events become the run record ([`parse_events`]).
//!
//! Codex reports the thread's usage so far, not the turn's: the turn's tokens are that
//! less what the thread's rollout said before the run ([`thread_usage`]).

use hooks_platform::process::signal_group;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hooks_core::ports::{RunHandle, RunRequest, Runner, RunnerError};
use hooks_core::{FOLLOW_UP_ENV, ProcessRef, RunOutcome, Status, Usage, ValidationError};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Settings of the runner.
#[derive(Debug, Clone)]
pub struct CodexConfig {
    /// The `codex` binary: a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// How long one run may take.
    pub timeout: Duration,
    /// How long a run stopped at its timeout gets after SIGTERM before SIGKILL.
    pub grace: Duration,
    /// `CODEX_HOME`, where the threads' rollouts are; `None`: `$CODEX_HOME`, else
    /// `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// Variables set in the run's environment besides what it inherits.
    pub env: Vec<(String, String)>,
}

impl Default for CodexConfig {
    fn default() -> Self {
        Self {
            program: PathBuf::from("codex"),
            timeout: Duration::from_secs(30 * 60),
            grace: Duration::from_secs(10),
            codex_home: None,
            env: Vec::new(),
        }
    }
}

/// Resumes Codex conversations.
pub struct CodexRunner {
    config: CodexConfig,
}

impl CodexRunner {
    /// A runner with `config`.
    pub fn new(config: CodexConfig) -> Self {
        Self { config }
    }

    fn codex_home(&self) -> Option<PathBuf> {
        self.config.codex_home.clone().or_else(|| {
            std::env::var_os("CODEX_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))
        })
    }
}

/// Whether Codex can honour a prompt file's run options: it takes the model; a permission
/// mode, a turn limit, allowed tools or an appended system prompt it has no flag for is an
/// error naming the field, so a hook for Codex is refused when it is made or its prompt
/// file approved, not when a run starts. So is a cost cap (the hook's `maxCostUsd`): Codex
/// cannot stop a run at a cost, and a cap that is not held is never pretended.
pub fn check_options(o: &hooks_core::prompt::RunOptions) -> Result<(), ValidationError> {
    if o.max_budget.usd().is_some() {
        return Err(ValidationError::new(
            "maxCostUsd",
            "Codex cannot stop a run at a cost (it has no --max-budget-usd): a hook that follows up Codex conversations takes no cost cap (use --agent claude, or leave the cap out)",
        ));
    }
    let unsupported = [
        ("permissionMode", o.permission_mode.is_some()),
        ("maxTurns", o.max_turns.is_some()),
        ("allowedTools", !o.allowed_tools.is_empty()),
        ("appendSystemPrompt", o.append_system_prompt.is_some()),
    ];
    match unsupported.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(ValidationError::new(
            field,
            "Codex has no such option: remove it from the prompt file for a Codex hook",
        )),
        None => Ok(()),
    }
}

/// The command-line arguments of a follow-up: `exec resume <thread> --json
/// --skip-git-repo-check [-m MODEL] -`. Of the prompt file's run options Codex takes the
/// model; any other is refused, never dropped.
pub fn command_args(req: &RunRequest) -> Result<Vec<String>, RunnerError> {
    let o = &req.prompt.options;
    check_options(o).map_err(RunnerError::Invalid)?;
    let mut args = vec![
        "exec".to_owned(),
        "resume".to_owned(),
        req.session_id.to_string(),
        "--json".to_owned(),
        "--skip-git-repo-check".to_owned(),
    ];
    if let Some(m) = &o.model {
        if m.starts_with('-') || m.contains(char::is_whitespace) {
            return Err(RunnerError::Invalid(ValidationError::new(
                "model",
                format!("{m:?} is not a model name"),
            )));
        }
        args.extend(["-m".to_owned(), m.clone()]);
    }
    // The prompt comes on stdin.
    args.push("-".to_owned());
    Ok(args)
}

/// The rollout of thread `id` under `codex_home` (`sessions/YYYY/MM/DD/rollout-*-<id>.jsonl`).
pub fn rollout_of(codex_home: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    let mut stack = vec![codex_home.join("sessions")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).ok()?.flatten() {
            let p = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if name.starts_with("rollout-") && name.ends_with(&suffix) {
                return Some(p);
            }
        }
    }
    None
}

/// The thread's usage so far, as its rollout's last `token_count` says
/// (`total_token_usage`): input (cached included), cached input, output. Zero for a
/// thread without one.
pub fn thread_usage(rollout: &Path) -> (u64, u64, u64) {
    let Ok(text) = std::fs::read_to_string(rollout) else {
        return (0, 0, 0);
    };
    text.lines()
        .rev()
        .filter(|l| l.contains("\"token_count\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            let t = &v["payload"]["info"]["total_token_usage"];
            Some((
                t["input_tokens"].as_u64()?,
                t["cached_input_tokens"].as_u64().unwrap_or(0),
                t["output_tokens"].as_u64().unwrap_or(0),
            ))
        })
        .unwrap_or((0, 0, 0))
}

/// The run record from `codex exec --json`'s events: the last agent message is the reply
/// (`completed` when its last non-empty line is `COMPLETED`), `turn.completed` the thread's
/// usage (less `before`, the thread's usage before the run), `turn.failed` or `error` a
/// failure; a rate limit among them sets `api_error_status` 429, so the entry is requeued.
pub fn parse_events(stdout: &[u8], exit: Option<i32>, before: (u64, u64, u64)) -> RunOutcome {
    let mut reply: Option<String> = None;
    let mut usage: Option<Usage> = None;
    let mut failure: Option<String> = None;
    let mut thread: Option<String> = None;
    let mut turns = 0u64;
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        match v["type"].as_str() {
            Some("thread.started") => thread = v["thread_id"].as_str().map(str::to_owned),
            Some("item.completed") if v["item"]["type"] == "agent_message" => {
                reply = v["item"]["text"].as_str().map(str::to_owned);
            }
            Some("turn.completed") => {
                turns += 1;
                let u = &v["usage"];
                let input = u["input_tokens"].as_u64().unwrap_or(0);
                let cached = u["cached_input_tokens"].as_u64().unwrap_or(0);
                let output = u["output_tokens"].as_u64().unwrap_or(0);
                let input = input.saturating_sub(before.0);
                let cached = cached.saturating_sub(before.1).min(input);
                usage = Some({
                    let mut o = Usage::default();
                    o.input_tokens = Some(input - cached);
                    o.cache_creation_input_tokens = Some(0);
                    o.cache_read_input_tokens = Some(cached);
                    o.output_tokens = Some(output.saturating_sub(before.2));
                    o
                });
            }
            Some("turn.failed") => {
                failure = v["error"]["message"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| Some(v.to_string()));
            }
            Some("error") => {
                if let Some(m) = v["message"].as_str() {
                    failure = Some(m.to_owned());
                }
            }
            _ => {}
        }
    }
    let rate_limited = failure.as_deref().is_some_and(|f| {
        let f = f.to_ascii_lowercase();
        f.contains("429")
            || f.contains("rate limit")
            || f.contains("too many requests")
            || f.contains("usage limit")
    });
    let completed = reply.as_deref().map(|r| {
        r.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim() == "COMPLETED")
    });
    let status = match (&failure, exit) {
        (Some(f), _) => Status::error(f.lines().next().unwrap_or("codex failed").to_owned()),
        (None, Some(0)) if turns > 0 => Status::Ok,
        (None, Some(0)) => Status::error("codex ended without finishing a turn"),
        (None, code) => Status::error(format!("codex exited with {code:?}")),
    };
    {
        let mut o = RunOutcome::new(status);
        o.exit_code = exit;
        o.completed = completed;
        o.num_turns = Some(turns);
        o.usage = usage;
        o.session_id = thread;
        o.result_text = reply;
        o.api_error_status = rate_limited.then_some(429);
        o
    }
}

#[async_trait]
impl Runner for CodexRunner {
    async fn start(&self, req: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
        let program = self.config.program.display().to_string();
        if req.into_open.is_some() {
            return Err(RunnerError::Invalid(ValidationError::new(
                "intoOpen",
                "the Codex runner resumes conversations; it delivers into none",
            )));
        }
        let args = command_args(req)?;
        let cwd = Path::new(&req.cwd);
        if !cwd.is_dir() {
            return Err(RunnerError::Spawn {
                program,
                message: format!("the session's directory {} does not exist", req.cwd),
            });
        }
        let before = self
            .codex_home()
            .and_then(|h| rollout_of(&h, req.session_id.as_str()))
            .map_or((0, 0, 0), |r| thread_usage(&r));
        let mut cmd = tokio::process::Command::new(&self.config.program);
        if let Some(h) = &self.config.codex_home {
            cmd.env("CODEX_HOME", h);
        }
        cmd.envs(self.config.env.iter().map(|(k, v)| (k, v)));
        cmd.args(&args)
            .current_dir(cwd)
            .env(FOLLOW_UP_ENV, req.hook_id.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: one async-signal-safe call between fork and exec (prctl(2) on Linux): the
        // child dies with the thread that started it.
        unsafe {
            let parent = std::process::id();
            cmd.pre_exec(move || hooks_platform::process::die_with_parent(parent));
        }
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|e| RunnerError::Spawn {
            program: program.clone(),
            message: e.to_string(),
        })?;
        let pgid = child.id().unwrap_or(0);
        if let Some(mut stdin) = child.stdin.take() {
            let body = req.prompt.body.clone().into_bytes();
            tokio::spawn(async move {
                let _ = stdin.write_all(&body).await;
                let _ = stdin.shutdown().await;
            });
        }
        let process = hooks_platform::process::process(pgid).map(|p| ProcessRef {
            pid: pgid,
            start: p.start,
        });
        Ok(Box::new(CodexRun {
            child,
            pgid,
            process,
            before,
            started,
            config: self.config.clone(),
        }))
    }

    async fn end_leftovers(&self, group: &ProcessRef) -> usize {
        hooks_platform::process::end_group_leftovers(group.pid, group.start, FOLLOW_UP_ENV)
    }
}

struct CodexRun {
    child: tokio::process::Child,
    pgid: u32,
    process: Option<ProcessRef>,
    before: (u64, u64, u64),
    started: Instant,
    config: CodexConfig,
}

/// The most of a run's output kept.
const MAX_OUTPUT: u64 = 16 * 1024 * 1024;

#[async_trait]
impl RunHandle for CodexRun {
    fn process(&self) -> Option<ProcessRef> {
        self.process
    }

    async fn wait(self: Box<Self>) -> RunOutcome {
        let CodexRun {
            mut child,
            pgid,
            before,
            started,
            config,
            ..
        } = *self;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            signal_group(pgid, libc::SIGKILL);
            return RunOutcome::new(Status::error("codex: its output pipes were not set up"));
        };
        let read = |r: Box<dyn tokio::io::AsyncRead + Unpin + Send>| {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = r.take(MAX_OUTPUT).read_to_end(&mut buf).await;
                buf
            })
        };
        let out = read(Box::new(stdout));
        let err = read(Box::new(stderr));
        let mut timed_out = false;
        let status = match tokio::time::timeout(config.timeout, child.wait()).await {
            Ok(s) => s,
            Err(_) => {
                timed_out = true;
                signal_group(pgid, libc::SIGTERM);
                match tokio::time::timeout(config.grace, child.wait()).await {
                    Ok(s) => s,
                    Err(_) => {
                        signal_group(pgid, libc::SIGKILL);
                        child.wait().await
                    }
                }
            }
        };
        // What the child left in its group goes with it.
        signal_group(pgid, libc::SIGKILL);
        let stdout = out.await.unwrap_or_default();
        let stderr = err.await.unwrap_or_default();
        let code = status.ok().and_then(|s| s.code());
        let mut outcome = parse_events(&stdout, code, before);
        outcome.duration_ms =
            Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        if timed_out {
            outcome.status = Some(Status::error(format!(
                "timed out after {}s and was stopped (SIGTERM, then SIGKILL after {}s)",
                config.timeout.as_secs(),
                config.grace.as_secs()
            )));
        } else if outcome.status.as_ref().is_some_and(|s| !s.is_ok())
            && outcome.result_text.is_none()
            && let Some(last) = String::from_utf8_lossy(&stderr)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.starts_with("WARNING"))
        {
            outcome.result_text = Some(last.to_owned());
        }
        outcome.with_kept_reply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_become_the_run_record_with_the_turns_own_usage() {
        let out = br#"{"type":"thread.started","thread_id":"t-1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"tidied\nCOMPLETED"}}
{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":400,"output_tokens":100}}
"#;
        let o = parse_events(out, Some(0), (1000, 200, 50));
        assert_eq!(o.status, Some(Status::Ok));
        assert_eq!(o.completed, Some(true));
        assert_eq!(o.session_id.as_deref(), Some("t-1"));
        let u = o.usage.expect("usage");
        assert_eq!(
            (u.input_tokens, u.cache_read_input_tokens, u.output_tokens),
            (Some(800), Some(200), Some(50)),
            "the thread's usage less what it was before the run"
        );
    }

    #[test]
    fn a_rate_limit_is_a_429_and_other_failures_are_errors() {
        let limited = br#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#;
        let o = parse_events(limited, Some(1), (0, 0, 0));
        assert_eq!(o.api_error_status, Some(429));
        assert!(o.status.as_ref().is_some_and(|s| !s.is_ok()));
        // A plan's usage limit, as 0.171.0 prints it: a limit too, its reset read later
        // from the rollout.
        let usage = "{\"type\":\"turn.failed\",\"error\":{\"message\":\"You\u{2019}ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 9:06 PM.\"}}";
        let o = parse_events(usage.as_bytes(), Some(1), (0, 0, 0));
        assert_eq!(o.api_error_status, Some(429));
        let other = br#"{"type":"error","message":"stream disconnected"}"#;
        let o = parse_events(other, Some(1), (0, 0, 0));
        assert_eq!((o.api_error_status, o.completed), (None, None));
        let nothing = parse_events(b"", Some(0), (0, 0, 0));
        assert!(
            nothing.status.as_ref().is_some_and(|s| !s.is_ok()),
            "no turn is no success"
        );
    }
}
