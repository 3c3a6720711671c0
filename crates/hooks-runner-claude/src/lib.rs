//! The runner port over the `claude` CLI.
//!
//! `claude -p --resume <session> --output-format json [options]`, in the session's cwd,
//! the prompt on stdin (never on the command line, where every local user could read it in
//! `/proc` and a long one would not fit), the environment inherited plus
//! `HOOKS_APP_FOLLOW_UP=<hookId>` (so the follow-up's own hooks know to stay quiet). The
//! child leads its own process group: at the timeout the group gets SIGTERM, then SIGKILL
//! after the grace period, and when the child exits anything left in its group is killed,
//! so no process of a run outlives it. Output kept is bounded.
//!
//! A follow-up whose conversation is open in the TUI, where Claude Code offers a way in,
//! is delivered there instead (`open`): one turn the person sees, no process of ours.

mod open;
mod result;

use hooks_platform::process::signal_group;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hooks_core::ports::{RunHandle, RunRequest, Runner, RunnerError};
use hooks_core::{ProcessRef, RunOutcome, Status};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

pub use result::parse_outcome;

pub use hooks_core::FOLLOW_UP_ENV;

/// Settings of the runner.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The `claude` binary: a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// How long a run may take before it is stopped.
    pub timeout: Duration,
    /// How long a stopped run gets between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The most of stdout kept (the result object is on stdout).
    pub max_stdout: usize,
    /// The most of stderr kept.
    pub max_stderr: usize,
    /// Variables set on the child beyond the inherited environment.
    pub env: Vec<(String, String)>,
    /// Inherited variables removed from the child's environment.
    pub env_remove: Vec<String>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            program: PathBuf::from("claude"),
            timeout: Duration::from_secs(30 * 60),
            grace: Duration::from_secs(10),
            max_stdout: 8 * 1024 * 1024,
            max_stderr: 64 * 1024,
            env: Vec::new(),
            env_remove: Vec::new(),
        }
    }
}

/// Runs follow-ups with the `claude` CLI.
#[derive(Debug, Clone, Default)]
pub struct ClaudeRunner {
    config: RunnerConfig,
}

/// What a bounded read kept.
#[derive(Debug, Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

async fn read_bounded(mut r: impl AsyncRead + Unpin, max: usize) -> Captured {
    let mut c = Captured::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return c,
            Ok(n) => {
                let room = max.saturating_sub(c.bytes.len()).min(n);
                c.bytes.extend_from_slice(&buf[..room]);
                c.dropped += (n - room) as u64;
            }
        }
    }
}

/// Kills a run's process group when the run is dropped, finished or not: a run cancelled
/// mid-way (the daemon stopping it) leaves no process behind either.
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, libc::SIGKILL);
    }
}

/// The arguments of one run. The prompt is not among them: it goes to stdin; nor is an
/// appended system prompt's text: `system_prompt_file` names the private file that holds
/// it (`--append-system-prompt-file`).
pub fn command_args(req: &RunRequest, system_prompt_file: Option<&std::path::Path>) -> Vec<String> {
    let mut args = vec![
        "-p".to_owned(),
        "--resume".to_owned(),
        req.session_id.to_string(),
        "--output-format".to_owned(),
        "json".to_owned(),
    ];
    args.extend(req.prompt.options.to_args());
    if let Some(f) = system_prompt_file {
        args.extend([
            "--append-system-prompt-file".to_owned(),
            f.display().to_string(),
        ]);
    }
    args
}

/// Writes an appended system prompt into a file only its owner can read (0600, a random
/// name in the temporary folder), removed when the run ends.
fn system_prompt_file(text: &str) -> std::io::Result<tempfile::TempPath> {
    use std::io::Write;
    let mut f = tempfile::Builder::new()
        .prefix("hooks-app-system-prompt-")
        .suffix(".txt")
        .tempfile()?;
    f.write_all(text.as_bytes())?;
    f.flush()?;
    Ok(f.into_temp_path())
}

impl ClaudeRunner {
    pub fn new(config: RunnerConfig) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// Starts a run and waits for it.
    pub async fn run(&self, req: &RunRequest) -> Result<RunOutcome, RunnerError> {
        Ok(self.start(req).await?.wait().await)
    }

    /// `claude --version`, for `doctor`.
    pub async fn version(&self) -> Result<String, String> {
        let out = Command::new(&self.config.program)
            .arg("--version")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        match tokio::time::timeout(Duration::from_secs(20), out).await {
            Ok(Ok(o)) if o.status.success() => {
                Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned())
            }
            Ok(Ok(o)) => Err(format!(
                "exited with {:?}: {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out".to_owned()),
        }
    }
}

/// The start time of a process, as the platform tells it.
fn start_time(pid: u32) -> Option<u64> {
    hooks_platform::process::process(pid).map(|p| p.start)
}

/// The processes of the group `group` led that are still there
/// ([`hooks_platform::process::group_leftovers`], marked by [`FOLLOW_UP_ENV`]).
pub fn leftovers(group: &ProcessRef) -> Vec<u32> {
    hooks_platform::process::group_leftovers(group.pid, group.start, FOLLOW_UP_ENV)
}

