//! Who holds a session right now: a Claude Code process that has it open, or a follow-up
//! run of this app under a run lease. Pure types; the adapters ask the system (through
//! hooks-platform) and read Claude Code's `sessions/<pid>.json` files, and hand the results
//! in.

use std::fmt;

use time::Duration;

use crate::id::HookId;
use crate::stamp::Timestamp;

/// A process named by its pid and its start time (as the host's platform tells it: clock
/// ticks after boot on Linux, seconds after the epoch elsewhere), so that a pid reused by
/// another process is never mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessRef {
    /// The process id.
    pub pid: u32,
    /// When it started, as the platform tells it.
    pub start: u64,
}

impl fmt::Display for ProcessRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} (started at {})", self.pid, self.start)
    }
}

/// A Claude Code process that has a session open, from its `sessions/<pid>.json` file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenSession {
    /// The agent's program as people name it (`claude`, `codex`): whose conversation it is.
    pub agent: String,
    /// The agent's process; 0 when the agent's files do not say.
    pub pid: u32,
    /// `interactive`, `sdk-cli`, …, as the file says; `None` when it says nothing.
    pub kind: Option<String>,
    /// `idle` or `busy`, as the file says.
    pub status: Option<String>,
    /// Where the running CLI takes a message into this conversation (Claude Code 2.1.332's
    /// per-session inbox socket, the user's own), when it offers one.
    pub inbox: Option<String>,
}

impl OpenSession {
    /// `agent`'s process `pid` has the conversation open; nothing more known of it (its
    /// kind, status and inbox), which a meta outside this crate then sets.
    pub fn new(agent: impl Into<String>, pid: u32) -> Self {
        Self {
            agent: agent.into(),
            pid,
            kind: None,
            status: None,
            inbox: None,
        }
    }
}

impl OpenSession {
    /// Whether the conversation waits for the person: a turn delivered now runs at once.
    pub fn is_idle(&self) -> bool {
        self.status.as_deref() == Some("idle")
    }
}

/// A follow-up delivered into the conversation a person has open, as one turn of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenDelivery {
    /// The inbox the running CLI reads ([`OpenSession::inbox`]).
    pub inbox: String,
    /// The process that holds the conversation open.
    pub pid: u32,
    /// The conversation's transcript, where the turn and its outcome are read.
    pub transcript: String,
}

impl fmt::Display for OpenSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pid = (self.pid != 0).then(|| format!("pid {}", self.pid));
        let parts: Vec<&str> = [pid.as_ref(), self.kind.as_ref(), self.status.as_ref()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        write!(f, "{}", parts.join(", "))
    }
}

/// What a follow-up delivered into an open conversation says: a first line naming
/// hooks-app and the hook (an agent shows it as a message from another session, with no
/// sender), then the prompt. The transcript keeps it, and [`delivered_follow_up`] reads it
/// back: a turn that answered it is the follow-up's, not the person's.
pub fn delivered_message(hook_id: &str, prompt: &str) -> String {
    format!(
        "{DELIVERED_MARK}{hook_id}. Sent by hooks-app, not typed by you; `hooks-app pause` stops these.]\n\n{prompt}"
    )
}

const DELIVERED_MARK: &str = "[hooks-app follow-up: ";

/// The hook a prompt delivered by [`delivered_message`] names, when `prompt` is one (the
/// agent may wrap it in words of its own).
pub fn delivered_follow_up(prompt: &str) -> Option<&str> {
    let at = prompt.find(DELIVERED_MARK)?;
    let rest = &prompt[at + DELIVERED_MARK.len()..];
    let id = &rest[..rest.find(". Sent by hooks-app")?];
    (!id.is_empty() && id.len() <= 64).then_some(id)
}

/// The per-session run lease: while it is live, no other follow-up starts on the session.
/// Taken together with the (hook, session) stamp, in one test-and-set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLease {
    /// Names the run in the run log.
    pub run_id: String,
    /// The hook whose follow-up runs.
    pub hook_id: HookId,
    /// The claim owner of the process running it (`host:pid:nonce`).
    pub owner: String,
    /// The host it runs on.
    pub host: String,
    /// The process running it, when known.
    pub owner_process: Option<ProcessRef>,
    /// The follow-up's own process, the leader of its process group, once started.
    pub child: Option<ProcessRef>,
    /// When the run started.
    pub started_at: Timestamp,
    /// When the lease lapses unless renewed: after that, another may take the session.
    pub expires_at: Timestamp,
}

/// Whether the process behind a lease is still there, as far as the adapter can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// On this host, and its runner or its child is alive.
    Alive,
    /// On this host, and neither its runner nor its child is alive.
    Gone,
    /// On another host: only the lease's expiry tells.
    Unknown,
}

/// A lease as found, with what the adapter saw of its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The lease.
    pub lease: RunLease,
    /// Whether its holder is still there.
    pub holder: Holder,
}

impl LeaseInfo {
    /// A lease is live while its holder is seen alive, or, when it cannot be seen, until
    /// it expires.
    pub fn is_live(&self, now: Timestamp) -> bool {
        match self.holder {
            Holder::Alive => true,
            Holder::Gone => false,
            Holder::Unknown => self.lease.expires_at > now,
        }
    }
}

