//! Validated domain types. Each constructor checks one field's rule and names the field in
//! its error, so a bad value never gets past the edge that received it.

use std::collections::BTreeMap;
use std::fmt;

pub use crate::failure::{FailureKind, FailureKinds};
use crate::id::describe;
pub use crate::id::{HookId, SessionId, ValidationError};
use crate::live::{LeaseInfo, OpenSession, ProcessRef, Waiting};
use crate::stamp::{self, Timestamp};

/// The folder, relative to a workspace, that hook prompt files live in.
pub const PROMPT_DIR: &str = ".claude/agents/hooks";
/// The longest delay a hook may have: one day.
pub const MAX_DELAY_SECONDS: u32 = 86_400;
/// How many firings a hook's history keeps (the newest).
pub const HISTORY_CAP: usize = 200;
/// The marker an agent ends its reply with when the task is done.
pub const DONE_MARKER: &str = "DONE";
/// The marker a follow-up ends its reply with.
pub const COMPLETED_MARKER: &str = "COMPLETED";

/// The slug of a name: lower-case ASCII letters and digits, runs of anything else folded
/// into one `-`, no `-` at either end, at most 64 characters; `hook` when nothing is left.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
        if out.len() >= 64 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "hook".to_owned()
    } else {
        out
    }
}

/// The slug of `name`, made unique among `taken` with `-2`, `-3`, ….
pub fn unique_hook_id(name: &str, taken: impl Fn(&str) -> bool) -> HookId {
    let base = slugify(name);
    let mut id = base.clone();
    let mut n = 2u32;
    while taken(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    HookId(id)
}

/// What a hook reacts to: a conversation that finished its task (`Stop` with the done
/// marker), or one whose turn Claude Code stopped on an error (`StopFailure`); or nothing
/// at all: a follow-up someone asked for at a time (`hooks-app after`, `every`), which
/// no event queues ([`crate::schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// A turn ended with the done marker as its reply's last line.
    ConversationDone,
    /// A turn stopped by an error (a usage limit, an overload, …).
    ConversationFailed,
    /// No event: a one-off follow-up queued for a time ([`crate::schedule`]). Only
    /// [`crate::service::Service::schedule`] makes such hooks; a person's
    /// `hooks create` or `update` is refused this event.
    Scheduled,
}

impl Event {
    /// Every event a conversation has, which queues hooks.
    pub const ALL: [Event; 2] = [Event::ConversationDone, Event::ConversationFailed];

    /// Empty means `conversation-done`; `scheduled` is read too, as stores keep it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "" | "conversation-done" => Ok(Event::ConversationDone),
            "conversation-failed" => Ok(Event::ConversationFailed),
            "scheduled" => Ok(Event::Scheduled),
            other => Err(ValidationError::new(
                "event",
                format!(
                    "must be conversation-done or conversation-failed (got {})",
                    describe(other)
                ),
            )),
        }
    }
    /// Its name, as files, the CLI and the API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::ConversationDone => "conversation-done",
            Event::ConversationFailed => "conversation-failed",
            Event::Scheduled => "scheduled",
        }
    }
}

/// Where a hook's follow-up goes when its conversation is open in a TUI when it comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delivery {
    /// Into the open conversation, as a turn the person sees, where the running agent offers
    /// a way in and the daemon allows it; otherwise resumed after the close.
    #[default]
    Auto,
    /// Always resumed after the close, never into the open conversation.
    Closed,
}

impl Delivery {
    /// Every choice.
    pub const ALL: [Delivery; 2] = [Delivery::Auto, Delivery::Closed];

    /// Empty means `auto`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "" | "auto" => Ok(Delivery::Auto),
            "closed" => Ok(Delivery::Closed),
            other => Err(ValidationError::new(
                "deliver",
                format!("must be auto or closed (got {})", describe(other)),
            )),
        }
    }
    /// Its name, as files, the CLI and the API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Auto => "auto",
            Delivery::Closed => "closed",
        }
    }
}

/// Whose conversations a hook follows up: every agent's, or one agent's (named as people
/// name its program: `claude`, `codex`, or one a team's runner adds).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AgentScope {
    /// Every agent's conversations.
    #[default]
    All,
    /// Only this agent's conversations.
    Only(String),
}

impl AgentScope {
    /// `all` (or empty) for every agent; otherwise one agent's name: 1 to 32 lower-case
    /// letters, digits and dashes.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let s = s.trim();
        if s.is_empty() || s == "all" {
            return Ok(AgentScope::All);
        }
        let ok = s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-');
        if !ok {
            return Err(ValidationError::new(
                "agent",
                format!(
                    "must be all or an agent's name such as claude or codex: 1 to 32 lower-case \
                     letters, digits and dashes (got {})",
                    describe(s)
                ),
            ));
        }
        Ok(AgentScope::Only(s.to_owned()))
    }

    /// `all`, or the agent's name.
    pub fn as_str(&self) -> &str {
        match self {
            AgentScope::All => "all",
            AgentScope::Only(a) => a,
        }
    }

    /// Whether a conversation of `agent` is in scope; a conversation whose agent is not
    /// known is [`crate::DEFAULT_AGENT`]'s.
    pub fn covers(&self, agent: Option<&str>) -> bool {
        match self {
            AgentScope::All => true,
            AgentScope::Only(a) => a == agent.unwrap_or(crate::DEFAULT_AGENT),
        }
    }
}

