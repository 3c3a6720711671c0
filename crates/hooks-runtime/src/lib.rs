//! hooks-runtime: everything hooks-app runs, as a library: the composition root (which
//! adapters, built from where things are), the daemon (`serve`, `tick`, the on-demand
//! daemon and its HTTP side), Claude Code's hook entry point, and `install`. The
//! `hooks-app` crate adds the command line on top; a team composes its own binary through
//! [`Adapters`] there.
//!
//! The modules below the composition API are hooks-app's own workings, public for the
//! `hooks-app` crate and hidden from the documentation.

#![deny(missing_docs)]

#[doc(hidden)]
pub mod blocking;
#[doc(hidden)]
pub mod claude_hook;
#[doc(hidden)]
pub mod compose;
#[doc(hidden)]
pub mod daemon;
#[doc(hidden)]
pub mod fsutil;
#[doc(hidden)]
pub mod install;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod options;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod prices;
#[doc(hidden)]
pub mod schedule;

use hooks_core::ValidationError;
use hooks_core::ports::StoreError;
use hooks_core::service::ServiceError;

pub use compose::{
    Adapters, BUILT_IN_RUNNERS, BUILT_IN_STORES, Context, RunnerAdapter, RunnerMake, Store,
    StoreAdapter, StoreOpen,
};

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
