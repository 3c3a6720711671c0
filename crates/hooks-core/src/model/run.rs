//! The run log's records: one run's outcome and usage, its record, the filter, and the
//! pause.

use crate::id::{HookId, SessionId, ValidationError};
use crate::live::ProcessRef;
use crate::stamp::{self, Timestamp};

use super::hook::*;

/// Token counts of one run, as the CLI reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens read anew.
    pub input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
}

/// What one run of a follow-up produced. Fields the run did not produce are `None`.
///
/// It grows as agents report more, so it is `#[non_exhaustive]`: a runner outside this
/// crate starts from [`RunOutcome::new`] (or `default()`) and sets the fields it has.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RunOutcome {
    /// How it ended.
    pub status: Option<Status>,
    /// The agent's exit code, when it had a process.
    pub exit_code: Option<i32>,
    /// Whether the reply's last non-empty line was `COMPLETED`.
    pub completed: Option<bool>,
    /// How many turns it took.
    pub num_turns: Option<u64>,
    /// What the run cost, in US dollars, as the agent reported it or as priced from its usage.
    pub cost_usd: Option<f64>,
    /// Its tokens.
    pub usage: Option<Usage>,
    /// How long it took.
    pub duration_ms: Option<u64>,
    /// The session id the CLI reported.
    pub session_id: Option<String>,
    /// The reply text, when there was one. Kept in the run log bounded by
    /// [`RunOutcome::with_kept_reply`]: a person reads what the follow-up did there.
    pub result_text: Option<String>,
    /// The HTTP status of the API error the run ended on (`429`, `529`), when it did.
    pub api_error_status: Option<u16>,
}

/// How much of a reply's head, and as much of its tail, the run log keeps.
pub const REPLY_KEEP_BYTES: usize = 4096;

/// `text` whole when it is at most twice [`REPLY_KEEP_BYTES`], else its first and last
/// [`REPLY_KEEP_BYTES`] (to a character boundary) around a line saying how much was left
/// out.
pub fn keep_reply(text: &str) -> String {
    if text.len() <= 2 * REPLY_KEEP_BYTES {
        return text.to_owned();
    }
    let mut head = REPLY_KEEP_BYTES;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - REPLY_KEEP_BYTES;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The most one follow-up may be reported to have cost: a figure above it is a runner's
/// mistake (or a backend's lie), not a run.
pub const MAX_RUN_COST_USD: f64 = 10_000.0;

impl RunOutcome {
    /// An outcome with `status` and nothing else reported.
    pub fn new(status: Status) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }

    /// Its status (an error when none was set).
    pub fn status(&self) -> Status {
        self.status
            .clone()
            .unwrap_or_else(|| Status::error("the run reported no status"))
    }

    /// The outcome with its reply bounded for the run log ([`keep_reply`]).
    pub fn with_kept_reply(mut self) -> Self {
        self.result_text = self.result_text.as_deref().map(keep_reply);
        self
    }

    /// The outcome with an impossible cost refused: a negative, non-finite or absurd one
    /// (over [`MAX_RUN_COST_USD`]) would bend the daily budget and every total, so it is
    /// dropped and the run recorded as an error that says what the runner reported.
    pub fn with_sane_cost(mut self) -> Self {
        if let Some(c) = self.cost_usd
            && !(c.is_finite() && (0.0..=MAX_RUN_COST_USD).contains(&c))
        {
            self.cost_usd = None;
            self.status = Some(Status::error(format!(
                "the runner reported an impossible cost ({c} USD; a run costs 0 to {MAX_RUN_COST_USD} USD)"
            )));
        }
        self
    }
}

/// A run as the run log tells it. A run is logged when it starts (no `finished_at`, no
/// status) and again when it ends; lines with one `run_id` fold into one record
/// ([`fold_runs`]). A record without a `run_id` is a line of an older log, whole in itself.
/// `#[non_exhaustive]`: a store outside this crate builds one with [`RunRecord::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunRecord {
    /// Names the run: its lines in the run log share it.
    pub run_id: Option<String>,
    /// The hook it followed up for.
    pub hook_id: HookId,
    /// The conversation.
    pub session_id: SessionId,
    /// The claim owner of the process that ran it.
    pub owner: Option<String>,
    /// The follow-up's process (the leader of its process group), once started.
    pub process: Option<ProcessRef>,
    /// When it started.
    pub started_at: Timestamp,
    /// `None` while the run goes on (or if its runner died and nobody has noticed yet).
    pub finished_at: Option<Timestamp>,
    /// What it came to.
    pub outcome: RunOutcome,
    /// What the run was estimated to cost before it started, where a price was known.
    pub estimated_cost_usd: Option<f64>,
    /// The model it was priced as (or named, where it had no price).
    pub model: Option<String>,
    /// Delivered into the conversation a person had open in the TUI, as one turn of it,
    /// rather than resumed by a process of its own.
    pub delivered: bool,
}