/// How long after the event a hook fires: a whole number of seconds, 0 to 86400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delay(u32);

/// A whole number in `0..=max`, from a number or a decimal string; the error names `field`
/// and says `rule`.
fn whole_in(
    field: &'static str,
    rule: &str,
    max: u32,
    n: Result<i64, &str>,
) -> Result<u32, ValidationError> {
    match n {
        Ok(n) => u32::try_from(n)
            .ok()
            .filter(|v| *v <= max)
            .ok_or_else(|| ValidationError::new(field, format!("{rule} (got {n})"))),
        Err(s) => Err(ValidationError::new(
            field,
            format!("{rule} (got {})", describe(s)),
        )),
    }
}

const DELAY_RULE: &str = "must be a whole number from 0 to 86400 (seconds), or a length of time such as 30s, 5m, 2h or 1d up to a day";
const CAP_RULE: &str = "must be a whole number ≥ 0";

impl Delay {
    /// From a number of seconds, 0 to 86400; the error names `delaySeconds`.
    pub fn from_seconds(s: i64) -> Result<Self, ValidationError> {
        whole_in("delaySeconds", DELAY_RULE, MAX_DELAY_SECONDS, Ok(s)).map(Self)
    }
    /// As typed on a command line or a form: whole seconds, or a length of time in the one
    /// form every length takes (`30s`, `5m`, `2h`, `1d`; [`crate::span::parse_span`]).
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let secs = match s.trim().parse::<i64>() {
            Ok(n) => Ok(n),
            Err(_) if s.trim().starts_with('-') => Err(s),
            Err(_) => crate::span::parse_span("delaySeconds", s)
                .map(|d| d.whole_seconds())
                .map_err(|_| s),
        };
        whole_in("delaySeconds", DELAY_RULE, MAX_DELAY_SECONDS, secs).map(Self)
    }
    /// In seconds.
    pub fn seconds(self) -> u32 {
        self.0
    }
    /// As a length of time.
    pub fn duration(self) -> time::Duration {
        time::Duration::seconds(i64::from(self.0))
    }
}

/// A prompt file's path relative to a workspace: a `.md` file directly in
/// `.claude/agents/hooks/`, with no `..`. An absolute path to a file directly in a
/// `.claude/agents/hooks/` folder stands for that file in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PromptFile(String);

impl PromptFile {
    /// Checks a prompt file's path: directly in `.claude/agents/hooks/`, ending `.md`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let field = "promptFile";
        let rel = s.trim().trim_start_matches('/');
        if rel.chars().any(|c| c.is_control() || c == '\\') {
            return Err(ValidationError::new(
                field,
                "must not hold control characters or backslashes",
            ));
        }
        let parts: Vec<&str> = rel
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") {
            return Err(ValidationError::new(
                field,
                format!("must not contain '..' (got {})", describe(s)),
            ));
        }
        let Some((file, mut dir)) = parts.split_last() else {
            return Err(ValidationError::new(field, "must not be empty"));
        };
        let depth = PROMPT_DIR.split('/').count();
        if s.trim().starts_with('/') && dir.len() > depth {
            dir = &dir[dir.len() - depth..];
        }
        let is_md = file.len() > 3 && file.to_ascii_lowercase().ends_with(".md");
        if !is_md {
            return Err(ValidationError::new(
                field,
                format!("must be a .md file (got {})", describe(s)),
            ));
        }
        if dir.join("/") != PROMPT_DIR {
            return Err(ValidationError::new(
                field,
                format!(
                    "must be a file directly in {PROMPT_DIR}/ of the workspace, as \
                     {PROMPT_DIR}/NAME.md or an absolute path ending so (got {})",
                    describe(s)
                ),
            ));
        }
        Ok(Self(format!("{PROMPT_DIR}/{file}")))
    }
    /// The path relative to a workspace, with `/` separators.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PromptFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The largest context, in thousands of tokens, a conversation may have to be followed up;
/// 0 means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextCap(u32);

impl ContextCap {
    /// No cap.
    pub const NONE: ContextCap = ContextCap(0);

    /// From thousands of tokens; the error names `maxContextK`.
    pub fn from_k(k: i64) -> Result<Self, ValidationError> {
        whole_in("maxContextK", CAP_RULE, u32::MAX, Ok(k)).map(Self)
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        whole_in(
            "maxContextK",
            CAP_RULE,
            u32::MAX,
            s.trim().parse::<i64>().map_err(|_| s),
        )
        .map(Self)
    }
    /// In thousands of tokens (0: no cap).
    pub fn k(self) -> u32 {
        self.0
    }
    /// The cap in tokens, or `None` when there is no cap.
    pub fn tokens(self) -> Option<u64> {
        (self.0 > 0).then(|| u64::from(self.0) * 1000)
    }
}

/// How late past its due time an entry may still be followed up, in seconds (the machine
/// slept, the daemon was down); 0 means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MaxLateness(u32);

const LATENESS_RULE: &str =
    "must be a whole number of seconds from 0 to 2592000 (30 days; 0 for no limit)";

