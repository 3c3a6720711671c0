//! Two adapters a team might write, and how they plug into the whole app (`main.rs`).
//!
//! - [`ScriptRunner`]: a runner that hands each follow-up to a program of the team's (an
//!   agent of its own, a script): the prompt on its standard input, in the conversation's
//!   project folder, in a process group of its own, ended at the run's timeout. Its reply
//!   is its standard output; a last line `COMPLETED` marks the follow-up complete; exit 75
//!   says its agent was rate limited. A hook's cost cap reaches the script as
//!   `HOOKS_MAX_COST_USD`, and what the script says it spent (a line `cost-usd: N` on its
//!   standard error) is recorded, so caps and the daily budget hold; the options a script
//!   cannot take (a model, tools, turns, a permission mode, a system prompt) are refused,
//!   each by name.
//! - [`memory_store`]: the store kept in this process's memory (the core's reference
//!   in-memory store): for a one-process tool or tests. Its tests hold it to the store
//!   contract, as any store must be.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hooks_app::{RunnerMake, Store, StoreOpen};
use hooks_core::ports::{RunHandle, RunRequest, Runner, RunnerError, StoreError, StoreSignals};
use hooks_core::prompt::RunOptions;
use hooks_core::testing::{InMemorySessions, InMemoryStore};
use hooks_core::{FOLLOW_UP_ENV, ProcessRef, RunOutcome, Status, ValidationError};
use tokio::io::AsyncWriteExt;

/// The exit code (`EX_TEMPFAIL`) by which a script says its agent was rate limited.
pub const RATE_LIMITED_EXIT: i32 = 75;

/// The variable that tells a script the most its run may spend, in US dollars (the hook's
/// cost cap); unset when the hook has none.
pub const MAX_COST_ENV: &str = "HOOKS_MAX_COST_USD";

/// How a script says what its run spent: a line of its standard error starting with this,
/// then the amount in US dollars (the last such line counts).
pub const COST_PREFIX: &str = "cost-usd:";

/// The run options a script cannot honour that `options` sets, by their prompt-file names.
pub fn options_it_cannot_take(options: &RunOptions) -> Vec<&'static str> {
    [
        ("model", options.model.is_some()),
        ("permissionMode", options.permission_mode.is_some()),
        ("maxTurns", options.max_turns.is_some()),
        ("allowedTools", !options.allowed_tools.is_empty()),
        ("appendSystemPrompt", options.append_system_prompt.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .chain(unknown(options).then_some("an option this runner does not know"))
    .collect()
}

/// Whether `options` sets anything beyond the fields this runner knows of (a newer core's
/// option): refused too, rather than dropped.
fn unknown(options: &RunOptions) -> bool {
    let mut rest = options.clone();
    rest.model = None;
    rest.permission_mode = None;
    rest.max_turns = None;
    rest.allowed_tools.clear();
    rest.append_system_prompt = None;
    rest.max_budget = hooks_core::CostCap::NONE;
    rest != RunOptions::default()
}

/// Hands each follow-up to `program`.
pub struct ScriptRunner {
    /// The program to run: given as `--runner-url PATH`.
    pub program: PathBuf,
    /// How long one run may take.
    pub timeout: Duration,
}

/// The [`hooks_app::RunnerAdapter`] for `--runner script --runner-url PATH`: it makes the
/// runner ([`script_runner`]) and says, for `doctor`, whether the program is one this user
/// can run.
pub struct ScriptAdapter;

impl hooks_app::RunnerAdapter for ScriptAdapter {
    fn make(&self, with: &RunnerMake<'_>) -> Result<Arc<dyn Runner>, String> {
        script_runner(with)
    }

    /// The program is a file this user may execute; it is not run (a check starts nothing).
    fn check(&self, with: &RunnerMake<'_>) -> Result<String, String> {
        use std::os::unix::fs::PermissionsExt;
        script_runner(with)?;
        let program = PathBuf::from(with.arg.unwrap_or_default());
        let md = std::fs::metadata(&program)
            .map_err(|e| format!("the program {} is not there: {e}", program.display()))?;
        if !md.is_file() || md.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "the program {} is not an executable file",
                program.display()
            ));
        }
        Ok(format!("runs {}", program.display()))
    }
}

