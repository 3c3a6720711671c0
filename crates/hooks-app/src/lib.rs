//! hooks-app: the command line, the daemon and the Claude Code hook entry point.
//!
//! This is the one place that picks concrete adapters (the JSON store, the session files
//! and transcripts, the claude runner, prompt files on disk, the system clock) and hands
//! them to the core's `Service`. `main.rs` only calls [`run`]; a team's own `main.rs` adds
//! its store or runner with [`Adapters`] and calls [`Adapters::run`].

#![deny(missing_docs)]

mod blocking;
mod claude_hook;
mod cli;
mod commands;
mod compose;
mod daemon;
mod fsutil;
mod install;
mod options;
mod output;
mod prices;

use std::process::ExitCode;

use clap::Parser;
use hooks_core::ValidationError;
use hooks_core::ports::StoreError;
use hooks_core::service::ServiceError;

pub use compose::{
    Adapters, BUILT_IN_RUNNERS, BUILT_IN_STORES, Context, RunnerAdapter, RunnerMake, Store,
    StoreAdapter, StoreOpen,
};
pub use hooks_prompts::{DEFAULT_CONTINUE_PROMPT, DEFAULT_POST_TASK_PROMPT};

/// A failure, with the exit code it maps to: 1 for a runtime failure, 2 for bad usage or
/// invalid input.
#[derive(Debug)]
pub struct AppError {
    /// The exit code: 1 or 2.
    pub code: u8,
    /// What went wrong, for the person: its first line after `error:`, the rest indented.
    pub message: String,
}

impl AppError {
    /// A failure at run time (exit 1).
    pub fn runtime(m: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: m.into(),
        }
    }
    /// Bad usage or invalid input (exit 2), naming the field and the rule.
    pub fn invalid(m: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: m.into(),
        }
    }
}

impl From<hooks_claude_code::files::FileError> for AppError {
    fn from(e: hooks_claude_code::files::FileError) -> Self {
        if e.invalid {
            AppError::invalid(e.message)
        } else {
            AppError::runtime(e.message)
        }
    }
}

impl From<hooks_claude_code::settings::EditError> for AppError {
    fn from(e: hooks_claude_code::settings::EditError) -> Self {
        AppError::runtime(e.0)
    }
}

impl From<hooks_core::lookup::SessionLookup> for AppError {
    fn from(e: hooks_core::lookup::SessionLookup) -> Self {
        use hooks_core::lookup::SessionLookup;
        match e {
            SessionLookup::Invalid(e) => e.into(),
            SessionLookup::Ambiguous(m) => AppError::invalid(m),
            SessionLookup::Unknown(m) => AppError::runtime(m),
            SessionLookup::Failed(e) => e.into(),
        }
    }
}

impl From<ValidationError> for AppError {
    fn from(e: ValidationError) -> Self {
        AppError::invalid(e.to_string())
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::HookNotFound(_) | StoreError::Invalid(_) => {
                AppError::invalid(e.to_string())
            }
            other => AppError::runtime(other.to_string()),
        }
    }
}

impl From<ServiceError> for AppError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Store(s) => s.into(),
            ServiceError::Invalid(v) => v.into(),
            other => AppError::runtime(other.to_string()),
        }
    }
}

/// What the app's functions return.
pub type AppResult<T = ()> = Result<T, AppError>;

/// Runs the command line with the process's arguments and returns its exit code.
pub fn run() -> ExitCode {
    let parsed = match cli::parse_hook_call(std::env::args_os()) {
        Some(c) => Ok(c),
        None => cli::Cli::try_parse(),
    };
    let cli = match parsed {
        // A `claude-hook` call the hook parser refused: the full parser read the global
        // options' variables, which in a hook are a repository's to set.
        Ok(cli::Cli {
            command: cli::Command::ClaudeHook(_),
            global,
        }) if !global.from_hook => {
            eprintln!("hooks-app claude-hook: the command line could not be read");
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
            eprintln!(
                "error: {}",
                output::safe(e.message.lines().next().unwrap_or(""))
            );
            for more in e.message.lines().skip(1) {
                eprintln!("  {}", output::safe(more));
            }
            ExitCode::from(e.code)
        }
    }
}
