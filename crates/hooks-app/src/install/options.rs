//! What `install` and `uninstall` are asked, as the commands give it.

use crate::options::{DaemonMode, Scope, Transport, Trigger};

/// What `install` is asked (the commands make it from the command line).
#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub scope: Scope,
    pub trigger: Trigger,
    pub daemon: DaemonMode,
    pub idle_exit: u64,
    pub dry_run: bool,
    pub http: Option<std::net::SocketAddr>,
    pub transport: Transport,
    pub http_url: Option<String>,
}

/// What `uninstall` is asked.
#[derive(Debug, Clone)]
pub struct UninstallOptions {
    pub scope: Scope,
    pub daemon: Option<DaemonMode>,
    pub dry_run: bool,
}