/// Makes the script runner for `--runner-url PATH`.
pub fn script_runner(with: &RunnerMake<'_>) -> Result<Arc<dyn Runner>, String> {
    let program = with
        .arg
        .filter(|p| !p.is_empty())
        .ok_or("--runner script needs the program as --runner-url PATH")?;
    Ok(Arc::new(ScriptRunner {
        program: PathBuf::from(program),
        timeout: with.timeout,
    }))
}

#[async_trait]
impl Runner for ScriptRunner {
    async fn start(&self, request: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
        // A script takes a prompt and a cost cap: an option it could not honour is refused,
        // by name, never dropped.
        let refused = options_it_cannot_take(&request.prompt.options);
        if !refused.is_empty() {
            return Err(RunnerError::Invalid(ValidationError::new(
                refused[0],
                format!(
                    "the script runner takes the prompt and a cost cap only; it cannot honour {}",
                    refused.join(", ")
                ),
            )));
        }
        let mut command = tokio::process::Command::new(&self.program);
        command.env_remove(MAX_COST_ENV);
        if let Some(usd) = request.prompt.options.max_budget.usd() {
            command.env(MAX_COST_ENV, format!("{usd}"));
        }
        let mut child = command
            .current_dir(&request.cwd)
            // Names the hook: the agent's own hooks know a follow-up by it, and what a dead
            // run left is told apart by it.
            .env(FOLLOW_UP_ENV, request.hook_id.as_str())
            .env("HOOKS_SESSION_ID", request.session_id.as_str())
            .env("HOOKS_HOOK_ID", request.hook_id.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RunnerError::Spawn {
                program: self.program.display().to_string(),
                message: e.to_string(),
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A script that does not read its prompt is its own business.
            let _ = stdin.write_all(request.prompt.body.as_bytes()).await;
        }
        let process = child.id().and_then(|pid| {
            hooks_platform::process::process(pid).map(|p| ProcessRef {
                pid,
                start: p.start,
            })
        });
        Ok(Box::new(ScriptRun {
            process,
            child,
            timeout: self.timeout,
            started: Instant::now(),
        }))
    }

    /// What a run left when its daemon died: the processes of its group that carry the
    /// follow-up variable.
    async fn end_leftovers(&self, group: &ProcessRef) -> usize {
        hooks_platform::process::end_group_leftovers(group.pid, group.start, FOLLOW_UP_ENV)
    }
}

struct ScriptRun {
    process: Option<ProcessRef>,
    child: tokio::process::Child,
    timeout: Duration,
    started: Instant,
}

#[async_trait]
impl RunHandle for ScriptRun {
    /// The script, leader of its process group: a daemon records it, so one that takes
    /// over after a crash can end what the run left ([`Runner::end_leftovers`]).
    fn process(&self) -> Option<ProcessRef> {
        self.process
    }

