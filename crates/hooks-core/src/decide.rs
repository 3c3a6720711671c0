//! The two decisions of a follow-up's life, as pure functions with the time passed in.
//!
//! [`decide_enqueue`] runs when a conversation finishes; [`decide_fire`] runs when a claimed
//! entry is due, on fresh facts. Both are total: every input maps to exactly one decision.

use std::fmt;

use time::Duration;

use crate::cost::{self, BudgetView, CostView, WhenReached};
use crate::live::{RunLease, WaitKind, Waiting};
use crate::model::{Hook, HookRules, Origin, Pause, PendingEntry, Repeat, SessionFacts, Status};
use crate::stamp::{self, Timestamp};

/// The knobs of the fire decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A transcript changed more recently than this means the conversation is still active.
    pub quiet_period: Duration,
    /// How far a not-ready entry is pushed back.
    pub retry_delay: Duration,
    /// How many times an entry may be pushed back before it is given up.
    pub max_retries: u32,
    /// How long an entry waits for a conversation someone has open to be closed.
    pub open_wait: Duration,
    /// Deliver a follow-up into a conversation open in the TUI, where the running CLI
    /// offers a way in (`--deliver auto`); `false` waits for the close (`closed`).
    pub deliver_open: bool,
    /// How long a usage limit's continuation waits, once due, for the agent's own
    /// continue in a conversation left open in its TUI (Claude Code's comes 30–90 s after
    /// the reset) before it is delivered there itself.
    pub own_continue_wait: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            quiet_period: Duration::seconds(5),
            retry_delay: Duration::seconds(60),
            max_retries: 10,
            open_wait: Duration::hours(24),
            deliver_open: true,
            own_continue_wait: Duration::minutes(10),
        }
    }
}

/// Why a hook was not queued for a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The hook is switched off.
    Disabled,
    /// The hook followed this conversation up already.
    AlreadyRan {
        /// When it did.
        at: Timestamp,
    },
    /// A conversation a cron job started, and the hook skips those.
    CronSession,
    /// A subagent's conversation, and the hook skips those.
    Subagent,
    /// An entry of this hook and conversation is queued already.
    AlreadyPending,
    /// The hook was deleted.
    HookDeleted,
    /// A `conversation-failed` hook that does not follow up this kind of failure.
    NotItsError(crate::failure::FailureKind),
    /// The turn that said DONE answered a follow-up this app delivered: its DONE is the
    /// follow-up's own, not the person's task's.
    FollowUpsTurn,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Disabled => f.write_str("hook disabled"),
            SkipReason::AlreadyRan { at } => {
                write!(f, "already ran for this session at {}", stamp::format(*at))
            }
            SkipReason::CronSession => f.write_str("cron session"),
            SkipReason::Subagent => f.write_str("subagent conversation"),
            SkipReason::AlreadyPending => f.write_str("already pending"),
            SkipReason::HookDeleted => f.write_str("hook deleted"),
            SkipReason::NotItsError(k) => write!(f, "not one of its errors ({k})"),
            SkipReason::FollowUpsTurn => f.write_str("a follow-up's own turn"),
        }
    }
}

/// The outcome of the enqueue decision for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueDecision {
    /// Queue it, due then.
    Queue {
        /// When it is due.
        due_at: Timestamp,
    },
    /// Do not queue it, for this reason.
    Skip(SkipReason),
}

/// What the enqueue decision looks at.
#[derive(Debug, Clone, Copy)]
pub struct EnqueueInput<'a> {
    /// The hook's rules.
    pub hook: &'a HookRules,
    /// When this hook already fired for the session, if it did.
    pub stamp: Option<Timestamp>,
    /// Who started the conversation.
    pub origin: Origin,
    /// Whether the conversation is a subagent's.
    pub subagent: bool,
    /// Whether an entry of this hook and conversation is queued already.
    pub already_pending: bool,
    /// The failure, for a `conversation-failed` event.
    pub failure: Option<&'a crate::failure::Failure>,
    /// Whether the turn that ended answered a follow-up of this app
    /// ([`crate::queue::EnqueueRequest::follow_up_turn`]).
    pub follow_up_turn: bool,
    /// Now.
    pub now: Timestamp,
}

