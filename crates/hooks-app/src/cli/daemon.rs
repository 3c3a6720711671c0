//! `install`, `uninstall`, `tick` and `serve`: Claude Code's hook entries and the daemon.

use clap::Args;

use crate::options::{Agent, DaemonMode, Deliver, LogFormat, Scope, Transport, Trigger};

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Whose hooks: Claude Code's settings, or Codex's hooks.json ($CODEX_HOME)
    #[arg(long, value_enum, default_value_t = Agent::Claude)]
    pub agent: Agent,
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    #[arg(long, value_enum, default_value_t = Trigger::Stop)]
    pub trigger: Trigger,
    /// How the daemon runs [default: as set before, else on-demand]
    #[arg(long, value_enum)]
    pub daemon: Option<DaemonMode>,
    /// Seconds an on-demand daemon stays with nothing pending before it exits [default: as
    /// set before, else 300]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_exit: Option<u64>,
    /// Show what would change and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The daemon (on demand or service) also serves the HTTP API and the page at ADDR
    /// (loopback), for `hooks-app open` [default: as set before]
    #[arg(long, value_name = "ADDR", conflicts_with = "no_http")]
    pub http: Option<std::net::SocketAddr>,
    /// The daemon serves no HTTP any more
    #[arg(long)]
    pub no_http: bool,
    /// How Claude Code hands events over: by running claude-hook (works without a daemon),
    /// or by POSTing to a daemon running with --http (no process per event)
    #[arg(long, value_enum, default_value_t = Transport::Command)]
    pub transport: Transport,
    /// With --transport http: the daemon's address [default: the running daemon's]
    #[arg(long, value_name = "URL", requires = "transport")]
    pub http_url: Option<String>,
    /// The hooks come from the Claude Code plugin (`/plugin install hooks-app@hooks-app`):
    /// write no entry in settings.json (and take out one an earlier install wrote); set up
    /// the daemon and the environment it starts with only
    #[arg(long, conflicts_with_all = ["agent", "scope", "trigger", "transport", "http_url"])]
    pub plugin: bool,
    /// Add `hooks-app mcp` to Claude Code's MCP servers (~/.claude.json), so the agent can
    /// schedule its own follow-ups; nothing else is installed or changed
    #[arg(long, conflicts_with_all = ["agent", "scope", "trigger", "transport", "http_url", "plugin", "daemon", "http", "no_http", "idle_exit"])]
    pub mcp: bool,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Whose hooks: Claude Code's settings, or Codex's hooks.json ($CODEX_HOME)
    #[arg(long, value_enum, default_value_t = Agent::Claude)]
    pub agent: Agent,
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    /// `service` also removes the systemd / launchd unit
    #[arg(long, value_enum)]
    pub daemon: Option<DaemonMode>,
    #[arg(long)]
    pub dry_run: bool,
    /// Drop the queued follow-ups (each logged as skipped) rather than keep them paused
    #[arg(long)]
    pub drop_queue: bool,
    /// Take `hooks-app mcp` out of Claude Code's MCP servers only; nothing else changes
    #[arg(long, conflicts_with_all = ["agent", "scope", "daemon", "drop_queue"])]
    pub mcp: bool,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Follow-ups run at once (one per session)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Seconds a follow-up may run before it is stopped
    #[arg(long, default_value_t = 1800, value_name = "SECS")]
    pub run_timeout: u64,
    /// Seconds a claim lasts without renewal (a dead daemon's entries come back after this)
    #[arg(long, default_value_t = 90, value_name = "SECS", value_parser = clap::value_parser!(u64).range(3..=3600))]
    pub claim_ttl: u64,
    /// Seconds a conversation must have been quiet before it is resumed
    #[arg(long, default_value_t = 5, value_name = "SECS")]
    pub quiet_period: u64,
    /// Seconds a follow-up waits for a conversation someone has open in Claude Code to be
    /// closed before it is skipped
    #[arg(long, default_value_t = 86_400, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub open_wait: u64,
    /// A follow-up whose conversation is open in the TUI: `auto` delivers it there (one
    /// turn the person sees) where Claude Code offers a way in, `closed` waits for the close
    #[arg(long, value_enum, default_value_t = Deliver::Auto, env = "HOOKS_DELIVER")]
    pub deliver: Deliver,
    /// Seconds a usage limit's continuation, due while its conversation is open in the TUI,
    /// leaves Claude Code to continue it itself (it does 30–90 s after the reset on a
    /// subscription) before delivering it there; skipped if anything carried it on
    #[arg(long, default_value_t = 600, value_name = "SECS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub own_continue_wait: u64,
    /// Log lines as JSON
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Seconds to wait for running follow-ups on SIGTERM/SIGINT before stopping them
    #[arg(long, default_value_t = 30, value_name = "S")]
    pub shutdown_grace: u64,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Started by claude-hook: exit at once if another on-demand daemon holds this data
    /// folder, and exit once idle (see --idle-exit)
    #[arg(long)]
    pub on_demand: bool,
    /// Exit after this many seconds with nothing pending and nothing running
    /// [default with --on-demand: 300]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_exit: Option<u64>,
    /// Also serve the JSON API, Claude Code's http hooks, /metrics and the web page here
    /// (e.g. 127.0.0.1:8787; a token is required, see `hooks-app open`)
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// With --http on a loopback address: no token. Anyone on this machine can read the API
    /// and the page; only your own processes can change anything or start a follow-up
    /// (told by the connection's owner; where the system cannot tell, nothing changes)
    #[arg(long, requires = "http")]
    pub http_no_auth: bool,
    /// With --http: allow an address other than loopback (put TLS in front of it)
    #[arg(long, requires = "http")]
    pub http_allow_insecure: bool,
}
