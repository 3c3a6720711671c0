//! The queue's rules, as pure operations on the pending list, so that every store adapter
//! (and the in-memory fake) enforces exactly the same semantics: one entry per
//! (hook, session), claims with an owner and an expiry, at most one claimed entry per
//! session, and writes fenced by the claim's owner.

use std::collections::{BTreeMap, HashSet};

use time::Duration;

use crate::decide::{self, EnqueueDecision, EnqueueInput};
use crate::live::*;
use crate::model::*;
use crate::stamp::Timestamp;
use crate::store::{EnqueueResult, HookRecord, Requeue, StoreError};

/// An event to queue hooks for, with what is known of its session.
///
/// It grows as the enqueue decision looks at more, so it is `#[non_exhaustive]`: code
/// outside this crate (a store's tests) makes one with [`EnqueueRequest::new`] and sets
/// what it needs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EnqueueRequest {
    /// The conversation.
    pub session: SessionId,
    /// What happened in it.
    pub event: Event,
    /// The hooks that followed it up already, and when.
    pub stamps: BTreeMap<HookId, Timestamp>,
    /// Who started it.
    pub origin: Origin,
    /// Whether it is a subagent's.
    pub subagent: bool,
    /// The agent whose conversation it is (`None`: [`crate::DEFAULT_AGENT`]'s): only the
    /// hooks whose [`crate::model::AgentScope`] covers it are decided on.
    pub agent: Option<String>,
    /// What failed, for a `conversation-failed` event.
    pub failure: Option<crate::failure::Failure>,
    /// Whether the turn that ended answered a follow-up this app delivered into the open
    /// conversation, and not a failed turn's continuation: its DONE is its own, and queues
    /// nothing ([`crate::decide::SkipReason::FollowUpsTurn`]).
    pub follow_up_turn: bool,
    /// Now.
    pub now: Timestamp,
}

impl EnqueueRequest {
    /// `event` in `session` at `now`: an interactive conversation, no stamps, not a
    /// subagent's, no failure, no agent named ([`crate::DEFAULT_AGENT`]'s), a turn the
    /// person asked for.
    pub fn new(session: SessionId, event: Event, now: Timestamp) -> Self {
        Self {
            session,
            event,
            stamps: BTreeMap::new(),
            origin: Origin::Interactive,
            subagent: false,
            agent: None,
            failure: None,
            follow_up_turn: false,
            now,
        }
    }
}

/// The enqueue decision for every hook matching the event, given the hooks and the queue as
/// they are, and the entries to add for the `Queue` decisions. Stores run it under their
/// lock, so deciding and queuing are one atomic step.
pub fn plan_event(
    hooks: &[HookRules],
    pending: &[PendingEntry],
    r: &EnqueueRequest,
) -> (Vec<(HookId, EnqueueDecision)>, Vec<PendingEntry>) {
    let mut decisions = Vec::new();
    let mut entries = Vec::new();
    for hook in hooks
        .iter()
        .filter(|h| h.event == r.event && h.agent.covers(r.agent.as_deref()))
    {
        let already_pending = pending
            .iter()
            .any(|p| p.hook_id == hook.id && p.session_id == r.session);
        let d = decide::decide_enqueue(EnqueueInput {
            hook,
            stamp: r.stamps.get(&hook.id).copied(),
            origin: r.origin,
            subagent: r.subagent,
            already_pending,
            failure: r.failure.as_ref(),
            follow_up_turn: r.follow_up_turn,
            now: r.now,
        });
        if let EnqueueDecision::Queue { due_at } = d {
            entries.push(PendingEntry {
                hook_id: hook.id.clone(),
                session_id: r.session.clone(),
                due_at: DueAt::At(due_at),
                // A failure is queued as of when it happened, where that is known.
                queued_at: Some(r.failure.as_ref().and_then(|f| f.at).unwrap_or(r.now)),
                retries: 0,
                attempts: 0,
                not_taken: 0,
                claim: None,
                waiting: r.failure.as_ref().map(|f| {
                    Waiting::new(
                        WaitKind::Limit,
                        crate::failure::wait_reason(f.kind, due_at, 1),
                        r.now,
                    )
                }),
                error: r.failure.as_ref().map(|f| f.kind),
            });
        }
        decisions.push((hook.id.clone(), d));
    }
    (decisions, entries)
}

/// Adds entries whose hook exists and whose (hook, session) pair is not queued yet.
pub fn enqueue(
    pending: &mut Vec<PendingEntry>,
    hook_exists: impl Fn(&HookId) -> bool,
    entries: Vec<PendingEntry>,
) -> Vec<EnqueueResult> {
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        if !hook_exists(&e.hook_id) {
            out.push(EnqueueResult::HookDeleted);
        } else if pending
            .iter()
            .any(|p| p.hook_id == e.hook_id && p.session_id == e.session_id)
        {
            out.push(EnqueueResult::AlreadyPending);
        } else {
            pending.push(e);
            out.push(EnqueueResult::Queued);
        }
    }
    out
}