/// Queue or skip, in the order: disabled, not its error, a follow-up's own turn, loop
/// guard, cron, subagent, already pending. The loop guard counts per failure for a failed
/// conversation: each failure is followed up once (the entry pending for it dedupes
/// repeats), so a limit hit again days later is followed up again. It counts per task for
/// a hook that follows up each task ([`Repeat::EachTask`]): its stamp stops nothing here,
/// and gives way when the new entry fires ([`stamp_gives_way`]).
pub fn decide_enqueue(i: EnqueueInput<'_>) -> EnqueueDecision {
    let skip = if !i.hook.enabled {
        Some(SkipReason::Disabled)
    } else if let Some(f) = i.failure.filter(|f| !i.hook.errors.contains(f.kind)) {
        Some(SkipReason::NotItsError(f.kind))
    } else if i.follow_up_turn && i.failure.is_none() {
        Some(SkipReason::FollowUpsTurn)
    } else if let Some(at) = i.stamp.filter(|s| match i.failure {
        // A failure known by its time is the one already followed up when a follow-up ran
        // after it.
        Some(f) => f.at.is_some_and(|failed| failed <= *s),
        None => i.hook.repeat == Repeat::Once,
    }) {
        Some(SkipReason::AlreadyRan { at })
    } else if i.hook.skip_cron && i.origin == Origin::Cron {
        Some(SkipReason::CronSession)
    } else if i.hook.skip_subagents && i.subagent {
        Some(SkipReason::Subagent)
    } else if i.already_pending {
        Some(SkipReason::AlreadyPending)
    } else {
        None
    };
    match (skip, i.failure) {
        (Some(r), _) => EnqueueDecision::Skip(r),
        // A failure is followed up when its limit resets, or after the first backoff.
        (None, Some(f)) => EnqueueDecision::Queue {
            due_at: ceil_to_second(crate::failure::due_at(f, i.hook.delay.seconds(), 1, i.now)),
        },
        // With a delay, round up: the store keeps whole seconds, and rounding down would
        // make an entry due before its delay has passed. Without one, due now.
        (None, None) if i.hook.delay.seconds() == 0 => EnqueueDecision::Queue { due_at: i.now },
        (None, None) => EnqueueDecision::Queue {
            due_at: ceil_to_second(i.now + i.hook.delay.duration()),
        },
    }
}

/// Whether the stamp `hook` left on the entry's session at `stamped` gives way to `entry`, so
/// that it fires and stamps anew: an entry queued after the stamp for a new failure, or for
/// a new task of a hook that follows up each one. Any other entry queued after it (`hooks
/// run`) is told the hook ran already.
pub fn stamp_gives_way(hook: &Hook, entry: &PendingEntry, stamped: Timestamp) -> bool {
    entry.queued_at.is_some_and(|q| q > stamped)
        && (entry.error.is_some() || hook.repeat == Repeat::EachTask)
}

/// Rounds up to a whole second: the store keeps seconds, and a follow-up must never be due
/// before its delay has passed.
pub fn ceil_to_second(t: Timestamp) -> Timestamp {
    if t.nanosecond() == 0 {
        t
    } else {
        t.replace_nanosecond(0).unwrap_or(t) + Duration::seconds(1)
    }
}

/// How the words of a wait for an open conversation's turn to end start.
pub const OPEN_BUSY_WAIT: &str = "waits for the turn to end";
/// How soon an entry waiting for an open conversation's turn to end looks again.
pub const OPEN_BUSY_LOOK: Duration = Duration::seconds(1);
/// How the words of an entry whose delivery never reached the open conversation's inbox
/// start: it is not delivered again, and is resumed after the close.
pub const NOT_TAKEN: &str = "not taken by the open conversation";