impl MaxLateness {
    /// No limit.
    pub const NONE: MaxLateness = MaxLateness(0);

    /// From a number of seconds; the error names `maxLatenessSeconds`.
    pub fn from_seconds(n: i64) -> Result<Self, ValidationError> {
        whole_in("maxLatenessSeconds", LATENESS_RULE, 2_592_000, Ok(n)).map(Self)
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        whole_in(
            "maxLatenessSeconds",
            LATENESS_RULE,
            2_592_000,
            s.trim().parse::<i64>().map_err(|_| s),
        )
        .map(Self)
    }
    /// In seconds (0: no limit).
    pub fn seconds(self) -> u32 {
        self.0
    }
    /// The limit, or `None` when there is none.
    pub fn limit(self) -> Option<time::Duration> {
        (self.0 > 0).then(|| time::Duration::seconds(i64::from(self.0)))
    }
}

/// The most a follow-up of a hook may cost, in US dollars, kept in millionths of a dollar;
/// 0 means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CostCap(u64);

const COST_RULE: &str = "must be a number of US dollars from 0 to 10000 (0 for no cap)";

impl CostCap {
    /// No cap.
    pub const NONE: CostCap = CostCap(0);

    /// From US dollars, 0 to 10000; the error names `maxCostUsd`.
    pub fn from_usd(usd: f64) -> Result<Self, ValidationError> {
        if usd.is_finite() && (0.0..=10_000.0).contains(&usd) {
            let micros = (usd * 1e6).round() as u64;
            // A cap too small to keep would be kept as 0, which means no cap at all: that
            // would fail open.
            if usd > 0.0 && micros == 0 {
                return Err(ValidationError::new(
                    "maxCostUsd",
                    format!(
                        "must be 0 (no cap) or at least 0.000001 US dollars (got {usd}, which would round to no cap)"
                    ),
                ));
            }
            Ok(Self(micros))
        } else {
            Err(ValidationError::new(
                "maxCostUsd",
                format!("{COST_RULE} (got {usd})"),
            ))
        }
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let t = s.trim().trim_start_matches('$');
        match t.parse::<f64>() {
            Ok(v) => Self::from_usd(v),
            Err(_) => Err(ValidationError::new(
                "maxCostUsd",
                format!("{COST_RULE} (got {})", describe(s)),
            )),
        }
    }
    /// The cap in dollars, or `None` when there is no cap.
    pub fn usd(self) -> Option<f64> {
        (self.0 > 0).then(|| self.0 as f64 / 1e6)
    }
}

/// A hook's name: 1 to 200 characters, no control characters.
pub fn validate_name(name: &str) -> Result<String, ValidationError> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > 200 || n.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "name",
            "must be 1 to 200 characters with no control characters",
        ));
    }
    Ok(n.to_owned())
}

/// The outcome of a hook's last decision, in the original's string forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The follow-up ran and ended well.
    Ok,
    /// It failed; why.
    Error(String),
    /// It did not run; why.
    Skipped(String),
    /// The run met a usage limit or an overload and its entry went back to the queue:
    /// not a failure, another attempt comes (`requeued: rate limited, due …`).
    Requeued(String),
    /// A string in the store that is none of the above; kept as it was.
    Other(String),
}

impl Status {
    /// A failure, saying why.
    pub fn error(why: impl Into<String>) -> Self {
        Status::Error(why.into())
    }
    /// A skip, saying why.
    pub fn skipped(why: impl Into<String>) -> Self {
        Status::Skipped(why.into())
    }
    /// From its stored form (`ok`, `error: why`, `skipped: why`, …); anything else is kept as it is.
    pub fn parse(s: &str) -> Self {
        if s == "ok" {
            Status::Ok
        } else if let Some(r) = s.strip_prefix("error: ") {
            Status::Error(r.to_owned())
        } else if let Some(r) = s.strip_prefix("skipped: ") {
            Status::Skipped(r.to_owned())
        } else if let Some(r) = s.strip_prefix("requeued: ") {
            Status::Requeued(r.to_owned())
        } else {
            Status::Other(s.to_owned())
        }
    }
    /// Whether it is [`Status::Ok`].
    pub fn is_ok(&self) -> bool {
        matches!(self, Status::Ok)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Ok => f.write_str("ok"),
            Status::Error(r) => write!(f, "error: {r}"),
            Status::Skipped(r) => write!(f, "skipped: {r}"),
            Status::Requeued(r) => write!(f, "requeued: {r}"),
            Status::Other(r) => f.write_str(r),
        }
    }
}

/// One firing in a hook's history: when, and which session. `key` is the stored key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The stored key: when it fired, as a timestamp.
    pub key: String,
    /// The conversation it followed up.
    pub session: String,
}

impl HistoryEntry {
    /// When it fired, if the key is a timestamp.
    pub fn at(&self) -> Option<Timestamp> {
        stamp::parse(&self.key)
    }
}

/// A hook's firings, oldest first, never more than [`HISTORY_CAP`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct History(Vec<HistoryEntry>);

