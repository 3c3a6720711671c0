//! Hooks: their events, scopes and delivery, what a person asks for (`HookSpec`,
//! `HookPatch`), the seeds, a hook's history and its last status.

use std::fmt;

use crate::failure::FailureKinds;
use crate::id::describe;
use crate::id::{HookId, ValidationError};
use crate::stamp::{self, Timestamp};

use super::values::*;

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

/// How often a hook follows up one conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Repeat {
    /// Once: the first DONE is followed up, later ones are told it ran already.
    #[default]
    Once,
    /// Every task: each DONE of a turn the person asked for is followed up in turn, once
    /// its follow-up before has run. A follow-up's own turn is never followed up (its
    /// DONE is its own), but a failed turn's continuation, which carries the task on.
    EachTask,
}

impl Repeat {
    /// Every choice.
    pub const ALL: [Repeat; 2] = [Repeat::Once, Repeat::EachTask];

    /// Empty means `once`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "" | "once" => Ok(Repeat::Once),
            "each-task" => Ok(Repeat::EachTask),
            other => Err(ValidationError::new(
                "repeat",
                format!("must be once or each-task (got {})", describe(other)),
            )),
        }
    }
    /// Its name, as files, the CLI and the API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Repeat::Once => "once",
            Repeat::EachTask => "each-task",
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
    /// Whether it follows up a conversation once, or each of its tasks.
    pub repeat: Repeat,
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
    /// Whether it follows up a conversation once, or each of its tasks.
    pub repeat: Repeat,
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
            repeat: h.repeat,
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
    /// Whether it follows up a conversation once, or each of its tasks.
    pub repeat: Repeat,
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
            repeat: Repeat::Once,
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
            repeat: Repeat::Once,
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
            repeat,
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
        if let Some(v) = *repeat {
            self.repeat = v;
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
            repeat: self.repeat,
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
    /// When set, the new value of: whether it follows up a conversation once, or each of
    /// its tasks.
    pub repeat: Option<Repeat>,
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
        if let Some(v) = self.repeat {
            hook.repeat = v;
        }
    }
}