/// How the reason of a limit's continuation waiting on the agent's own continue starts.
pub const OWN_CONTINUE_WAIT: &str = "left open at a usage limit";
/// Why a failure's follow-up is skipped when the conversation went on without it.
pub const WENT_ON: &str = "the conversation went on after the failure";

/// How the words of an entry waiting for its transcript to go quiet start.
pub const QUIET_WAIT: &str = "conversation still being written to";

/// Why a due entry was put back in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// The transcript changed within the quiet period.
    Active,
    /// The conversation's transcript is not there (yet).
    TranscriptNotFound,
    /// A cap or a budget needs an estimate, and no model is known for the conversation.
    NoModel,
}

impl NotReady {
    fn give_up(self, retries: u32) -> Status {
        match self {
            NotReady::Active => {
                Status::skipped(format!("conversation still active after {retries} retries"))
            }
            NotReady::TranscriptNotFound => {
                Status::skipped(format!("transcript not found after {retries} retries"))
            }
            NotReady::NoModel => Status::skipped(format!(
                "no model known for the conversation after {retries} retries, so no estimate \
                 (name one in the prompt file or Claude Code's settings)"
            )),
        }
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotReady::Active => "conversation still active",
            NotReady::TranscriptNotFound => "transcript not found yet",
            NotReady::NoModel => "no model known for the conversation yet, so no estimate",
        })
    }
}

/// The outcome of the fire decision for one claimed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FireDecision {
    /// Remove the entry and record nothing (the hook is gone or switched off, or the run it
    /// asks for is already on the hook).
    Drop,
    /// Remove the entry and record this status on the hook, without running.
    Finish(Status),
    /// Put the entry back, due later, using up one retry.
    Retry {
        /// When to look again.
        due_at: Timestamp,
        /// The retries counted so far.
        retries: u32,
        /// What is not ready.
        why: NotReady,
    },
    /// Put the entry back to wait, without using up a retry: the conversation is open in
    /// Claude Code, or another follow-up is running on it.
    /// Put the entry back, due then, saying why it waits.
    Wait {
        /// When it is looked at again.
        due_at: Timestamp,
        /// Why it waits.
        waiting: Waiting,
    },
    /// The session's run lease was left behind by a runner that is gone: record that run
    /// as interrupted and clear the lease, then decide again.
    Recover(Box<RunLease>),
    /// Stamp the session and run the follow-up.
    Fire,
}

/// What the fire decision looks at, read fresh after the claim.
#[derive(Debug, Clone, Copy)]
pub struct FireInput<'a> {
    /// `None` when the hook was deleted.
    pub hook: Option<&'a Hook>,
    /// The entry claimed.
    pub entry: &'a PendingEntry,
    /// What is known of its conversation now.
    pub facts: &'a SessionFacts,
    /// This process is running a follow-up on the session.
    pub run_in_progress: bool,
    /// Why the prompt could not be loaded, if it could not.
    pub prompt_error: Option<&'a crate::prompt::PromptError>,
    /// What the follow-up would cost, as far as it can be told; looked at only when the
    /// hook has a cost cap (`None` then counts as no model known).
    pub cost: Option<&'a CostView>,
    /// The store's daily budget and today's spend, when a budget is set.
    pub budget: Option<&'a BudgetView>,
    /// Follow-ups are paused, when they are (whether it still holds is judged here).
    pub paused: Option<&'a Pause>,
    /// The follow-up could be delivered into the conversation, were it open with a way
    /// in: delivery is on, the runner can, the prompt asks for no run options, and no
    /// earlier delivery of this entry went untaken.
    pub can_deliver: bool,
    /// Now.
    pub now: Timestamp,
    /// The daemon's rules.
    pub policy: Policy,
}