impl History {
    /// From stored entries in any order; keeps the newest [`HISTORY_CAP`].
    /// Entries whose key is not a timestamp sort first, by key.
    pub fn from_entries(mut entries: Vec<HistoryEntry>) -> Self {
        entries.sort_by_cached_key(|e| (e.at(), e.key.clone()));
        let mut h = Self(entries);
        h.cap();
        h
    }
    /// Adds a firing at `at`. Keys stay unique: a second firing in the same second gets a
    /// key with microseconds.
    pub fn push(&mut self, at: Timestamp, session: &str) {
        let mut key = stamp::format(at);
        if self.0.iter().any(|e| e.key == key) {
            key = stamp::format_micros(at);
            let mut bump = at;
            while self.0.iter().any(|e| e.key == key) {
                bump += time::Duration::microseconds(1);
                key = stamp::format_micros(bump);
            }
        }
        self.0.push(HistoryEntry {
            key,
            session: session.to_owned(),
        });
        self.cap();
    }
    fn cap(&mut self) {
        if self.0.len() > HISTORY_CAP {
            let excess = self.0.len() - HISTORY_CAP;
            self.0.drain(..excess);
        }
    }
    /// The firings, oldest first.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.0
    }
    /// How many are kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A hook: what to run, when, and for which conversations.
///
/// Hooks gain settings, so it is `#[non_exhaustive]`: a store outside this crate builds the
/// hook it read with [`Hook::new`] and sets the fields it keeps; one it does not keep yet
/// stays at a new hook's default.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hook {
    /// The hook's id: the slug of its name, unique in the store.
    pub id: HookId,
    /// What people call it.
    pub name: String,
    /// The event that queues it.
    pub event: Event,
    /// How long after the event it fires.
    pub delay: Delay,
    /// The prompt file its follow-up runs.
    pub prompt_file: PromptFile,
    /// Whether it is queued at all.
    pub enabled: bool,
    /// Whether conversations a cron job started are passed over.
    pub skip_cron: bool,
    /// Whether subagents' conversations are passed over.
    pub skip_subagents: bool,
    /// The largest context it follows up, in thousands of tokens (0: no cap).
    pub max_context: ContextCap,
    /// The most one follow-up may cost, estimated before it starts and enforced by Claude.
    pub max_cost: CostCap,
    /// An entry found later than this past its due time is skipped, not fired.
    pub max_lateness: MaxLateness,
    /// The failures a `conversation-failed` hook follows up.
    pub errors: FailureKinds,
    /// Whether its follow-up may go into a conversation still open in a TUI.
    pub deliver: Delivery,
    /// Whose conversations it follows up.
    pub agent: AgentScope,
    /// When it was created.
    pub created_at: Option<Timestamp>,
    /// What its last follow-up came to.
    pub last_status: Option<Status>,
    /// Its firings, oldest first.
    pub history: History,
}

/// What the enqueue decision needs of a hook: its rules, without its status or history.
/// `#[non_exhaustive]` as [`Hook`] is: build it with [`HookRules::new`] or from a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookRules {
    /// The hook's id: the slug of its name, unique in the store.
    pub id: HookId,
    /// The event that queues it.
    pub event: Event,
    /// How long after the event it fires.
    pub delay: Delay,
    /// Whether it is queued at all.
    pub enabled: bool,
    /// Whether conversations a cron job started are passed over.
    pub skip_cron: bool,
    /// Whether subagents' conversations are passed over.
    pub skip_subagents: bool,
    /// The failures a `conversation-failed` hook follows up.
    pub errors: FailureKinds,
    /// Whose conversations it follows up.
    pub agent: AgentScope,
}

impl Hook {
    /// The hook `id` named `name`, running `prompt_file`, with every other setting at the
    /// default [`HookSpec::new`] gives a new hook, no creation time and no history: for a
    /// store that reads a hook back and then sets the fields it keeps.
    pub fn new(id: HookId, name: String, prompt_file: PromptFile) -> Self {
        HookSpec::defaults(name, prompt_file).into_hook_at(id, None)
    }
}

impl HookRules {
    /// The rules of hook `id` for `event`, every other rule at a new hook's default (see
    /// [`Hook::new`]): for a store that reads a hook's rules and sets the ones it keeps.
    pub fn new(id: HookId, event: Event) -> Self {
        let mut h = Hook::new(id, String::new(), PromptFile(String::new()));
        h.event = event;
        HookRules::from(&h)
    }
}

impl From<&Hook> for HookRules {
    fn from(h: &Hook) -> Self {
        Self {
            id: h.id.clone(),
            event: h.event,
            delay: h.delay,
            enabled: h.enabled,
            skip_cron: h.skip_cron,
            skip_subagents: h.skip_subagents,
            errors: h.errors.clone(),
            agent: h.agent.clone(),
        }
    }
}

/// Everything needed to create a hook; the id is chosen by the store.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    /// What people call it.
    pub name: String,
    /// The event that queues it.
    pub event: Event,
    /// How long after the event it fires.
    pub delay: Delay,
    /// The prompt file its follow-up runs.
    pub prompt_file: PromptFile,
    /// Whether it is queued at all.
    pub enabled: bool,
    /// Whether conversations a cron job started are passed over.
    pub skip_cron: bool,
    /// Whether subagents' conversations are passed over.
    pub skip_subagents: bool,
    /// The largest context it follows up, in thousands of tokens (0: no cap).
    pub max_context: ContextCap,
    /// The most one follow-up may cost (0: no cap).
    pub max_cost: CostCap,
    /// How late past its due time an entry may still fire (0: no limit).
    pub max_lateness: MaxLateness,
    /// The failures a `conversation-failed` hook follows up.
    pub errors: FailureKinds,
    /// Whether its follow-up may go into a conversation still open in a TUI.
    pub deliver: Delivery,
    /// Whose conversations it follows up.
    pub agent: AgentScope,
}

