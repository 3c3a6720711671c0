//! The queue's records: when an entry is due, who holds it, and the entry itself.

use std::fmt;

use crate::failure::FailureKind;
use crate::id::{HookId, SessionId};
use crate::live::Waiting;
use crate::stamp::{self, Timestamp};

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
