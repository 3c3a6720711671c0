//! `hooks …`: the hook commands.

use clap::{Args, Subcommand};

use super::flags::JsonFlag;

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
        #[command(flatten)]
        values: HookValues,
        #[arg(long)]
        disabled: bool,
        /// Also follow up cron-spawned sessions
        #[arg(long)]
        include_cron: bool,
        /// Also follow up subagent conversations
        #[arg(long)]
        include_subagents: bool,
        /// Make one more hook when one of this name exists (its id gets -2, -3, …)
        #[arg(long)]
        another: bool,
    },
    /// Change a hook
    Update {
        id: String,
        #[arg(long)]
        name: Option<String>,
        /// The prompt: .claude/agents/hooks/NAME.md, relative to the workspace
        #[arg(long, value_name = "P")]
        prompt_file: Option<String>,
        #[command(flatten)]
        values: HookValues,
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
    /// Delete hooks and their queued entries (every id is checked first)
    Delete {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
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

/// What `hooks create` and `hooks update` both set, as typed.
#[derive(Debug, Args)]
pub struct HookValues {
    /// Seconds after the event (default 10; 60 for conversation-failed)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub delay: Option<String>,
    /// conversation-done (a Stop ending in the done marker; the default) or
    /// conversation-failed (a turn stopped by a usage limit, an overload, …)
    #[arg(long, value_name = "E")]
    pub event: Option<String>,
    /// For conversation-failed: the failures followed up, comma-separated
    /// (default rate_limit,overloaded,server_error)
    #[arg(long, value_name = "LIST")]
    pub errors: Option<String>,
    /// Skip a conversation whose context is over K thousand tokens; 0 for no cap
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub max_context_k: Option<String>,
    /// The most a follow-up may cost, in US dollars: estimated before it runs (skipped
    /// over it) and passed to Claude as --max-budget-usd; 0 for no cap
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost_usd: Option<String>,
    /// An entry found more than S seconds past its due time (the machine slept, no
    /// daemon ran) is skipped as late, not fired; 0 for no limit
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub max_lateness: Option<String>,
    /// auto (the default): a follow-up due while its conversation is open and idle in a
    /// TUI that offers a way in arrives there, as a turn the person sees; closed: always
    /// resumed after the person closes it
    #[arg(long, value_name = "WHERE")]
    pub deliver: Option<String>,
    /// Whose conversations it follows up: all (the default), claude or codex
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// once (the default): a conversation is followed up once; each-task: every task of
    /// it, each DONE of a turn the person asked for (never a follow-up's own turn)
    #[arg(long, value_name = "HOW")]
    pub repeat: Option<String>,
}