/// A run under way: the child, its output readers, and its group's guard.
struct ClaudeRun {
    child: tokio::process::Child,
    process: Option<ProcessRef>,
    pgid: u32,
    group: GroupGuard,
    out: tokio::task::JoinHandle<Captured>,
    err: tokio::task::JoinHandle<Captured>,
    started: Instant,
    program: String,
    config: RunnerConfig,
    /// The appended system prompt's file, removed when the run is dropped.
    _system_prompt: Option<tempfile::TempPath>,
}

#[async_trait]
impl Runner for ClaudeRunner {
    fn delivers_into_open(&self) -> bool {
        true
    }

    async fn start(&self, req: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
        if let Some(delivery) = &req.into_open {
            return Ok(Box::new(open::OpenRun {
                delivery: delivery.clone(),
                session_id: req.session_id.to_string(),
                hook_id: req.hook_id.to_string(),
                prompt: req.prompt.body.clone(),
                timeout: self.config.timeout,
            }));
        }
        // Values reach the command line only through the core's validated types, but check
        // the options once more here: this is the last line before a process is started.
        for v in req.prompt.options.to_args().iter().skip(1).step_by(2) {
            if v.starts_with('-') || v.contains('\n') {
                return Err(RunnerError::Invalid(hooks_core::ValidationError::new(
                    "prompt options",
                    format!("{v:?} looks like a flag or spans lines"),
                )));
            }
        }
        let program = self.config.program.display().to_string();
        let cwd = std::path::Path::new(&req.cwd);
        if !cwd.is_dir() {
            return Err(RunnerError::Spawn {
                program,
                message: format!("the session's directory {} does not exist", req.cwd),
            });
        }
        let system_prompt = match &req.prompt.options.append_system_prompt {
            Some(text) => Some(system_prompt_file(text).map_err(|e| RunnerError::Spawn {
                program: program.clone(),
                message: format!("could not write the appended system prompt's file: {e}"),
            })?),
            None => None,
        };
        let mut cmd = Command::new(&self.config.program);
        for k in &self.config.env_remove {
            cmd.env_remove(k);
        }
        cmd.envs(self.config.env.iter().map(|(k, v)| (k, v)));
        cmd.args(command_args(req, system_prompt.as_deref()))
            .current_dir(cwd)
            .env(FOLLOW_UP_ENV, req.hook_id.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: the closure runs in the child between fork and exec and only makes one
        // async-signal-safe call (prctl(2) on Linux). It makes the kernel kill the child if
        // the thread that started it dies (a daemon killed with SIGKILL); what the child
        // itself started is ended by the next daemon on the host, from the lease.
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
        let group = GroupGuard(pgid);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            signal_group(pgid, libc::SIGKILL);
            return Err(RunnerError::Spawn {
                program,
                message: "its output pipes were not set up".to_owned(),
            });
        };
        if let Some(mut stdin) = child.stdin.take() {
            // Written while the output is read, then closed: claude reads a prompt on stdin
            // to its end. A child that exits without reading it is judged by its result.
            let body = req.prompt.body.clone().into_bytes();
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = stdin.write_all(&body).await;
                let _ = stdin.shutdown().await;
            });
        }
        let out = tokio::spawn(read_bounded(stdout, self.config.max_stdout));
        let err = tokio::spawn(read_bounded(stderr, self.config.max_stderr));
        let process = start_time(pgid).map(|start| ProcessRef { pid: pgid, start });
        Ok(Box::new(ClaudeRun {
            child,
            process,
            pgid,
            group,
            out,
            err,
            started,
            program,
            config: self.config.clone(),
            _system_prompt: system_prompt,
        }))
    }

    async fn end_leftovers(&self, group: &ProcessRef) -> usize {
        hooks_platform::process::end_group_leftovers(group.pid, group.start, FOLLOW_UP_ENV)
    }
}

#[async_trait]
impl RunHandle for ClaudeRun {
    fn process(&self) -> Option<ProcessRef> {
        self.process
    }

    async fn wait(self: Box<Self>) -> RunOutcome {
        let ClaudeRun {
            mut child,
            pgid,
            group: _group,
            out,
            err,
            started,
            program,
            config,
            _system_prompt,
            ..
        } = *self;
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
        // Whatever the child left behind in its group goes with it.
        signal_group(pgid, libc::SIGKILL);
        let collect = |h: tokio::task::JoinHandle<Captured>| async move {
            let abort = h.abort_handle();
            match tokio::time::timeout(Duration::from_secs(5), h).await {
                Ok(Ok(c)) => c,
                _ => {
                    abort.abort();
                    Captured::default()
                }
            }
        };
        let (stdout, stderr) = (collect(out).await, collect(err).await);
        let elapsed = started.elapsed();
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                return RunOutcome::new(Status::error(format!(
                    "{program}: waiting for it failed: {e}"
                )));
            }
        };

        let mut outcome = parse_outcome(status.code(), &stdout.bytes, &stderr.bytes);
        if outcome.duration_ms.is_none() {
            outcome.duration_ms = Some(elapsed.as_millis() as u64);
        }
        if timed_out {
            let t = config.timeout;
            outcome.status = Some(Status::error(format!(
                "timed out after {}s and was stopped (SIGTERM, then SIGKILL after {}s)",
                t.as_secs(),
                config.grace.as_secs()
            )));
        } else if stdout.dropped > 0 && outcome.status.as_ref().is_some_and(Status::is_ok) {
            // Unreachable in practice (the result is one object), kept for the record.
            outcome.status = Some(Status::error(format!(
                "output over {} bytes was cut",
                config.max_stdout
            )));
        }
        outcome
    }
}
