//! hooks-app: the command line, the daemon and the Claude Code hook entry point.
//!
//! This is the one place that picks concrete adapters (the JSON store, the session files
//! and transcripts, the claude runner, prompt files on disk, the system clock) and hands
//! them to the core's `Service`. `main.rs` only calls [`run`]; a team's own `main.rs` adds
//! its store or runner with [`Adapters`] and calls [`Adapters::run`].

#![deny(missing_docs)]

mod cli;
mod commands;

// hooks-runtime's workings, under the names the commands use.
use hooks_runtime::{claude_hook, compose, daemon, fsutil, install, options, output, prices, say};

use std::process::ExitCode;

pub use hooks_prompts::{DEFAULT_CONTINUE_PROMPT, DEFAULT_POST_TASK_PROMPT};
pub use hooks_runtime::{
    AppError, AppResult, BUILT_IN_RUNNERS, BUILT_IN_STORES, Context, RunnerAdapter, RunnerMake,
    Store, StoreAdapter, StoreOpen,
};

/// The whole app with adapters of a team's own besides the built-in ones: a store chosen as
/// `--store NAME:ARG`, a runner as `--runner NAME`. A `main.rs` of a few lines:
///
/// ```no_run
/// use std::sync::Arc;
/// use hooks_app::{Adapters, RunnerMake};
/// # fn my_runner(_: &RunnerMake<'_>) -> Result<Arc<dyn hooks_core::ports::Runner>, String> { unimplemented!() }
///
/// fn main() -> std::process::ExitCode {
///     Adapters::new().runner("mine", my_runner).run()
/// }
/// ```
#[derive(Default, Clone)]
pub struct Adapters(hooks_runtime::Adapters);

impl Adapters {
    /// None besides the built-in ones.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a store named `name`, chosen by `--store name:ARG`.
    ///
    /// # Panics
    /// When `name` is not 1 to 32 of `a-z`, `0-9` and `-`, or is a built-in store's.
    pub fn store(self, name: &str, adapter: impl StoreAdapter + 'static) -> Self {
        Self(self.0.store(name, adapter))
    }

    /// Adds a runner named `name`, chosen by `--runner name` (`HOOKS_RUNNER=name`).
    ///
    /// # Panics
    /// When `name` is not 1 to 32 of `a-z`, `0-9` and `-`, or is a built-in runner's.
    pub fn runner(self, name: &str, adapter: impl RunnerAdapter + 'static) -> Self {
        Self(self.0.runner(name, adapter))
    }

    /// Runs the whole app, as `hooks-app` does, with these adapters besides the built-in
    /// ones; returns the process's exit code.
    pub fn run(self) -> ExitCode {
        self.0.register();
        run()
    }
}

/// Runs the command line with the process's arguments and returns its exit code.
pub fn run() -> ExitCode {
    let parsed = match cli::parse_hook_call(std::env::args_os()) {
        Some(c) => Ok(c),
        None => cli::parse_full(std::env::args_os()),
    };
    let cli = match parsed {
        // A `claude-hook` call the hook parser refused: the full parser read the global
        // options' variables, which in a hook are a repository's to set.
        Ok(cli::Cli {
            command: cli::Command::ClaudeHook(_),
            global,
        }) if !global.from_hook => {
            eprintln!(
                "{} claude-hook: the command line could not be read",
                output::program()
            );
            return ExitCode::from(1);
        }
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // A malformed `claude-hook` call must never exit 2: Claude would block on it.
            let hook_call = std::env::args().any(|a| a == "claude-hook");
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ if hook_call => ExitCode::from(1),
                _ => ExitCode::from(2),
            };
        }
    };
    // A command whose output is piped into `head` ends quietly when the reader goes, as
    // Unix tools do. The daemon and the Claude Code hook keep the default of Rust (an
    // error on a closed pipe), so a closed terminal never kills a running follow-up.
    if !matches!(
        cli.command,
        cli::Command::Serve(_) | cli::Command::Tick(_) | cli::Command::ClaudeHook(_)
    ) {
        // SAFETY: restores the default action of one signal, before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            let message = output::named(&e.message);
            eprintln!(
                "error: {}",
                output::safe(message.lines().next().unwrap_or(""))
            );
            for more in message.lines().skip(1) {
                eprintln!("  {}", output::safe(more));
            }
            ExitCode::from(e.code)
        }
    }
}