/// What a pending entry waits for. Code decides by this, never by the words shown to
/// people; stores keep it by [`WaitKind::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitKind {
    /// Another follow-up is running on the session.
    Running,
    /// The conversation is open with no way in: it is resumed once it is closed.
    Open,
    /// The open conversation's turn is in progress: delivered into it once idle.
    Turn,
    /// The transcript is still being written to.
    Quiet,
    /// Not ready yet (no transcript, no model known): looked at again, using up a retry.
    NotReady,
    /// The day's budget is spent: it waits for the next day.
    Budget,
    /// Follow-ups are paused.
    Paused,
    /// A usage limit or an overload: it waits for the reset or the backoff. Another run
    /// ending does not wake it.
    Limit,
    /// Its delivery never reached the open conversation: resumed once it is closed, never
    /// delivered again.
    NotTaken,
    /// The agent's program could not be started: tried again after a backoff, using up
    /// one of the run attempts.
    NotStarted,
    /// A usage limit's continuation for a conversation left open in a TUI with a way in:
    /// the agent may continue it itself after the reset (Claude Code's
    /// `autoContinueAtUsageLimit`), so it waits [`crate::decide::Policy::own_continue_wait`]
    /// and is delivered only if nothing carried the conversation on (closed meanwhile, it is
    /// resumed when the wait ends, on the same condition).
    OwnContinue,
}

impl WaitKind {
    /// Every kind, in the order above.
    pub const ALL: [WaitKind; 11] = [
        WaitKind::Running,
        WaitKind::Open,
        WaitKind::Turn,
        WaitKind::Quiet,
        WaitKind::NotReady,
        WaitKind::Budget,
        WaitKind::Paused,
        WaitKind::Limit,
        WaitKind::NotTaken,
        WaitKind::NotStarted,
        WaitKind::OwnContinue,
    ];

    /// Its stored name: `running`, `open`, `turn`, `quiet`, `not-ready`, `budget`,
    /// `paused`, `limit`, `not-taken`, `not-started`, `own-continue`.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Running => "running",
            WaitKind::Open => "open",
            WaitKind::Turn => "turn",
            WaitKind::Quiet => "quiet",
            WaitKind::NotReady => "not-ready",
            WaitKind::Budget => "budget",
            WaitKind::Paused => "paused",
            WaitKind::Limit => "limit",
            WaitKind::NotTaken => "not-taken",
            WaitKind::NotStarted => "not-started",
            WaitKind::OwnContinue => "own-continue",
        }
    }

    /// The kind a stored name names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether it waits for the conversation to be closed (its entry is woken by the
    /// close, and its `due_at` is when it gives up).
    pub fn waits_for_close(self) -> bool {
        matches!(self, WaitKind::Open | WaitKind::NotTaken)
    }

    /// The kind of a wait stored before kinds were (`reason` and its `open` flag): the
    /// one place a wait's words are read, to migrate old files and rows.
    pub fn of_legacy(reason: &str, open: bool) -> Self {
        if reason.starts_with(LEGACY_NOT_TAKEN) {
            return WaitKind::NotTaken;
        }
        if open {
            return WaitKind::Open;
        }
        LEGACY_STARTS
            .iter()
            .find(|(start, _)| reason.starts_with(start))
            .map_or(WaitKind::NotReady, |(_, kind)| *kind)
    }
}

/// How the words of the waits that were not for a close began, before kinds were stored.
const LEGACY_STARTS: [(&str, WaitKind); 6] = [
    ("rate limited", WaitKind::Limit),
    ("waits for the turn to end", WaitKind::Turn),
    ("conversation still being written to", WaitKind::Quiet),
    ("paused", WaitKind::Paused),
    ("daily budget: ", WaitKind::Budget),
    ("a follow-up is running", WaitKind::Running),
];

/// How the reason of an entry whose delivery went untaken began before kinds were stored.
const LEGACY_NOT_TAKEN: &str = "not taken by the open conversation";

impl fmt::Display for WaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an entry is waiting, kept on the entry so `pending` and `session` can show it.
/// Waiting never uses up retries, but for [`WaitKind::NotReady`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// What it waits for: what code decides by.
    pub kind: WaitKind,
    /// Shown to people, never decided by: `conversation open in claude, pid 4242,
    /// interactive, idle`.
    pub reason: String,
    /// When the wait began; the open-wait limit counts from here.
    pub since: Timestamp,
}

impl Waiting {
    /// A wait of `kind` since `since`, saying `reason`.
    pub fn new(kind: WaitKind, reason: impl Into<String>, since: Timestamp) -> Self {
        Self {
            kind,
            reason: reason.into(),
            since,
        }
    }
    /// Whether it waits for the conversation to be closed ([`WaitKind::waits_for_close`]).
    pub fn waits_for_close(&self) -> bool {
        self.kind.waits_for_close()
    }
    /// Since when it has waited as `kind`: `since` when it already did, else `now`.
    pub fn since_as(waiting: Option<&Waiting>, kind: WaitKind, now: Timestamp) -> Timestamp {
        match waiting {
            Some(w) if w.kind == kind => w.since,
            _ => now,
        }
    }
}

/// A span as people write it, e.g. `24h`, `90m`, `45s`.
/// A lateness as people say it: `3 h`, `25 min`, `40 s` (rounded down).
pub fn format_late(d: Duration) -> String {
    let s = d.whole_seconds();
    if s >= 3600 {
        format!("{} h", s / 3600)
    } else if s >= 60 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// A length of time in the form `--delay` and `pause --for` take: `2h`, `90m`, `45s` (the
/// largest whole unit).
pub fn format_span(d: Duration) -> String {
    let s = d.whole_seconds();
    if s >= 3600 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s >= 60 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