impl RunRecord {
    /// A run of hook `hook_id` on `session_id` that started at `started_at`, nothing else
    /// known yet (no run id, process, end, outcome, estimate or model; not delivered).
    pub fn new(hook_id: HookId, session_id: SessionId, started_at: Timestamp) -> Self {
        Self {
            run_id: None,
            hook_id,
            session_id,
            owner: None,
            process: None,
            started_at,
            finished_at: None,
            outcome: RunOutcome::default(),
            estimated_cost_usd: None,
            model: None,
            delivered: false,
        }
    }

    /// Whether anything ran: a process was started or a runner reported a result. The
    /// run log also holds one line for every entry that ended before that (a skip, an
    /// error before the start, a hook deleted while its entry waited).
    pub fn started(&self) -> bool {
        let o = &self.outcome;
        self.process.is_some()
            || self.finished_at.is_none()
            || o.exit_code.is_some()
            || o.num_turns.is_some()
            || o.cost_usd.is_some()
            || o.usage.is_some()
            || o.duration_ms.is_some()
            || o.session_id.is_some()
    }

    /// How long it took, start to finish, as the clock on the wall saw it.
    pub fn took(&self) -> Option<time::Duration> {
        self.finished_at.map(|f| f - self.started_at)
    }

    /// `running` for a run not finished yet, else its status.
    pub fn status_text(&self) -> String {
        match (&self.finished_at, &self.outcome.status) {
            (None, None) => "running".to_owned(),
            _ => self.outcome.status().to_string(),
        }
    }
}

/// Folds run-log lines into runs, in the order each run first appears: a later line of a
/// run fills in or replaces what an earlier one said.
pub fn fold_runs(lines: impl IntoIterator<Item = RunRecord>) -> Vec<RunRecord> {
    let mut out: Vec<RunRecord> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for r in lines {
        let Some(id) = r.run_id.clone() else {
            out.push(r);
            continue;
        };
        match at.get(&id) {
            Some(&i) => {
                let old = &mut out[i];
                old.owner = r.owner.or(old.owner.take());
                old.process = r.process.or(old.process);
                old.finished_at = r.finished_at.or(old.finished_at);
                old.estimated_cost_usd = r.estimated_cost_usd.or(old.estimated_cost_usd);
                old.model = r.model.or(old.model.take());
                old.delivered |= r.delivered;
                if r.finished_at.is_some() || r.outcome != RunOutcome::default() {
                    old.outcome = r.outcome;
                }
            }
            None => {
                at.insert(id, out.len());
                out.push(r);
            }
        }
    }
    out
}

/// Which runs to read. A store reads only what the filter asks for: the run log grows
/// without end, and a listing costs what it shows (the JSON store reads its log from the
/// end and stops there).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunFilter {
    /// Only this hook's runs.
    pub hook_id: Option<HookId>,
    /// Only this conversation's runs.
    pub session_id: Option<SessionId>,
    /// The newest N matching runs.
    pub limit: Option<usize>,
    /// Only runs started at or after this time.
    pub since: Option<Timestamp>,
}

/// The most runs one listing may ask for.
pub const MAX_RUN_LIMIT: usize = 100_000;

impl RunFilter {
    /// A listing's `limit`, as the API's query and the CLI's `--limit` give it: a whole
    /// number from 1 to [`MAX_RUN_LIMIT`] (one rule for both).
    pub fn parse_limit(text: &str) -> Result<usize, ValidationError> {
        text.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_RUN_LIMIT).contains(n))
            .ok_or_else(|| {
                ValidationError::new(
                    "limit",
                    format!("must be a whole number from 1 to {MAX_RUN_LIMIT} (got {text:?})"),
                )
            })
    }

    /// Whether `r` passes.
    pub fn matches(&self, r: &RunRecord) -> bool {
        self.hook_id.as_ref().is_none_or(|h| *h == r.hook_id)
            && self.session_id.as_ref().is_none_or(|s| *s == r.session_id)
            && self.since.is_none_or(|t| r.started_at >= t)
    }
}

/// The reason an entry waits while follow-ups are paused starts with this.
pub const PAUSE_WAIT: &str = "paused";

/// Follow-ups paused for every daemon and host sharing the store (`hooks-app pause`):
/// while it holds, entries queue and wait, and nothing starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    /// When it began.
    pub since: Timestamp,
    /// When it ends by itself; `None` until `unpause`.
    pub until: Option<Timestamp>,
    /// Who paused (user and host), for whoever wonders why nothing runs.
    pub by: String,
}

impl Pause {
    /// Whether it holds at `now`.
    pub fn holds(&self, now: Timestamp) -> bool {
        self.until.is_none_or(|u| now < u)
    }

    /// Why an entry waits for it: `paused until …` or `paused until hooks-app unpause`.
    pub fn reason(&self) -> String {
        match self.until {
            Some(u) => format!("{PAUSE_WAIT} until {} (by {})", stamp::format(u), self.by),
            None => format!("{PAUSE_WAIT} until `hooks-app unpause` (by {})", self.by),
        }
    }
}
