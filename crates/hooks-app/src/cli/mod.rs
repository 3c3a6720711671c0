//! The command line, as clap types. Parsing only: no behaviour here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod admin;
mod daemon;
mod flags;
mod hooks;

pub use admin::{AlertsCmd, BudgetCmd, StoreCmd, TrustArgs};
pub use daemon::{InstallArgs, RunArgs, ServeArgs, UninstallArgs};
pub use flags::JsonFlag;
pub use hooks::{HookValues, HooksCmd};

use crate::options::{HookTrigger, SummaryBy};

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
/// The options are the same clap definitions, but **read from the command line alone**:
/// Claude Code exports a project's settings `env` to every hook command, so a variable
/// such as `HOOKS_WORKSPACE` there is the repository's, not the user's. `None` for
/// anything else (including help and errors), which the full command line then parses.
pub fn parse_hook_call(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Cli> {
    use clap::FromArgMatches;
    let cmd = Global::augment_args(clap::Command::new("hooks-app"))
        .mut_args(|a| a.env(None::<&'static str>))
        .subcommand(HookArgs::augment_args(clap::Command::new("claude-hook")));
    let m = cmd.try_get_matches_from(args).ok()?;
    let (name, sub) = m.subcommand()?;
    (name == "claude-hook").then_some(())?;
    Some(Cli {
        global: Global {
            from_hook: true,
            ..Global::from_arg_matches(&m).ok()?
        },
        command: Command::ClaudeHook(HookArgs::from_arg_matches(sub).ok()?),
    })
}

/// The whole command line, as [`Cli`] reads it, except that a subcommand's help lists its
/// own arguments only. clap repeats the global options in every subcommand's help (17 of
/// them, before the subcommand's own); here they are listed once, after the commands in
/// `hooks-app --help`, drawn from their definitions, and each subcommand's help ends by
/// saying where they are. They are still taken before or after any subcommand.
pub fn parse_full(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let cmd = Cli::command();
    let listed = global_options(&cmd);
    let mut cmd = cmd
        .mut_args(|a| if a.is_global_set() { a.hide(true) } else { a })
        .after_help(format!(
            "Global options (before or after any command):\n{listed}"
        ));
    cmd = each_subcommand(cmd, point_to_globals);
    let m = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&m).map_err(|e| e.format(&mut cmd))
}

/// `cmd`'s global options, one line each: the option, its value's name, its help and its
/// variable.
fn global_options(cmd: &clap::Command) -> String {
    let rows: Vec<(String, String)> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .filter_map(|a| {
            let mut left = format!("--{}", a.get_long()?);
            let takes = a.get_action().takes_values();
            if let Some(v) = a
                .get_value_names()
                .and_then(|v| v.first())
                .filter(|_| takes)
            {
                left.push_str(&format!(" <{v}>"));
            }
            let mut right = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            if let Some(d) = a.get_default_values().first().filter(|_| takes) {
                right.push_str(&format!(" [default: {}]", d.to_string_lossy()));
            }
            if let Some(env) = a.get_env() {
                right.push_str(&format!(" [env: {}]", env.to_string_lossy()));
            }
            Some((left, right))
        })
        .collect();
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(l, r)| format!("  {l:width$}  {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `cmd` with `f` applied to each of its subcommands.
fn each_subcommand(mut cmd: clap::Command, f: fn(clap::Command) -> clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, f);
    }
    cmd
}

/// `sc`, and its subcommands, with a last line that says where the global options are.
fn point_to_globals(sc: clap::Command) -> clap::Command {
    let sc = each_subcommand(sc, point_to_globals);
    let note = "Global options (--data-dir, --store, --claude-home, …): see `hooks-app --help`.";
    match sc.get_after_help().map(|h| h.to_string()) {
        Some(h) => sc.after_help(format!("{h}\n\n{note}")),
        None => sc.after_help(note),
    }
}

#[derive(Debug, Args, PartialEq, Eq)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Where the store, session files and run log live [default: $XDG_DATA_HOME/hooks-app or ~/.local/share/hooks-app]
    #[arg(long, global = true, env = "HOOKS_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where prompt files are looked up after the session's own project [default: the folder `init` or `install` last ran in, else the current directory]
    #[arg(long, global = true, env = "HOOKS_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Claude Code's folder, holding settings.json and projects/ [default: $CLAUDE_CONFIG_DIR or ~/.claude]
    #[arg(long, global = true, env = "CLAUDE_CONFIG_DIR", value_name = "DIR")]
    pub claude_home: Option<PathBuf>,
    /// The claude binary [default: claude on PATH]
    #[arg(long, global = true, env = "HOOKS_CLAUDE_BIN", value_name = "PATH")]
    pub claude_bin: Option<PathBuf>,
    /// The codex program, for --runner codex [default: codex on PATH]
    #[arg(long, global = true, env = "HOOKS_CODEX_BIN", value_name = "PATH")]
    pub codex_bin: Option<PathBuf>,
    /// The last line that marks a conversation as done
    #[arg(
        long,
        global = true,
        env = "HOOKS_DONE_MARKER",
        value_name = "LINE",
        default_value = "DONE"
    )]
    pub done_marker: String,
    /// What resumes a conversation: claude (the claude CLI here), webhook (an agent
    /// backend over HTTP), or a runner this build adds
    #[arg(
        long,
        global = true,
        env = "HOOKS_RUNNER",
        value_name = "NAME",
        default_value = "claude"
    )]
    pub runner: String,
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
    /// Parsed as a `claude-hook` call: from the command line alone, no variable read.
    #[arg(skip)]
    pub from_hook: bool,
}