    async fn wait(self: Box<Self>) -> RunOutcome {
        let ScriptRun {
            process: _,
            mut child,
            timeout,
            started,
        } = *self;
        let group = child.id().and_then(|p| i32::try_from(p).ok());
        let end_group = || {
            if let Some(pid) = group {
                // SAFETY: signals the process group this run's child led, by its id.
                unsafe {
                    libc::killpg(pid, libc::SIGKILL);
                }
            }
        };
        let read = |r: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>| {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                if let Some(r) = r {
                    let _ = tokio::io::AsyncReadExt::read_to_end(
                        &mut tokio::io::AsyncReadExt::take(r, 16 * 1024 * 1024),
                        &mut buf,
                    )
                    .await;
                }
                buf
            })
        };
        let stdout = read(child.stdout.take().map(|o| Box::new(o) as _));
        let stderr = read(child.stderr.take().map(|e| Box::new(e) as _));
        let status = match tokio::time::timeout(timeout, child.wait()).await {
            Ok(s) => Ok(s),
            Err(elapsed) => {
                // Over its time: the group goes, and the child is reaped before the run
                // is said to be over.
                end_group();
                let _ = child.wait().await;
                Err(elapsed)
            }
        };
        // What the script left in its group goes with it.
        end_group();
        let out = match status {
            Err(e) => Err(e),
            Ok(Err(e)) => Ok(Err(e)),
            Ok(Ok(status)) => Ok(Ok(std::process::Output {
                status,
                stdout: stdout.await.unwrap_or_default(),
                stderr: stderr.await.unwrap_or_default(),
            })),
        };
        let duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        match out {
            Err(_) => {
                let mut o = RunOutcome::new(Status::error(format!(
                    "timed out after {} s",
                    timeout.as_secs()
                )));
                o.duration_ms = duration_ms;
                o
            }
            Ok(Err(e)) => {
                let mut o = RunOutcome::new(Status::error(format!(
                    "the script could not be waited for: {e}"
                )));
                o.duration_ms = duration_ms;
                o
            }
            // EX_TEMPFAIL: the script's agent was refused by a rate limit; the entry goes
            // back to the queue until it resets, as Claude's 429 does.
            Ok(Ok(out)) if out.status.code() == Some(RATE_LIMITED_EXIT) => {
                let mut o = RunOutcome::new(Status::error("rate limited (the script exited 75)"));
                o.exit_code = out.status.code();
                o.api_error_status = Some(429);
                o.duration_ms = duration_ms;
                o
            }
            Ok(Ok(out)) => {
                let reply = String::from_utf8_lossy(&out.stdout).into_owned();
                let last = reply.lines().rev().find(|l| !l.trim().is_empty());
                {
                    let mut o = RunOutcome::new(if out.status.success() {
                        Status::Ok
                    } else {
                        let err = String::from_utf8_lossy(&out.stderr);
                        Status::error(format!(
                            "the script exited with {}: {}",
                            out.status,
                            err.lines().last().unwrap_or("")
                        ))
                    });
                    o.exit_code = out.status.code();
                    o.cost_usd = reported_cost(&out.stderr);
                    o.completed = Some(last.is_some_and(|l| l.trim() == "COMPLETED"));
                    o.num_turns = Some(1);
                    o.duration_ms = duration_ms;
                    o.result_text = Some(reply);
                    o
                }
                .with_kept_reply()
            }
        }
    }
}

/// What a script said it spent: its last `cost-usd: N` line on standard error.
fn reported_cost(stderr: &[u8]) -> Option<f64> {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(COST_PREFIX))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .filter(|n| n.is_finite() && *n >= 0.0)
}

/// Nothing outside this process changes a store in its memory.
struct InProcess;

impl StoreSignals for InProcess {
    fn watch(&self, _wake: Box<dyn Fn() + Send + Sync>) -> Result<(), String> {
        Err("a store in memory changes only in this process".into())
    }
    fn fingerprint(&self) -> Option<String> {
        None
    }
    fn exists(&self) -> bool {
        true
    }
    fn housekeep(&self) -> Result<usize, StoreError> {
        Ok(0)
    }
    fn location(&self) -> String {
        "this process's memory".into()
    }
    fn restore_hint(&self) -> Option<String> {
        None
    }
}

/// The [`hooks_app::StoreAdapter`] for `--store memory:`: a new store, seeded, in this
/// process's memory. Anything after `memory:` is refused: there is nothing to name. A
/// store in memory is there only while its process runs, so a command that only reads
/// (opened without [`StoreOpen::create`]) finds none, and is told so rather than shown a
/// store made for it. One process and one host: `--any-host` and `--store-poll` change
/// nothing here.
pub fn memory_store(at: &StoreOpen<'_>) -> Result<Store, String> {
    if !at.arg.is_empty() {
        return Err(format!(
            "memory: takes nothing after the colon (got {:?})",
            at.arg
        ));
    }
    if !at.create {
        return Err(
            "a store in memory is there only while its process runs: there is none to read \
             (this command only reads; nothing was made)"
                .into(),
        );
    }
    Ok(Store {
        data: InMemoryStore::seeded(time::OffsetDateTime::now_utc()),
        sessions: InMemorySessions::new(),
        signals: Arc::new(InProcess),
        clock_offset: time::Duration::ZERO,
    })
}