/// What says whether a follow-up may go into the open conversation rather than wait for
/// its close: the one rule the fire decision and the heads-up a person is shown share.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryCheck<'a> {
    /// The daemon's rules (`deliver_open`).
    pub policy: Policy,
    /// The hook.
    pub hook: &'a Hook,
    /// The runner can deliver into an open conversation.
    pub runner_delivers: bool,
    /// The conversation's transcript was found.
    pub transcript_found: bool,
    /// The run options of the hook's prompt, once loaded; `None` when it could not be.
    pub options: Option<&'a crate::prompt::RunOptions>,
    /// How often a delivery of this entry already went untaken.
    pub not_taken: u32,
}

/// Into the open conversation only what its hook allows and it can take as it is: delivery
/// on (the daemon's and the hook's), a runner that can, a transcript, no run options (a
/// model, a permission mode, tools, turns, a system prompt) that only a resumed run could
/// honour, no cost cap (the open TUI has none: a capped follow-up is resumed after the
/// close, with `--max-budget-usd`), and not again once a delivery of this entry went
/// untaken. (A usage limit's continuation may go in too, but only after the agent's own
/// continue had its chance: see [`decide_fire`].)
pub fn may_deliver(c: &DeliveryCheck<'_>) -> bool {
    c.policy.deliver_open
        && c.hook.deliver == crate::model::Delivery::Auto
        && c.runner_delivers
        && c.transcript_found
        && c.options.is_some_and(|o| {
            *o == crate::prompt::RunOptions {
                max_budget: o.max_budget,
                ..Default::default()
            }
        })
        && c.hook.max_cost.usd().is_none()
        && c.not_taken == 0
}

/// Where a follow-up comes once it is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// No one has the conversation open: it is resumed when due.
    AtDue,
    /// Into the open conversation, when due and the conversation idle.
    IntoOpen,
    /// The conversation is open and the follow-up cannot go into it (no way in, or
    /// [`may_deliver`] says no): it waits for the close, then is resumed.
    AfterClose,
}

/// Where a follow-up comes: into `open` when it has a way in and the follow-up
/// [`may_deliver`]; after its close when it is open otherwise; when due when nothing has it open.
pub fn arrival(may_deliver: bool, open: Option<&crate::live::OpenSession>) -> Arrival {
    match open {
        None => Arrival::AtDue,
        Some(o) if may_deliver && o.inbox.is_some() => Arrival::IntoOpen,
        Some(_) => Arrival::AfterClose,
    }
}

/// Tokens shown in thousands, rounded up, so a figure over a cap never prints as equal to it.
fn in_k(tokens: u64) -> u64 {
    tokens.div_ceil(1000)
}

/// The status of a run whose runner went away before it could record the result.
pub fn interrupted() -> Status {
    Status::error("interrupted: the process running it stopped (killed or crashed)")
}

/// Recover, drop, wait, finish, retry or fire, in the spec's order (the cost cap after the
/// context cap and the prompt, then the daily budget). A run that may have
/// cost money is accounted for first; then nothing starts while someone holds the session
/// (a follow-up running, a person with the conversation open); then the hook's own rules.
pub fn decide_fire(i: FireInput<'_>) -> FireDecision {
    let now = i.now;
    if let Some(l) = &i.facts.lease
        && !l.is_live(now)
    {
        return FireDecision::Recover(Box::new(l.lease.clone()));
    }
    let Some(hook) = i.hook.filter(|h| h.enabled) else {
        return FireDecision::Drop;
    };
    held(&i, hook, now)
        .or_else(|| where_open(&i, now))
        .or_else(|| not_ready(&i, hook, now))
        .or_else(|| spend(&i, hook, now))
        .or_else(|| last_checks(&i, now))
        .unwrap_or(FireDecision::Fire)
}