/// Marks up to `limit` claimable entries as `owner`'s until `now + ttl` and returns them,
/// earliest due first (an unparseable due time counts as earliest). A session that has a
/// live claim on any entry gets no second one.
pub fn claim_due(
    pending: &mut [PendingEntry],
    now: Timestamp,
    owner: &str,
    ttl: Duration,
    limit: usize,
) -> Vec<PendingEntry> {
    let mut held: HashSet<SessionId> = pending
        .iter()
        .filter(|p| p.is_claimed(now))
        .map(|p| p.session_id.clone())
        .collect();
    let mut order: Vec<usize> = (0..pending.len())
        .filter(|&i| pending[i].is_claimable(now))
        .collect();
    order.sort_by_key(|&i| pending[i].due_at.time());
    let mut claimed = Vec::new();
    for i in order {
        if claimed.len() >= limit {
            break;
        }
        let p = &mut pending[i];
        if !held.insert(p.session_id.clone()) {
            continue;
        }
        p.claim = Some(Claim {
            owner: owner.to_owned(),
            expires_at: now + ttl,
        });
        claimed.push(p.clone());
    }
    claimed
}

fn find_owned<'a>(
    pending: &'a mut [PendingEntry],
    key: &EntryKey,
    owner: &str,
) -> Result<(usize, &'a mut PendingEntry), StoreError> {
    let (i, p) = pending
        .iter_mut()
        .enumerate()
        .find(|(_, p)| p.hook_id == key.hook_id && p.session_id == key.session_id)
        .ok_or_else(|| StoreError::EntryNotFound(key.clone()))?;
    if p.claim.as_ref().is_some_and(|c| c.owner == owner) {
        Ok((i, p))
    } else {
        Err(StoreError::Fenced(key.clone()))
    }
}

/// Extends `owner`'s claims on `keys`; returns the keys it still holds.
pub fn renew(
    pending: &mut [PendingEntry],
    keys: &[EntryKey],
    owner: &str,
    expires_at: Timestamp,
) -> Vec<EntryKey> {
    let mut held = Vec::new();
    for k in keys {
        if let Ok((_, p)) = find_owned(pending, k, owner)
            && let Some(c) = p.claim.as_mut()
        {
            c.expires_at = expires_at;
            held.push(k.clone());
        }
    }
    held
}

/// Puts an owned entry back, unclaimed and due later, saying why it waits if it does.
pub fn requeue(
    pending: &mut [PendingEntry],
    key: &EntryKey,
    owner: &str,
    to: &Requeue,
) -> Result<(), StoreError> {
    let (_, p) = find_owned(pending, key, owner)?;
    p.claim = None;
    p.due_at = DueAt::At(to.due_at);
    p.retries = to.retries;
    p.attempts = to.attempts;
    p.not_taken = to.not_taken;
    p.waiting = to.waiting.clone();
    Ok(())
}

/// Makes `session`'s waiting entries due at `due_at` (or earlier, if they already were),
/// and clears why they waited; with `open_only`, only those waiting for the conversation
/// to close. A wait for a limit to reset ([`WaitKind::Limit`]) is left alone:
/// another run ending says nothing about the limit. Returns how many changed. An entry claimed at the moment is woken too: its
/// claimer's requeue decides again, and a wake it overwrites is caught by the daemon's
/// check of open conversations.
pub fn wake(
    pending: &mut [PendingEntry],
    session: &SessionId,
    due_at: Timestamp,
    open_only: bool,
) -> usize {
    let mut n = 0;
    for p in pending.iter_mut().filter(|p| {
        p.session_id == *session
            && p.waiting
                .as_ref()
                .is_some_and(|w| w.waits_for_close() || (!open_only && w.kind != WaitKind::Limit))
    }) {
        p.waiting = None;
        if p.due_at.time().is_none_or(|t| t > due_at) {
            p.due_at = DueAt::At(due_at);
        }
        n += 1;
    }
    n
}

/// Removes an owned entry.
pub fn take(
    pending: &mut Vec<PendingEntry>,
    key: &EntryKey,
    owner: &str,
) -> Result<PendingEntry, StoreError> {
    let (i, _) = find_owned(pending, key, owner)?;
    Ok(pending.remove(i))
}

/// Clears `owner`'s claims on `keys`; returns how many it cleared (0: nothing to write).
pub fn release(pending: &mut [PendingEntry], keys: &[EntryKey], owner: &str) -> usize {
    let mut n = 0;
    for k in keys {
        if let Ok((_, p)) = find_owned(pending, k, owner) {
            p.claim = None;
            n += 1;
        }
    }
    n
}

/// Takes the entries among `keys` that no live claim holds at `now` out of `pending`, in
/// queue order, and returns them.
pub fn drop_unclaimed(
    pending: &mut Vec<PendingEntry>,
    keys: &[EntryKey],
    now: Timestamp,
) -> Vec<PendingEntry> {
    let (gone, kept) = std::mem::take(pending)
        .into_iter()
        .partition(|p| !p.is_claimed(now) && keys.contains(&p.key()));
    *pending = kept;
    gone
}

/// Records an outcome on a hook: its last status, and a history line for a run.
pub fn record(hook: &mut Hook, session: &SessionId, record: &HookRecord) {
    hook.last_status = Some(record.status.clone());
    if let Some(at) = record.fired_at {
        hook.history.push(at, session.as_str());
    }
}

/// The earliest time any entry becomes claimable after `now`, for a scheduler's sleep:
/// a due time, or the expiry of a claim on a due entry.
pub fn next_wake(pending: &[PendingEntry], now: Timestamp) -> Option<Timestamp> {
    pending
        .iter()
        .map(|p| {
            let due = p.due_at.time().unwrap_or(now);
            match &p.claim {
                Some(c) if c.expires_at > now => due.max(c.expires_at),
                _ => due,
            }
        })
        .min()
}