impl HookSpec {
    /// A hook with the defaults a user would expect: enabled, 10 s, skips cron sessions and
    /// subagents, no context cap.
    pub fn new(name: &str, prompt_file: PromptFile) -> Result<Self, ValidationError> {
        Ok(Self::defaults(validate_name(name)?, prompt_file))
    }

    fn defaults(name: String, prompt_file: PromptFile) -> Self {
        Self {
            name,
            event: Event::ConversationDone,
            delay: Delay(10),
            prompt_file,
            enabled: true,
            skip_cron: true,
            skip_subagents: true,
            max_context: ContextCap::NONE,
            max_cost: CostCap::NONE,
            max_lateness: MaxLateness::NONE,
            errors: FailureKinds::default(),
            deliver: Delivery::Auto,
            agent: AgentScope::All,
        }
    }

    /// The hook the store is seeded with.
    pub fn post_task() -> Self {
        Self {
            name: "Post-task follow-up".to_owned(),
            event: Event::ConversationDone,
            delay: Delay(10),
            prompt_file: PromptFile(format!("{PROMPT_DIR}/post-task.md")),
            enabled: true,
            skip_cron: true,
            skip_subagents: true,
            max_context: ContextCap(60),
            max_cost: CostCap::NONE,
            max_lateness: MaxLateness::NONE,
            errors: FailureKinds::default(),
            deliver: Delivery::Auto,
            agent: AgentScope::All,
        }
    }

    /// The second seeded hook, off until the user turns it on: a conversation stopped by a
    /// usage or capacity limit carries on once the limit has reset. It differs from
    /// post-task only where it says so.
    pub fn continue_after_limit() -> Self {
        Self {
            name: "Continue after limit".to_owned(),
            event: Event::ConversationFailed,
            delay: Delay(60),
            prompt_file: PromptFile(format!("{PROMPT_DIR}/continue-after-limit.md")),
            enabled: false,
            max_context: ContextCap::NONE,
            ..Self::post_task()
        }
    }

    /// Sets what `patch` gives. A hook made a `conversation-failed` one without a delay of
    /// its own gets 60 s, the first wait of its backoff.
    pub fn apply(&mut self, patch: &HookPatch) {
        let HookPatch {
            name,
            event,
            delay,
            prompt_file,
            enabled,
            skip_cron,
            skip_subagents,
            max_context,
            max_cost,
            max_lateness,
            errors,
            deliver,
            agent,
        } = patch;
        if let Some(v) = name {
            self.name.clone_from(v);
        }
        if let Some(v) = *event {
            self.event = v;
            if v == Event::ConversationFailed && delay.is_none() {
                self.delay = Delay(60);
            }
        }
        if let Some(v) = *delay {
            self.delay = v;
        }
        if let Some(v) = prompt_file {
            self.prompt_file = v.clone();
        }
        if let Some(v) = *enabled {
            self.enabled = v;
        }
        if let Some(v) = *skip_cron {
            self.skip_cron = v;
        }
        if let Some(v) = *skip_subagents {
            self.skip_subagents = v;
        }
        if let Some(v) = *max_context {
            self.max_context = v;
        }
        if let Some(v) = *max_cost {
            self.max_cost = v;
        }
        if let Some(v) = *max_lateness {
            self.max_lateness = v;
        }
        if let Some(v) = errors {
            self.errors = v.clone();
        }
        if let Some(v) = *deliver {
            self.deliver = v;
        }
        if let Some(v) = agent {
            self.agent = v.clone();
        }
    }

    /// The hook this spec makes, with its id, created `now`.
    pub fn into_hook(self, id: HookId, now: Timestamp) -> Hook {
        self.into_hook_at(id, Some(now))
    }

    fn into_hook_at(self, id: HookId, created_at: Option<Timestamp>) -> Hook {
        Hook {
            id,
            name: self.name,
            event: self.event,
            delay: self.delay,
            prompt_file: self.prompt_file,
            enabled: self.enabled,
            skip_cron: self.skip_cron,
            skip_subagents: self.skip_subagents,
            max_context: self.max_context,
            max_cost: self.max_cost,
            max_lateness: self.max_lateness,
            errors: self.errors,
            deliver: self.deliver,
            agent: self.agent,
            created_at,
            last_status: None,
            history: History::default(),
        }
    }
}

/// The id the seeded hook has.
pub fn post_task_id() -> HookId {
    HookId("post-task".to_owned())
}

/// The hooks a new store is seeded with: `post-task`, and `continue-after-limit` (off).
pub fn seed_hooks(now: Timestamp) -> [Hook; 2] {
    [
        HookSpec::post_task().into_hook(post_task_id(), now),
        HookSpec::continue_after_limit().into_hook(continue_after_limit_id(), now),
    ]
}

/// The id the second seeded hook has.
pub fn continue_after_limit_id() -> HookId {
    HookId("continue-after-limit".to_owned())
}

