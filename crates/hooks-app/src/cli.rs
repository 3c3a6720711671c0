//! The command line, as clap types. Parsing only: no behaviour here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::options::{
    DEFAULT_IDLE_EXIT, DaemonMode, HookTrigger, LogFormat, RunnerKind, Scope, SummaryBy, Transport,
    Trigger,
};

#[derive(Debug, Parser)]
#[command(
    name = "hooks-app",
    version,
    about = "Runs follow-up prompts in finished Claude Code conversations.",
    long_about = "Runs follow-up prompts in finished Claude Code conversations.\n\n\
        When an agent ends its reply with DONE, every enabled hook is queued for that \
        conversation; when a hook's delay has passed, the conversation is resumed with the \
        hook's prompt (claude -p --resume), at most once per hook and session.\n\n\
        Start with: hooks-app init && hooks-app install (a daemon then starts on demand \
        when something is queued; hooks-app doctor checks the set-up)"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// `claude-hook`'s own options.
#[derive(Debug, Args, Clone, Copy, PartialEq, Eq)]
pub struct HookArgs {
    /// Set on the SessionEnd entry that `install --trigger session-end` writes
    #[arg(long, value_enum)]
    pub on: Option<HookTrigger>,
}

/// The command line of a `claude-hook` call, parsed by a command that knows only the
/// global options and `claude-hook`: Claude Code runs it at every stop, and building the
/// whole command line (every subcommand and its help) is a good part of its start-up.
/// The options are the same clap definitions, so a call parses to what the full command
/// line gives it; `None` for anything else (including help and errors), which the full
/// command line then parses.
pub fn parse_hook_call(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Cli> {
    use clap::FromArgMatches;
    let cmd = Global::augment_args(clap::Command::new("hooks-app"))
        .subcommand(HookArgs::augment_args(clap::Command::new("claude-hook")));
    let m = cmd.try_get_matches_from(args).ok()?;
    let (name, sub) = m.subcommand()?;
    (name == "claude-hook").then_some(())?;
    Some(Cli {
        global: Global::from_arg_matches(&m).ok()?,
        command: Command::ClaudeHook(HookArgs::from_arg_matches(sub).ok()?),
    })
}

#[derive(Debug, Args, PartialEq, Eq)]
pub struct Global {
    /// Where the store, session files and run log live [default: $XDG_DATA_HOME/hooks-app or ~/.local/share/hooks-app]
    #[arg(long, global = true, env = "HOOKS_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where prompt files are looked up after the session's own project [default: the current directory]
    #[arg(long, global = true, env = "HOOKS_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Claude Code's folder, holding settings.json and projects/ [default: $CLAUDE_CONFIG_DIR or ~/.claude]
    #[arg(long, global = true, env = "CLAUDE_CONFIG_DIR", value_name = "DIR")]
    pub claude_home: Option<PathBuf>,
    /// The claude binary [default: claude on PATH]
    #[arg(long, global = true, env = "HOOKS_CLAUDE_BIN", value_name = "PATH")]
    pub claude_bin: Option<PathBuf>,
    /// The last line that marks a conversation as done
    #[arg(
        long,
        global = true,
        env = "HOOKS_DONE_MARKER",
        value_name = "LINE",
        default_value = "DONE"
    )]
    pub done_marker: String,
    /// What resumes a conversation: the claude CLI here, or an agent backend over HTTP
    #[arg(
        long,
        global = true,
        env = "HOOKS_RUNNER",
        value_enum,
        default_value = "claude"
    )]
    pub runner: RunnerKind,
    /// With --runner webhook: where runs are POSTed (http:// or https://)
    #[arg(long, global = true, env = "HOOKS_RUNNER_URL", value_name = "URL")]
    pub runner_url: Option<String>,
    /// With --runner webhook: a file holding the bearer token (or set HOOKS_RUNNER_TOKEN)
    #[arg(
        long,
        global = true,
        env = "HOOKS_RUNNER_TOKEN_FILE",
        value_name = "PATH"
    )]
    pub runner_token_file: Option<PathBuf>,
    /// Where hooks, the queue, session state and the run log live: json:DIR, or a
    /// postgres:// URL (or @FILE holding one) [default: json: in the data folder]
    #[arg(long, global = true, env = "HOOKS_STORE", value_name = "URL")]
    pub store: Option<String>,
    /// This host's id in a shared store: entries queued here are fired here [default: the hostname]
    #[arg(long, global = true, env = "HOOKS_HOST_ID", value_name = "ID")]
    pub host_id: Option<String>,
    /// Fire entries queued on any host (a Claude home on shared storage)
    #[arg(long, global = true, env = "HOOKS_ANY_HOST")]
    pub any_host: bool,
    /// Poll the store for changes instead of listening (PostgreSQL behind a pooler in transaction mode)
    #[arg(long, global = true, env = "HOOKS_STORE_POLL")]
    pub store_poll: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the data folder, seed the store and write the default prompt if missing
    Init,
    /// List, show, create, change and delete hooks
    #[command(subcommand)]
    Hooks(HooksCmd),
    /// The queue of follow-ups waiting to fire
    Pending(JsonFlag),
    /// Past firings of a hook
    History {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Runs of follow-ups, with their cost and tokens, newest last
    Runs {
        #[arg(long, value_name = "ID")]
        hook: Option<String>,
        #[arg(long, value_name = "S")]
        session: Option<String>,
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Totals instead of runs: count, completed rate, cost against the estimate, tokens
        #[arg(long)]
        summary: bool,
        /// With --summary: one row per day (in the budget's time zone), hook or model
        #[arg(long, value_enum, requires = "summary")]
        by: Option<SummaryBy>,
        /// Only runs started on or after this day (YYYY-MM-DD, in the budget's time zone)
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// The daily budget for all follow-ups: set, show or clear it
    #[command(subcommand)]
    Budget(BudgetCmd),
    /// Stop every follow-up from starting, in every daemon and host sharing the store
    /// (entries still queue and wait), until `unpause` or for a while
    Pause {
        /// How long: 90s, 30m, 2h, 1d, 1h30m (default: until `hooks-app unpause`)
        #[arg(long = "for", value_name = "DURATION")]
        for_: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Let follow-ups start again; what waited on the pause runs now
    Unpause(JsonFlag),
    /// Be told when a follow-up fails (or is skipped, stopped by the budget, or waits on a
    /// limit): a POST to a URL (ntfy, Slack) and/or the desktop
    #[command(subcommand)]
    Alerts(AlertsCmd),
    /// What the app knows about a conversation ("why was it skipped?")
    Session {
        session: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Queue the hooks for an event in a conversation
    Notify {
        #[arg(long, value_name = "S")]
        session: String,
        #[arg(long, default_value = "conversation-done")]
        event: String,
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        #[arg(long, value_name = "PATH")]
        transcript: Option<String>,
        /// `cron` marks a cron-spawned session
        #[arg(long)]
        origin: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Read one Claude Code hook event on stdin (run by Claude Code's own hooks)
    ClaudeHook(HookArgs),
    /// Add the claude-hook entries to Claude Code's settings.json
    Install(InstallArgs),
    /// Remove the claude-hook entries from Claude Code's settings.json
    Uninstall(UninstallArgs),
    /// Bring the store's schema up to date, or copy everything between stores
    #[command(subcommand)]
    Store(StoreCmd),
    /// Remove session files older than DAYS with nothing pending (the only way a stamp goes)
    Prune {
        #[arg(long, value_name = "DAYS")]
        older_than: u64,
    },
    /// Fire what is due now, wait for those runs, and exit
    Tick(RunArgs),
    /// The daemon: fire follow-ups as they come due, until SIGTERM or SIGINT
    Serve(ServeArgs),
    /// A summary: hooks, the queue, recent runs, whether a daemon is running
    Status(JsonFlag),
    /// Print (and where possible open) the web page's address with a one-time login
    Open {
        /// Only print it
        #[arg(long)]
        no_browser: bool,
    },
    /// Check the set-up and say how to fix each problem
    Doctor(JsonFlag),
    /// The price table estimates use: each model's prices, where each comes from (built in,
    /// or your prices.json), the aliases, and when the built-in table was taken
    Prices(JsonFlag),
    /// Approve the prompt files a project brings (.claude/agents/hooks/*.md), so its
    /// conversations' follow-ups may use them; list or revoke approvals
    Trust(TrustArgs),
    /// Print a completion script for a shell, e.g. `hooks-app completions bash > /etc/bash_completion.d/hooks-app`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff); `cargo xtask man` writes it to target/man/
    #[command(hide = true)]
    Man,
}

#[derive(Debug, Subcommand)]
pub enum StoreCmd {
    /// Apply the schema migrations the store lacks (safe to run from several hosts at once)
    Migrate,
    /// Copy hooks, history, the queue, stamps, session state, the budget and the run log
    /// from one store to another; running it again changes nothing
    Copy {
        /// The store to read: json:DIR or a postgres:// URL (or @FILE)
        #[arg(long, value_name = "URL")]
        from: String,
        /// The store to write, which must hold nothing else unless --merge
        #[arg(long, value_name = "URL")]
        to: String,
        /// Add to a store that holds other data: what it has is kept, what it lacks is added
        #[arg(long)]
        merge: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum BudgetCmd {
    /// Set the most all follow-ups together may cost in one day
    Set {
        /// US dollars a day
        #[arg(long, value_name = "USD", allow_negative_numbers = true)]
        daily_usd: String,
        /// The time zone whose days count (e.g. Europe/Berlin); this machine's by default
        #[arg(long, value_name = "ZONE")]
        time_zone: Option<String>,
        /// What a follow-up the day's budget cannot pay for does: wait for the next day, or
        /// be skipped
        #[arg(long, value_name = "WHAT", default_value = "wait")]
        when_reached: String,
    },
    /// The budget and today's spend
    Show(JsonFlag),
    /// Remove the budget
    Clear,
}

#[derive(Debug, Subcommand)]
pub enum AlertsCmd {
    /// Where and when to alert
    Set {
        /// The URL to POST to (ntfy and Slack incoming webhooks take its `text`); `-` reads
        /// it from stdin, which keeps a secret URL off the command line
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// On what, comma-separated: failure, skip, budget, limit [default: failure]
        #[arg(long, value_name = "LIST")]
        on: Option<String>,
        /// Also the desktop's notifier (notify-send, osascript)
        #[arg(long)]
        desktop: bool,
    },
    /// The alerts set (the URL shown by its host only)
    Show(JsonFlag),
    /// No more alerts
    Clear,
    /// Send one alert now, and say whether it was delivered
    Test,
}

#[derive(Debug, Args, PartialEq, Eq)]
pub struct TrustArgs {
    /// The project folder [default: the current directory]
    pub dir: Option<PathBuf>,
    /// List the approved files, and whether each is unchanged
    #[arg(long, conflicts_with_all = ["revoke", "dir"])]
    pub list: bool,
    /// Withdraw the approvals of the project's prompt files
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Args, Clone, Copy)]
pub struct JsonFlag {
    /// One JSON value on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum HooksCmd {
    /// The hooks, as a table
    List(JsonFlag),
    /// One hook
    Show {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Create a hook; prints its id
    ///
    /// Its prompt is a Markdown file in the workspace's .claude/agents/hooks/ folder:
    /// write it first, then `hooks-app hooks create "Tidy up" --prompt-file
    /// .claude/agents/hooks/tidy.md`.
    Create {
        name: String,
        /// The prompt: .claude/agents/hooks/NAME.md, relative to the workspace (an
        /// absolute path ending so is taken as that file in the workspace)
        #[arg(long, value_name = "P")]
        prompt_file: Option<String>,
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        delay: Option<String>,
        /// conversation-done (a Stop ending in the done marker; the default) or
        /// conversation-failed (a turn stopped by a usage limit, an overload, …)
        #[arg(long, value_name = "E")]
        event: Option<String>,
        /// For conversation-failed: the failures followed up, comma-separated
        /// (default rate_limit,overloaded,server_error)
        #[arg(long, value_name = "LIST")]
        errors: Option<String>,
        #[arg(long, value_name = "K", allow_negative_numbers = true)]
        max_context_k: Option<String>,
        /// The most a follow-up may cost, in US dollars: estimated before it runs (skipped
        /// over it) and passed to Claude as --max-budget-usd; 0 for no cap
        #[arg(long, value_name = "USD", allow_negative_numbers = true)]
        max_cost_usd: Option<String>,
        /// An entry found more than S seconds past its due time (the machine slept, no
        /// daemon ran) is skipped as late, not fired; 0 for no limit
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        max_lateness: Option<String>,
        #[arg(long)]
        disabled: bool,
        /// Also follow up cron-spawned sessions
        #[arg(long)]
        include_cron: bool,
        /// Also follow up subagent conversations
        #[arg(long)]
        include_subagents: bool,
    },
    /// Change a hook
    Update {
        id: String,
        #[arg(long)]
        name: Option<String>,
        /// The prompt: .claude/agents/hooks/NAME.md, relative to the workspace
        #[arg(long, value_name = "P")]
        prompt_file: Option<String>,
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        delay: Option<String>,
        /// conversation-done (a Stop ending in the done marker; the default) or
        /// conversation-failed (a turn stopped by a usage limit, an overload, …)
        #[arg(long, value_name = "E")]
        event: Option<String>,
        /// For conversation-failed: the failures followed up, comma-separated
        /// (default rate_limit,overloaded,server_error)
        #[arg(long, value_name = "LIST")]
        errors: Option<String>,
        #[arg(long, value_name = "K", allow_negative_numbers = true)]
        max_context_k: Option<String>,
        /// The most a follow-up may cost, in US dollars; 0 for no cap
        #[arg(long, value_name = "USD", allow_negative_numbers = true)]
        max_cost_usd: Option<String>,
        /// An entry found more than S seconds past its due time (the machine slept, no
        /// daemon ran) is skipped as late, not fired; 0 for no limit
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        max_lateness: Option<String>,
        #[arg(long, conflicts_with = "disabled")]
        enabled: bool,
        #[arg(long)]
        disabled: bool,
        #[arg(long, conflicts_with = "skip_cron")]
        include_cron: bool,
        #[arg(long)]
        skip_cron: bool,
        #[arg(long, conflicts_with = "skip_subagents")]
        include_subagents: bool,
        #[arg(long)]
        skip_subagents: bool,
    },
    /// Enable a hook
    Enable { id: String },
    /// Disable a hook (queued entries are dropped when due)
    Disable { id: String },
    /// Delete a hook and its queued entries
    Delete { id: String },
    /// Follow a conversation up with this hook now, through every usual check (open
    /// conversation, one run per session, caps, budget, pause), and say what became of it
    Run {
        id: String,
        /// The conversation: its id, or 8+ characters it alone starts with
        #[arg(long)]
        session: String,
        /// Run it even if this hook already followed this conversation up
        #[arg(long)]
        force: bool,
        /// Queue it and return at once, without waiting for what becomes of it
        #[arg(long)]
        no_wait: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    #[arg(long, value_enum, default_value_t = Trigger::Stop)]
    pub trigger: Trigger,
    /// How the daemon runs
    #[arg(long, value_enum, default_value_t = DaemonMode::OnDemand)]
    pub daemon: DaemonMode,
    /// Seconds an on-demand daemon stays with nothing pending before it exits
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_IDLE_EXIT, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_exit: u64,
    /// Show what would change and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The daemon (on demand or service) also serves the HTTP API and the page at ADDR
    /// (loopback), for `hooks-app open`
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// How Claude Code hands events over: by running claude-hook (works without a daemon),
    /// or by POSTing to a daemon running with --http (no process per event)
    #[arg(long, value_enum, default_value_t = Transport::Command)]
    pub transport: Transport,
    /// With --transport http: the daemon's address [default: the running daemon's]
    #[arg(long, value_name = "URL", requires = "transport")]
    pub http_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    /// `service` also removes the systemd / launchd unit
    #[arg(long, value_enum)]
    pub daemon: Option<DaemonMode>,
    #[arg(long)]
    pub dry_run: bool,
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
    /// With --http on a loopback address: no token (anyone on this machine can use it)
    #[arg(long, requires = "http")]
    pub http_no_auth: bool,
    /// With --http: allow an address other than loopback (put TLS in front of it)
    #[arg(long, requires = "http")]
    pub http_allow_insecure: bool,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// The quick parse of a `claude-hook` call gives what the full command line gives, and
    /// gives nothing for any other call, or for help and errors (the full one answers those).
    #[test]
    fn a_hook_call_parses_as_the_full_command_line_parses_it() {
        let calls: &[&[&str]] = &[
            &["claude-hook"],
            &["claude-hook", "--on", "session-end"],
            &["--data-dir", "/d", "claude-hook"],
            &[
                "--data-dir=/d",
                "--done-marker",
                "ALL DONE",
                "claude-hook",
                "--on=session-end",
            ],
            &["claude-hook", "--data-dir", "/d", "--claude-home", "/c"],
            &[
                "--runner",
                "webhook",
                "--runner-url",
                "http://127.0.0.1:9/x",
                "--runner-token-file",
                "/t",
                "claude-hook",
            ],
            &[
                "--workspace",
                "/w",
                "--claude-bin",
                "/bin/claude",
                "claude-hook",
            ],
        ];
        for call in calls {
            let args = std::iter::once("hooks-app").chain(call.iter().copied());
            let full = Cli::try_parse_from(args.clone()).expect("the full parse");
            let quick = parse_hook_call(args.map(Into::into)).expect("the quick parse");
            assert_eq!(quick.global, full.global, "{call:?}");
            match (quick.command, full.command) {
                (Command::ClaudeHook(q), Command::ClaudeHook(f)) => assert_eq!(q, f, "{call:?}"),
                other => panic!("{call:?}: {other:?}"),
            }
        }
        let others: &[&[&str]] = &[
            &["status"],
            &["hooks", "list"],
            &["claude-hook", "--help"],
            &["--help"],
            &["--version"],
            &["claude-hook", "--on", "never"],
            &["claude-hook", "extra"],
            &["--runner", "carrier-pigeon", "claude-hook"],
            &["serve", "claude-hook"],
        ];
        for call in others {
            let args = std::iter::once("hooks-app").chain(call.iter().copied());
            assert!(
                parse_hook_call(args.map(Into::into)).is_none(),
                "{call:?} is for the full command line"
            );
        }
    }
}
