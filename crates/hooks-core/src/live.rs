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

/// Why an entry is waiting, kept on the entry so `pending` and `session` can show it.
/// Waiting never uses up retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// Shown to people: `conversation open in claude, pid 4242, interactive, idle`.
    pub reason: String,
    /// When the wait began; the open-wait limit counts from here.
    pub since: Timestamp,
    /// It waits for a Claude Code process to close the conversation (else for another
    /// run on the session to end): once the conversation is closed, the entry is woken.
    pub open: bool,
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
