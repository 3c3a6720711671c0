//! The choices the command line offers that the rest of the app acts on: daemon modes,
//! scopes, triggers, formats. A leaf: the CLI parses into these, and nothing here knows
//! the CLI.

use clap::ValueEnum;

/// Seconds an on-demand daemon stays with nothing pending before it exits.
pub const DEFAULT_IDLE_EXIT: u64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryBy {
    Day,
    Hook,
    Model,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json
    User,
    /// `<workspace>/.claude/settings.json`, the file a team commits: a portable command
    Project,
    /// `<workspace>/.claude/settings.local.json`, Claude Code's personal per-project file
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Trigger {
    /// Claude's Stop event: queue when the reply ends with the DONE line
    Stop,
    /// Claude's SessionEnd event: queue when the session ends
    SessionEnd,
    /// Both
    Both,
}

/// How the daemon runs once installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DaemonMode {
    /// claude-hook starts `serve` in the background when it queues something and none
    /// runs; it exits after a while with nothing pending
    OnDemand,
    /// A systemd user unit (Linux) or a launchd agent (macOS) runs `serve`
    Service,
    /// You run `serve`, or `tick` from cron
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookTrigger {
    SessionEnd,
}

/// Which agent's hook configuration `install` and `uninstall` edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code's `settings.json` (of the scope).
    Claude,
    /// OpenAI Codex's `$CODEX_HOME/hooks.json`.
    Codex,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Command,
    Http,
}

impl From<Scope> for hooks_claude_code::files::Scope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::User => Self::User,
            Scope::Project => Self::Project,
            Scope::Local => Self::Local,
        }
    }
}

/// Where a follow-up whose conversation is open in the TUI goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Deliver {
    /// Into the open conversation, as a turn the person sees, where the running Claude
    /// Code offers a way in (2.1.332's inbox); else after the close, resumed.
    Auto,
    /// Always after the close, resumed with `claude -p --resume`.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
