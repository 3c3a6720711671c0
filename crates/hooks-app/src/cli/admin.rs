//! `store …`, `budget …`, `alerts …` and `trust`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::flags::JsonFlag;

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
    /// Where and when to alert; what is not given is kept as it was set
    Set {
        /// The URL to POST to (ntfy and Slack incoming webhooks take its `text`); `-` reads
        /// it from stdin, which keeps a secret URL off the command line
        #[arg(long, value_name = "URL", conflicts_with = "no_url")]
        url: Option<String>,
        /// No URL any more
        #[arg(long)]
        no_url: bool,
        /// On what, comma-separated: failure, skip, budget, limit [default: failure]
        #[arg(long, value_name = "LIST")]
        on: Option<String>,
        /// Also the desktop's notifier (notify-send, osascript)
        #[arg(long, conflicts_with = "no_desktop")]
        desktop: bool,
        /// Not the desktop any more
        #[arg(long)]
        no_desktop: bool,
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
