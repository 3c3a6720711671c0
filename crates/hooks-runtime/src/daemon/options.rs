//! What `serve` and `tick` are asked, as the commands give it.

use crate::options::LogFormat;

/// How `serve` and `tick` run follow-ups (the commands make it from the command line).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Follow-ups run at once (one per session).
    pub concurrency: u16,
    /// Seconds a follow-up may run before it is stopped.
    pub run_timeout: u64,
    /// Seconds a claim lasts without renewal.
    pub claim_ttl: u64,
    /// Seconds a conversation must have been quiet before it is resumed.
    pub quiet_period: u64,
    /// Seconds a follow-up waits for an open conversation to be closed.
    pub open_wait: u64,
    /// Into the open conversation where it can be, or only after the close.
    pub deliver: crate::options::Deliver,
    /// Seconds a usage limit's continuation leaves a conversation open in its TUI to the
    /// agent's own continue before it is delivered there.
    pub own_continue_wait: u64,
    pub log_format: LogFormat,
    /// Seconds to wait for running follow-ups on SIGTERM/SIGINT before stopping them.
    pub shutdown_grace: u64,
}

/// How `serve` runs: as `tick` does, for as long as it lives, on demand or not, with the
/// HTTP server or without.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub run: RunOptions,
    pub on_demand: bool,
    pub idle_exit: Option<u64>,
    pub http: Option<std::net::SocketAddr>,
    pub http_no_auth: bool,
    pub http_allow_insecure: bool,
}