/// What `pending` does besides listing.
#[derive(Debug, Subcommand)]
pub enum PendingCmd {
    /// Take one queued follow-up out: it ends as `skipped: dropped by hand`, logged
    Drop {
        /// The hook's id
        hook: String,
        /// The session (a whole id or a unique prefix of 8 or more)
        session: String,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the data folder, seed the store and write the default prompt if missing
    Init,
    /// List, show, create, change and delete hooks
    #[command(subcommand)]
    Hooks(HooksCmd),
    /// The queue of follow-ups waiting to fire (`pending drop` takes one out)
    Pending {
        #[command(subcommand)]
        action: Option<PendingCmd>,
        #[command(flatten)]
        json: JsonFlag,
    },
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
        /// The newest N runs (1 to 100000)
        #[arg(long, value_name = "N", value_parser = run_limit)]
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
    /// Follow up a conversation once, after a while: `after 40m "check the deploy"` (into
    /// the conversation this command's agent runs in, else this folder's most recent;
    /// `pending drop` cancels it)
    After {
        /// How long from now: 90s, 40m, 2h, 1d, 1h30m (up to a year)
        #[arg(value_name = "WHEN")]
        after: String,
        /// What the follow-up says
        prompt: String,
        /// The conversation (a whole id or a unique prefix of 8 or more)
        #[arg(long, value_name = "S")]
        session: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Follow up a conversation again and again: `every 2h "look at CI" --times 5`, each
    /// occurrence once (one found over an interval late is skipped)
    Every {
        /// The interval: 5m, 2h, 1d (at least a minute)
        #[arg(value_name = "INTERVAL")]
        every: String,
        /// What each follow-up says
        prompt: String,
        /// The conversation (a whole id or a unique prefix of 8 or more)
        #[arg(long, value_name = "S")]
        session: Option<String>,
        /// How many times (1 to 100)
        #[arg(
            long,
            value_name = "N",
            conflicts_with = "until",
            required_unless_present = "until"
        )]
        times: Option<u32>,
        /// Until when: a length of time from now (7d) or a time (2026-12-24T18:00:00Z)
        #[arg(long, value_name = "WHEN")]
        until: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Send a prompt into a conversation now: into its open TUI where Claude Code offers a
    /// way in, else by resuming it once it is not open; `--key K` sends it at most once
    Send {
        /// The conversation (a whole id or a unique prefix of 8 or more)
        session: String,
        /// What to say
        prompt: String,
        /// An idempotency key (1 to 64 of A-Z a-z 0-9 -): the same key again sends nothing more
        #[arg(long, value_name = "K")]
        key: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// An MCP server on stdio with tools an agent calls to schedule, list and cancel
    /// follow-ups in its own conversation (the one whose Claude Code process starts it);
    /// `install --mcp` adds it to Claude Code's configuration
    Mcp {
        /// The most follow-ups one conversation may have queued through it at once
        #[arg(long, value_name = "N", default_value_t = 10)]
        max_queued: usize,
        /// How far ahead one may come: 1h, 2d (up to a year)
        #[arg(long, value_name = "SPAN", default_value = "7d")]
        max_ahead: String,
        /// The most each may cost, in US dollars (default: no cap but the daily budget)
        #[arg(long, value_name = "USD")]
        max_cost_usd: Option<f64>,
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
    /// Restart the daemon so it runs with the set-up as it is now: the on-demand one stops
    /// (finishing or handing back what it runs) and a new one starts
    Restart,
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

/// `--limit`, by the rule the API's `limit` follows.
fn run_limit(text: &str) -> Result<usize, String> {
    hooks_core::RunFilter::parse_limit(text).map_err(|e| e.rule)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// A subcommand's help lists its own options and says where the global ones are;
    /// `hooks-app --help` lists those once; and they are still taken after a subcommand.
    #[test]
    fn global_options_are_listed_once_and_taken_anywhere() {
        let help = |args: &[&str]| {
            let e = parse_full(
                std::iter::once("hooks-app")
                    .chain(args.iter().copied())
                    .map(Into::into),
            )
            .expect_err("help is shown by an error of its kind");
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
            e.render().to_string()
        };
        for args in [&["pending", "--help"][..], &["hooks", "update", "--help"]] {
            let text = help(args);
            assert!(!text.contains("--data-dir <DIR>"), "{args:?}: {text}");
            assert!(text.contains("see `hooks-app --help`"), "{args:?}: {text}");
        }
        assert!(help(&["pending", "--help"]).contains("--json"));
        let top = help(&["--help"]);
        let listed = top
            .split("Global options (before or after any command):")
            .nth(1)
            .unwrap_or_default();
        for opt in [
            "--data-dir <DIR>",
            "--store <URL>",
            "--any-host ",
            "[env: HOOKS_DATA_DIR]",
        ] {
            assert!(listed.contains(opt), "{opt}: {top}");
        }
        let cli = parse_full(
            ["hooks-app", "pending", "--data-dir", "/d", "--json"]
                .into_iter()
                .map(Into::into),
        )
        .unwrap();
        assert_eq!(
            cli.global.data_dir.as_deref(),
            Some(std::path::Path::new("/d"))
        );
        assert!(matches!(cli.command, Command::Pending { .. }));
    }

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
            // A runner name is checked against this build's adapters when the context is
            // made, for both parses alike.
            &["--runner", "carrier-pigeon", "claude-hook"],
        ];
        for call in calls {
            let args = std::iter::once("hooks-app").chain(call.iter().copied());
            let full = Cli::try_parse_from(args.clone()).expect("the full parse");
            let quick = parse_hook_call(args.map(Into::into)).expect("the quick parse");
            assert!(
                quick.global.from_hook,
                "{call:?}: the quick parse says it read no variable"
            );
            assert_eq!(
                Global {
                    from_hook: false,
                    ..quick.global
                },
                full.global,
                "{call:?}"
            );
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