/// A follow-up running on the session, a stamp already set, or found too late.
fn held(i: &FireInput<'_>, hook: &Hook, now: Timestamp) -> Option<FireDecision> {
    let running = match &i.facts.lease {
        Some(l) => Some(format!(
            "a follow-up is running on this session ({}, run by {})",
            l.lease.hook_id, l.lease.owner
        )),
        None if i.run_in_progress => Some("a follow-up is running on this session".to_owned()),
        None => None,
    };
    if let Some(reason) = running {
        return Some(FireDecision::Wait {
            due_at: now + i.policy.retry_delay,
            waiting: Waiting::new(WaitKind::Running, reason, now),
        });
    }
    if let Some(at) = i.facts.state.stamps.get(&hook.id) {
        // The run that set the stamp is on the hook already (a runner that lost its claim
        // records its own result): a second record would only hide it.
        // An entry queued after the stamp (`hooks run`) is a new request: it is told.
        let session = i.entry.session_id.as_str();
        let queued_after = i.entry.queued_at.is_some_and(|q| q > *at);
        // A failure after the last follow-up is a new one, as is a new task of a hook that
        // follows up each: it is followed up in turn.
        if !stamp_gives_way(hook, i.entry, *at) {
            if !queued_after && hook.history.entries().iter().any(|e| e.session == session) {
                return Some(FireDecision::Drop);
            }
            return Some(FireDecision::Finish(Status::skipped(
                SkipReason::AlreadyRan { at: *at }.to_string(),
            )));
        }
    }
    // Found long after it was due (the machine slept, no daemon ran): a stale follow-up is
    // skipped, not fired. Waits of its own (an open conversation, a pause) do not count.
    if let (Some(limit), Some(due)) = (hook.max_lateness.limit(), i.entry.due_at.time())
        && i.entry.waiting.is_none()
        && i.entry.retries == 0
        && now - due > limit
    {
        return Some(FireDecision::Finish(Status::skipped(format!(
            "{} late (maxLatenessSeconds {})",
            crate::live::format_late(now - due),
            hook.max_lateness.seconds()
        ))));
    }
    None
}