/// A change to a hook: each `Some` field replaces the hook's value. `#[non_exhaustive]` as
/// hooks gain settings: start from `default()` and set what changes.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct HookPatch {
    /// When set, the new value of: what people call it.
    pub name: Option<String>,
    /// When set, the new value of: the event that queues it.
    pub event: Option<Event>,
    /// When set, the new value of: how long after the event it fires.
    pub delay: Option<Delay>,
    /// When set, the new value of: the prompt file its follow-up runs.
    pub prompt_file: Option<PromptFile>,
    /// When set, the new value of: whether it is queued at all.
    pub enabled: Option<bool>,
    /// When set, the new value of: whether conversations a cron job started are passed over.
    pub skip_cron: Option<bool>,
    /// When set, the new value of: whether subagents' conversations are passed over.
    pub skip_subagents: Option<bool>,
    /// When set, the new value of: the largest context it follows up, in thousands of tokens (0: no cap).
    pub max_context: Option<ContextCap>,
    /// When set, the new value of: the most one follow-up may cost (0: no cap).
    pub max_cost: Option<CostCap>,
    /// When set, the new value of: how late past its due time an entry may still fire (0: no limit).
    pub max_lateness: Option<MaxLateness>,
    /// When set, the new value of: the failures a `conversation-failed` hook follows up.
    pub errors: Option<FailureKinds>,
    /// When set, the new value of: whether its follow-up may go into a conversation still open in a TUI.
    pub deliver: Option<Delivery>,
    /// When set, the new value of: whose conversations it follows up.
    pub agent: Option<AgentScope>,
}

impl HookPatch {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == HookPatch::default()
    }
    /// Sets on `hook` every field it gives.
    pub fn apply(&self, hook: &mut Hook) {
        if let Some(v) = &self.name {
            hook.name.clone_from(v);
        }
        if let Some(v) = self.event {
            hook.event = v;
        }
        if let Some(v) = self.delay {
            hook.delay = v;
        }
        if let Some(v) = &self.prompt_file {
            hook.prompt_file = v.clone();
        }
        if let Some(v) = self.enabled {
            hook.enabled = v;
        }
        if let Some(v) = self.skip_cron {
            hook.skip_cron = v;
        }
        if let Some(v) = self.skip_subagents {
            hook.skip_subagents = v;
        }
        if let Some(v) = self.max_context {
            hook.max_context = v;
        }
        if let Some(v) = self.max_lateness {
            hook.max_lateness = v;
        }
        if let Some(v) = self.max_cost {
            hook.max_cost = v;
        }
        if let Some(v) = &self.errors {
            hook.errors = v.clone();
        }
        if let Some(v) = self.deliver {
            hook.deliver = v;
        }
        if let Some(v) = &self.agent {
            hook.agent = v.clone();
        }
    }
}

/// When a pending entry is due. A stored value that is not a timestamp counts as due now,
/// so a corrupt stamp cannot strand an entry; it is kept as it was until rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DueAt {
    /// Due at this time.
    At(Timestamp),
    /// A stored value that is not a timestamp: due now, kept as it was.
    Unparseable(String),
}

impl DueAt {
    /// From its stored form.
    pub fn from_stored(s: &str) -> Self {
        stamp::parse(s).map_or_else(|| DueAt::Unparseable(s.to_owned()), DueAt::At)
    }
    /// Whether it is due at `now`.
    pub fn is_due(&self, now: Timestamp) -> bool {
        match self {
            DueAt::At(t) => *t <= now,
            DueAt::Unparseable(_) => true,
        }
    }
    /// The time, when it is one.
    pub fn time(&self) -> Option<Timestamp> {
        match self {
            DueAt::At(t) => Some(*t),
            DueAt::Unparseable(_) => None,
        }
    }
}

impl fmt::Display for DueAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DueAt::At(t) => f.write_str(&stamp::format(*t)),
            DueAt::Unparseable(s) => f.write_str(s),
        }
    }
}

/// Who holds a pending entry, and until when. Fields the original module ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Who holds it (`host:pid:nonce`).
    pub owner: String,
    /// When it lapses unless renewed.
    pub expires_at: Timestamp,
}

/// One queued firing of a hook for a session. (hook, session) is unique in the queue.
///
/// A plain struct: a store builds it with every field named, so a field added later is a
/// compile error in every store that would drop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    /// The hook to fire.
    pub hook_id: HookId,
    /// The conversation to follow up.
    pub session_id: SessionId,
    /// When it is due.
    pub due_at: DueAt,
    /// When it was queued.
    pub queued_at: Option<Timestamp>,
    /// How many times it was looked at and found not ready (no transcript, no model
    /// known); capped by [`crate::decide::Policy::max_retries`].
    pub retries: u32,
    /// How many of its runs ended on a usage limit or an overload and put it back;
    /// capped by [`crate::failure::MAX_ATTEMPTS`].
    pub attempts: u32,
    /// How many times it was handed to the open conversation and never reached it: once
    /// is enough, it is resumed after the close and never delivered again.
    pub not_taken: u32,
    /// The claim of the process firing it, if any.
    pub claim: Option<Claim>,
    /// Why it waits (an open conversation, another run, a limit), if it does.
    pub waiting: Option<Waiting>,
    /// The failure it follows up (a `conversation-failed` hook's entry).
    pub error: Option<FailureKind>,
}

