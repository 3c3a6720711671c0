//! What `install` and `uninstall` are asked, as the commands give it.

use crate::options::{Agent, DaemonMode, Scope, Transport, Trigger};

/// What `install` is asked (the commands make it from the command line).
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// Whose hook configuration is edited.
    pub agent: Agent,
    pub scope: Scope,
    pub trigger: Trigger,
    /// `None`: as set before (else on demand).
    pub daemon: Option<DaemonMode>,
    /// `None`: as set before (else 300 s).
    pub idle_exit: Option<u64>,
    pub dry_run: bool,
    /// `None`: as set before; `Some(None)`: no HTTP any more.
    pub http: Option<Option<std::net::SocketAddr>>,
    pub transport: Transport,
    pub http_url: Option<String>,
    /// The hooks come from the Claude Code plugin: no entry is written (and one an
    /// earlier install wrote in the user's settings is taken out); the daemon is set up.
    pub plugin: bool,
    /// Only `hooks-app mcp` in Claude Code's MCP servers: nothing else is touched.
    pub mcp: bool,
}

/// What `uninstall` is asked.
#[derive(Debug, Clone)]
pub struct UninstallOptions {
    /// Whose hook configuration is edited.
    pub agent: Agent,
    pub scope: Scope,
    pub daemon: Option<DaemonMode>,
    pub dry_run: bool,
    /// Drop what is queued rather than keep it paused.
    pub drop_queue: bool,
    /// Only `hooks-app mcp` out of Claude Code's MCP servers.
    pub mcp: bool,
}