/// Where the conversation is open or still being written to: when it waits, and for what.
fn where_open(i: &FireInput<'_>, now: Timestamp) -> Option<FireDecision> {
    // Open with a way in: idle, it is delivered there (below, after the other rules);
    // busy, it is looked at again in a moment, so it arrives as soon as the person's turn
    // ends, never in the middle of it.
    let deliverable = i
        .facts
        .open
        .as_ref()
        .filter(|o| arrival(i.can_deliver, Some(o)) == Arrival::IntoOpen);
    // A usage limit's continuation into a conversation left open: the agent may carry it
    // on itself after the reset (Claude Code's own continue, 30–90 s after it, on a
    // subscription), so it gets `own_continue_wait` first; after that the continuation
    // goes in only if the conversation still ends in the failure (below, on fresh facts).
    // A second "carry on" on top of the agent's own would be a second turn.
    if deliverable.is_some() && i.entry.error == Some(crate::failure::FailureKind::RateLimit) {
        let since = Waiting::since_as(i.entry.waiting.as_ref(), WaitKind::OwnContinue, now);
        let until = since + i.policy.own_continue_wait;
        if now < until {
            return Some(FireDecision::Wait {
                due_at: until,
                waiting: Waiting::new(
                    WaitKind::OwnContinue,
                    format!(
                        "{OWN_CONTINUE_WAIT}: Claude Code continues it itself after the limit's reset where it can; \
                         hooks-app delivers the continuation at {} only if nothing carried the conversation on",
                        crate::stamp::format(until)
                    ),
                    since,
                ),
            });
        }
    }
    if let Some(open) = deliverable
        && !open.is_idle()
    {
        return Some(FireDecision::Wait {
            due_at: now + OPEN_BUSY_LOOK,
            waiting: Waiting::new(
                WaitKind::Turn,
                format!(
                    "{OPEN_BUSY_WAIT}: conversation open in {}, {open}; delivered into it once idle",
                    open.agent
                ),
                Waiting::since_as(i.entry.waiting.as_ref(), WaitKind::Turn, now),
            ),
        });
    }
    if let Some(open) = i.facts.open.as_ref().filter(|_| deliverable.is_none()) {
        // The wait counts from when it was first found open: an entry found late (the
        // daemon was down) still gets the whole wait.
        let since = match &i.entry.waiting {
            Some(w) if w.waits_for_close() => w.since,
            _ => now,
        };
        let limit = i.policy.open_wait;
        if now - since >= limit {
            return Some(FireDecision::Finish(Status::skipped(format!(
                "conversation still open after {}",
                crate::live::format_span(limit)
            ))));
        }
        // An open TUI at a limit's reset continues the conversation itself (a
        // subscription's `autoContinueAtUsageLimit`): hooks-app does nothing meanwhile,
        // and after the close follows it up only if the turn is still the failed one.
        let reason = if i.entry.error == Some(crate::failure::FailureKind::RateLimit) {
            format!(
                "conversation open in {}, {open}: Claude Code continues it itself after \
                 the limit's reset where it can; hooks-app continues it once after the close \
                 only if nothing did",
                open.agent
            )
        } else {
            format!("conversation open in {}, {open}", open.agent)
        };
        return Some(FireDecision::Wait {
            due_at: since + limit,
            waiting: Waiting::new(WaitKind::Open, reason, since),
        });
    }
    // Still being written to: look again the moment it will have been quiet long enough
    // (Claude Code writes the transcript just after its SessionEnd hook), not at the next
    // retry, and use up no retry for it; give up only after the open-wait limit.
    if let Some(changed) = i
        .facts
        .transcript
        .as_ref()
        .and_then(|t| t.last_change)
        .filter(|changed| now - *changed < i.policy.quiet_period)
    {
        let since = Waiting::since_as(i.entry.waiting.as_ref(), WaitKind::Quiet, now);
        if now - since >= i.policy.open_wait {
            return Some(FireDecision::Finish(Status::skipped(format!(
                "conversation still being written to after {}",
                crate::live::format_span(i.policy.open_wait)
            ))));
        }
        // A second more: a store may keep due times to the second.
        let due_at = changed + i.policy.quiet_period + time::Duration::seconds(1);
        return Some(FireDecision::Wait {
            due_at,
            waiting: Waiting::new(
                WaitKind::Quiet,
                format!(
                    "{QUIET_WAIT}: waits until it has been quiet for {}",
                    crate::live::format_span(i.policy.quiet_period)
                ),
                since,
            ),
        });
    }
    None
}

/// The conversation's own facts and the hook's rules: not ready yet, gone on, or not for this hook.
fn not_ready(i: &FireInput<'_>, hook: &Hook, now: Timestamp) -> Option<FireDecision> {
    let not_ready = match &i.facts.transcript {
        None => Some(NotReady::TranscriptNotFound),
        Some(_) => None,
    };
    if let Some(why) = not_ready {
        let retries = i.entry.retries;
        if retries >= i.policy.max_retries {
            return Some(FireDecision::Finish(why.give_up(retries)));
        }
        return Some(FireDecision::Retry {
            due_at: now + i.policy.retry_delay,
            retries: retries + 1,
            why,
        });
    }
    // A failure is followed up only while it is the conversation's last word: a turn
    // answered since (the person's, Claude Code's own continue, another follow-up) means
    // it went on without this one.
    if hook.event == crate::model::Event::ConversationFailed
        && let (Some(t), Some(failed)) = (&i.facts.transcript, i.entry.queued_at)
        && t.went_on_after(failed)
    {
        return Some(FireDecision::Finish(Status::skipped(WENT_ON)));
    }
    // A follow-up runs with the user's credentials, and an agent started in a folder loads
    // that folder's own settings and hooks: never in a folder another user owns.
    if let (Some(owner), Some(cwd)) = (&i.facts.folder_owner, i.facts.cwd()) {
        return Some(FireDecision::Finish(Status::skipped(format!(
            "the conversation's folder {cwd} belongs to user {owner}, not to you: a follow-up never runs in another user's folder"
        ))));
    }
    if hook.skip_subagents && i.facts.is_subagent() {
        return Some(FireDecision::Finish(Status::skipped(
            SkipReason::Subagent.to_string(),
        )));
    }
    if hook.skip_cron && i.facts.origin() == Origin::Cron {
        return Some(FireDecision::Finish(Status::skipped(
            SkipReason::CronSession.to_string(),
        )));
    }
    if let (Some(cap), Some(tokens)) = (
        hook.max_context.tokens(),
        i.facts.transcript.as_ref().and_then(|t| t.context_tokens),
    ) && tokens > cap
    {
        return Some(FireDecision::Finish(Status::skipped(format!(
            "context {}k over the {}k cap",
            in_k(tokens),
            hook.max_context.k()
        ))));
    }
    if let Some(e) = i.prompt_error {
        return Some(FireDecision::Finish(if e.is_skip() {
            Status::skipped(e.to_string())
        } else {
            Status::error(e.to_string())
        }));
    }
    None
}