impl PendingEntry {
    /// An entry of `hook_id` for `session_id`, due at `due_at`: never retried, claimed or
    /// waiting, no failure, no time queued.
    pub fn new(hook_id: HookId, session_id: SessionId, due_at: DueAt) -> Self {
        Self {
            hook_id,
            session_id,
            due_at,
            queued_at: None,
            retries: 0,
            attempts: 0,
            not_taken: 0,
            claim: None,
            waiting: None,
            error: None,
        }
    }

    /// Its (hook, session) key.
    pub fn key(&self) -> EntryKey {
        EntryKey {
            hook_id: self.hook_id.clone(),
            session_id: self.session_id.clone(),
        }
    }
    /// Whether a live claim by someone hides it from other claimers at `now`.
    pub fn is_claimed(&self, now: Timestamp) -> bool {
        self.claim.as_ref().is_some_and(|c| c.expires_at > now)
    }
    /// Whether it may be claimed at `now`: due and under no live claim.
    pub fn is_claimable(&self, now: Timestamp) -> bool {
        self.due_at.is_due(now) && !self.is_claimed(now)
    }
    /// Whether it waits for its conversation to be closed.
    pub fn waits_for_close(&self) -> bool {
        self.waiting.as_ref().is_some_and(Waiting::waits_for_close)
    }
    /// When it became due, as people read it: for an entry waiting for its conversation
    /// to be closed, when that wait began (its `due_at` is then when it gives up).
    pub fn became_due(&self) -> DueAt {
        match &self.waiting {
            Some(w) if w.waits_for_close() => DueAt::At(w.since),
            _ => self.due_at.clone(),
        }
    }
    /// When it gives up waiting for its conversation to be closed, if it waits so.
    pub fn gives_up_at(&self) -> Option<Timestamp> {
        self.waits_for_close().then(|| self.due_at.time()).flatten()
    }
    /// When something will next happen to it by the clock: it is tried, or it gives up
    /// waiting for its conversation (which, closed sooner, wakes it sooner).
    pub fn next_step(&self) -> Option<Timestamp> {
        self.due_at.time()
    }
    /// What it waits for, in words: `due`, `queued`, `waits until the conversation is
    /// closed (gives up at …): <reason>`, `waiting: <reason>`.
    pub fn state_text(&self, now: Timestamp) -> String {
        match (&self.claim, &self.waiting) {
            (Some(c), _) if c.expires_at > now => format!("claimed by {}", c.owner),
            (_, Some(w)) if w.waits_for_close() => format!(
                "waits until the conversation is closed (gives up at {}): {}",
                self.due_at, w.reason
            ),
            (_, Some(w)) => format!("waiting: {}", w.reason),
            _ if self.due_at.is_due(now) => "due".into(),
            _ => "queued".into(),
        }
    }
}

/// Names one pending entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey {
    /// The hook.
    pub hook_id: HookId,
    /// The conversation.
    pub session_id: SessionId,
}

impl fmt::Display for EntryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.hook_id, self.session_id)
    }
}

/// Where a conversation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    #[default]
    /// A person's conversation (the default).
    Interactive,
    /// A conversation a cron job started (`HOOKS_APP_ORIGIN=cron`).
    Cron,
}

impl Origin {
    /// From its name; the error names `origin`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "cron" => Ok(Origin::Cron),
            "" | "interactive" => Ok(Origin::Interactive),
            other => Err(ValidationError::new(
                "origin",
                format!("must be cron or interactive (got {})", describe(other)),
            )),
        }
    }
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Interactive => "interactive",
            Origin::Cron => "cron",
        }
    }
}

/// What the app has remembered about a session in its own files. `#[non_exhaustive]`: a
/// store outside this crate starts from `default()` and sets what it keeps.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SessionState {
    /// The folder the conversation started in, set once.
    pub cwd: Option<String>,
    /// Where its transcript is.
    pub transcript_path: Option<String>,
    /// Who started it.
    pub origin: Option<Origin>,
    /// The once-per-hook stamps: when each hook fired for this session.
    pub stamps: BTreeMap<HookId, Timestamp>,
    /// The agent whose conversation it is, as the [`crate::ports::SessionMeta`] tells from
    /// the agent's files (`None`: not known, which is [`crate::DEFAULT_AGENT`]'s). Not
    /// kept: a [`crate::ports::SessionStore`] leaves it `None`.
    pub agent: Option<String>,
}

/// What remembering an event adds to a session's state; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionUpdate {
    /// The conversation's folder, when known (kept only if none is yet).
    pub cwd: Option<String>,
    /// Its transcript, when known.
    pub transcript_path: Option<String>,
    /// Who started it, when known.
    pub origin: Option<Origin>,
}