/// What it would cost, against the hook's cap and the day's budget.
fn spend(i: &FireInput<'_>, hook: &Hook, now: Timestamp) -> Option<FireDecision> {
    let cost = i.cost.unwrap_or(&CostView::NoModel);
    // A cap or a budget needs an estimate. With no model known yet (a conversation whose
    // first turn failed, no model in the prompt file or the settings), it is tried again
    // later rather than skipped for good: a reply or a setting may name one.
    if matches!(cost, CostView::NoModel) && (hook.max_cost.usd().is_some() || i.budget.is_some()) {
        let retries = i.entry.retries;
        if retries >= i.policy.max_retries {
            return Some(FireDecision::Finish(NotReady::NoModel.give_up(retries)));
        }
        return Some(FireDecision::Retry {
            due_at: now + i.policy.retry_delay,
            retries: retries + 1,
            why: NotReady::NoModel,
        });
    }
    if let Some(why) = cost::over_cap(hook.max_cost, cost) {
        return Some(FireDecision::Finish(Status::skipped(why)));
    }
    if let Some(b) = i.budget
        && let Some(why) = cost::over_budget(b, cost)
    {
        // Waiting a day gives a follow-up without a price no price.
        if b.when_reached == WhenReached::Skip || !matches!(cost, CostView::Estimated(_)) {
            return Some(FireDecision::Finish(Status::skipped(why)));
        }
        let since = Waiting::since_as(i.entry.waiting.as_ref(), WaitKind::Budget, now);
        return Some(FireDecision::Wait {
            due_at: b.today.end,
            waiting: Waiting::new(
                WaitKind::Budget,
                format!(
                    "{why}; waits for the next day ({} {})",
                    stamp::format(b.today.end),
                    b.zone
                ),
                since,
            ),
        });
    }
    None
}

/// A folder to run in, and no pause.
fn last_checks(i: &FireInput<'_>, now: Timestamp) -> Option<FireDecision> {
    if i.facts.cwd().is_none() {
        return Some(FireDecision::Finish(Status::error(
            "the session's working directory is unknown",
        )));
    }
    // Paused: it would run now, so it waits, using up no retry, until the pause ends (or
    // an hour, to look again; unpausing wakes it at once).
    if let Some(p) = i.paused.filter(|p| p.holds(now)) {
        let since = Waiting::since_as(i.entry.waiting.as_ref(), WaitKind::Paused, now);
        return Some(FireDecision::Wait {
            due_at: p.until.unwrap_or(now + Duration::hours(1)),
            waiting: Waiting::new(WaitKind::Paused, p.reason(), since),
        });
    }
    None
}