impl SessionUpdate {
    /// Paths must be absolute: a relative one would later be resolved against whatever
    /// folder a daemon happens to run in.
    pub fn validate(&self) -> Result<(), ValidationError> {
        for (field, v) in [
            ("cwd", &self.cwd),
            ("transcriptPath", &self.transcript_path),
        ] {
            if let Some(p) = v
                && (!p.starts_with('/') || p.contains('\0') || p.len() > 4096)
            {
                return Err(ValidationError::new(
                    field,
                    format!(
                        "must be an absolute path of at most 4096 bytes (got {})",
                        describe(p)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Facts read from a session's Claude Code transcript.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TranscriptFacts {
    /// The transcript's path.
    pub path: String,
    /// Whether it is a subagent's.
    pub subagent: bool,
    /// input + cache creation + cache read tokens of the last real assistant response.
    pub context_tokens: Option<u64>,
    /// When the file last changed: the quiet period counts from here.
    pub last_change: Option<Timestamp>,
    /// The folder the conversation was started in: the `cwd` of the transcript's first
    /// line that has one. Later lines carry the shell's folder after the agent's `cd`s,
    /// which say nothing of the project.
    pub cwd: Option<String>,
    /// The last assistant message's text.
    pub last_assistant_text: Option<String>,
    /// The model that wrote the last real assistant message (`message.model`).
    pub model: Option<String>,
    /// When the last real assistant message was written (its line's `timestamp`).
    pub last_reply_at: Option<Timestamp>,
    /// The conversation's last assistant line is an API error Claude Code wrote in place
    /// of a reply (`isApiErrorMessage`): its last turn failed and nothing answered since.
    pub ends_in_error: bool,
    /// When the API error the conversation ends in was written (its line's `timestamp`),
    /// with [`TranscriptFacts::ends_in_error`].
    pub failed_at: Option<Timestamp>,
    /// The kind of that error as Claude Code wrote it (the line's `error`: `rate_limit`,
    /// `overloaded`, …).
    pub failed_kind: Option<String>,
    /// When the limit that error was resets, where the transcript records it as an
    /// instant (Codex's rollout: the `rate_limits` window at 100 %).
    pub failed_resets_at: Option<Timestamp>,
    /// The agent whose conversation this is, when its format says (`codex` for a Codex
    /// rollout); `None` for Claude Code's own transcripts.
    pub agent: Option<String>,
}

impl TranscriptFacts {
    /// Whether the conversation took a turn that was answered after a failure at `failed`
    /// (when its entry was queued): it no longer ends in an error, and its last reply is
    /// newer. A person's prompt, Claude Code's own continue at a limit and another
    /// follow-up all count; a `/exit` or a turn that failed again does not.
    pub fn went_on_after(&self, failed: Timestamp) -> bool {
        !self.ends_in_error && self.last_reply_at.is_some_and(|r| r > failed)
    }
}

/// Everything the app knows about a session when it decides.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SessionFacts {
    /// What the store keeps of the session.
    pub state: SessionState,
    /// `None` when no transcript was found.
    pub transcript: Option<TranscriptFacts>,
    /// The Claude Code process that has the conversation open, if one has.
    pub open: Option<OpenSession>,
    /// The session's run lease, if one is held or was left behind.
    pub lease: Option<LeaseInfo>,
    /// The model Claude Code's settings choose for the conversation's folder (its local
    /// project settings, then the project's, then the user's), when one is set: what a
    /// conversation with no reply yet runs on.
    pub settings_model: Option<String>,
    /// The user who owns the folder a follow-up would run in ([`SessionFacts::cwd`]), when
    /// that is not this user: such a conversation is never resumed.
    pub folder_owner: Option<String>,
}

impl SessionFacts {
    /// Subagent by the transcript's path or lines.
    pub fn is_subagent(&self) -> bool {
        self.transcript.as_ref().is_some_and(|t| t.subagent)
            || self
                .state
                .transcript_path
                .as_deref()
                .is_some_and(is_subagent_path)
    }
    /// Who started the conversation ([`Origin::Interactive`] when unknown).
    pub fn origin(&self) -> Origin {
        self.state.origin.unwrap_or_default()
    }
    /// The directory to resume in: the folder the transcript says the conversation was
    /// started in, else the one remembered from its first event. Never a folder a later
    /// event names (the agent may have `cd`'d into a package that brings its own settings).
    pub fn cwd(&self) -> Option<&str> {
        self.transcript
            .as_ref()
            .and_then(|t| t.cwd.as_deref())
            .or(self.state.cwd.as_deref())
    }
}

/// Whether a transcript path is a subagent's: `…/<parent>/subagents/agent-*.jsonl` (2.1.2+)
/// or a legacy `…/agent-*.jsonl` beside the session files. Pure string work on `/` paths.
pub fn is_subagent_path(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or("");
    let parent = parts.next().unwrap_or("");
    (file.starts_with("agent-") && file.ends_with(".jsonl")) || parent == "subagents"
}

/// A done marker: one line, 1 to 100 characters, not blank. Surrounding blanks are dropped,
/// as they are when a reply's last line is compared with it.
pub fn validate_marker(marker: &str) -> Result<String, ValidationError> {
    let m = marker.trim();
    if m.is_empty() || m.chars().count() > 100 || m.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "doneMarker",
            "must be one line of 1 to 100 characters",
        ));
    }
    Ok(m.to_owned())
}

/// Whether the last non-empty line of `text` is exactly `marker` (surrounding blanks ignored).
pub fn ends_with_marker(text: &str, marker: &str) -> bool {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()) == Some(marker)
}

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
