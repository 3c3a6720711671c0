//! Conversation events: what they queue, what they wake, and where a follow-up will come.

use std::collections::BTreeMap;

use crate::decide::{self, EnqueueDecision};
use crate::failure::FailureKind;
use crate::live::*;
use crate::model::*;
use crate::ports::*;

use super::types::*;

impl Service {
    /// A conversation event: remember what it says about the session, then queue every
    /// matching hook the enqueue decision allows, in one store write.
    pub async fn notify(&self, ev: &NotifyEvent) -> Result<Vec<NotifyReport>, ServiceError> {
        ev.update.validate()?;
        let state = if ev.update == SessionUpdate::default() {
            self.ports.meta.state(&ev.session).await?
        } else {
            self.ports.meta.remember(&ev.session, &ev.update).await?
        };
        let now = self.now();
        // Only a failure event carries a failure, and it always says what failed: one that
        // does not is an `unknown` one.
        let failure = (ev.event == Event::ConversationFailed).then(|| {
            let unknown = crate::failure::FailedTurn {
                kind: FailureKind::Unknown,
                texts: Vec::new(),
                resets_at: None,
                at: None,
            };
            ev.failure
                .as_ref()
                .unwrap_or(&unknown)
                .resolve(now, |zone, at| self.ports.clock.offset(zone, at).ok())
        });
        // A turn that answered a delivered follow-up said DONE for it, not for the task;
        // only a session followed up before can have had one, and only its transcript says.
        let follow_up_turn = match ev.event {
            Event::ConversationDone if !state.stamps.is_empty() => {
                // A transcript that cannot be read says nothing against the DONE.
                match self
                    .ports
                    .meta
                    .facts(&ev.session)
                    .await
                    .ok()
                    .and_then(|f| f.transcript?.follow_up_of)
                {
                    Some(id) => !self.done_is_the_task_s(&id).await?,
                    None => false,
                }
            }
            _ => false,
        };
        let request = EnqueueRequest {
            follow_up_turn,
            session: ev.session.clone(),
            event: ev.event,
            failure,
            stamps: state.stamps.clone(),
            origin: state.origin.unwrap_or_default(),
            subagent: ev.subagent
                || state
                    .transcript_path
                    .as_deref()
                    .is_some_and(is_subagent_path),
            agent: state.agent.clone(),
            now,
        };
        let decisions = self.ports.store.enqueue_event(&request).await?;
        Ok(decisions
            .into_iter()
            .map(|(hook_id, d)| NotifyReport {
                hook_id,
                outcome: match d {
                    EnqueueDecision::Queue { due_at } => NotifyOutcome::Queued { due_at },
                    EnqueueDecision::Skip(r) => NotifyOutcome::Skipped(r),
                },
            })
            .collect())
    }

    /// Whether an event of `session` that names follow-up `follow_up` (from
    /// [`crate::FOLLOW_UP_ENV`], or the HTTP guard header) is that follow-up's own, and
    /// changes nothing: only while it runs on the session ([`Service::runs_follow_up`]),
    /// and but for the DONE (`done`: a turn's end that said it) of a failed turn's
    /// continuation, which is the task's ([`Service::done_is_the_task_s`]). The one rule
    /// every way in (the command hook, the HTTP events route) asks.
    pub async fn ignores_follow_ups_event(
        &self,
        session: &SessionId,
        follow_up: Option<&str>,
        done: bool,
    ) -> Result<bool, ServiceError> {
        let Some(id) = follow_up else {
            return Ok(false);
        };
        if !self.runs_follow_up(session, id).await? {
            return Ok(false);
        }
        Ok(!done || !self.done_is_the_task_s(id).await?)
    }

    /// Whether a follow-up of hook `follow_up` (the id an event carries in
    /// [`crate::FOLLOW_UP_ENV`]) is running on `session` now: its run lease held, by this
    /// hook, and live. Only then is the event a follow-up's own. The variable alone proves
    /// nothing: a repository's settings `env` exports any variable to every hook, and would
    /// otherwise silence every follow-up of the conversations started there.
    pub async fn runs_follow_up(
        &self,
        session: &SessionId,
        follow_up: &str,
    ) -> Result<bool, ServiceError> {
        let Ok(id) = HookId::parse(follow_up.trim()) else {
            return Ok(false);
        };
        let now = self.now();
        Ok(self
            .ports
            .meta
            .facts(session)
            .await?
            .lease
            .is_some_and(|l| l.lease.hook_id == id && l.is_live(now)))
    }

    /// Whether a turn that said DONE in a follow-up of hook `follow_up` (the id the runner
    /// named in [`crate::FOLLOW_UP_ENV`]) finished the conversation's own task. Only the
    /// continuation of a failed turn (a hook on `conversation-failed`, as
    /// continue-after-limit) carries the person's task on: its DONE is the task's, and
    /// queues what a DONE queues. Any other follow-up's DONE is its own, and queues nothing;
    /// so does one of a hook that is gone or an id that is none.
    pub async fn done_is_the_task_s(&self, follow_up: &str) -> Result<bool, ServiceError> {
        let Ok(id) = HookId::parse(follow_up.trim()) else {
            return Ok(false);
        };
        Ok(self
            .ports
            .store
            .get_hook(&id)
            .await?
            .is_some_and(|h| h.event == Event::ConversationFailed))
    }

    /// Where the follow-ups of `hooks` just queued for `session` will come, were they due
    /// now ([`decide::arrival`]), in the order of `hooks`: what a person is told when they
    /// are queued. A new entry has had no delivery go untaken and continues no failure.
    /// Only when the conversation is open are its facts, the hooks and their prompts read
    /// (closed, each comes when due).
    pub async fn arrivals(
        &self,
        session: &SessionId,
        hooks: &[HookId],
    ) -> Result<Vec<decide::Arrival>, ServiceError> {
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        // Who has it open is looked at first: it needs no store read.
        if self.ports.meta.open(session).await?.is_none() {
            return Ok(vec![decide::Arrival::AtDue; hooks.len()]);
        }
        let facts = self.ports.meta.facts(session).await?;
        let Some(open) = facts.open.as_ref() else {
            return Ok(vec![decide::Arrival::AtDue; hooks.len()]);
        };
        let mut out = Vec::with_capacity(hooks.len());
        for id in hooks {
            let may = match self.ports.store.get_hook(id).await? {
                Some(hook) => {
                    let prompt = self
                        .ports
                        .prompts
                        .load(&hook.prompt_file, facts.cwd())
                        .await;
                    decide::may_deliver(&decide::DeliveryCheck {
                        policy: self.config.policy,
                        hook: &hook,
                        runner_delivers: self.ports.runner.delivers_into_open(),
                        transcript_found: facts.transcript.is_some(),
                        options: prompt.as_ref().ok().map(|p| &p.options),
                        not_taken: 0,
                    })
                }
                None => false,
            };
            out.push(decide::arrival(may, Some(open)));
        }
        Ok(out)
    }

    /// [`Self::notify`] for a caller that names the folder itself (the API's own event, the
    /// `notify` command): a folder other than the one the conversation is known by is
    /// refused, naming `cwd`, and nothing changes. A conversation's folder never moves: a
    /// follow-up runs where the conversation was started, whatever an event says later.
    pub async fn notify_checked(
        &self,
        ev: &NotifyEvent,
    ) -> Result<Vec<NotifyReport>, ServiceError> {
        if let Some(cwd) = &ev.update.cwd {
            let facts = self.ports.meta.facts(&ev.session).await?;
            if let Some(known) = facts.cwd()
                && known != cwd
            {
                return Err(ServiceError::Invalid(ValidationError::new(
                    "cwd",
                    format!(
                        "a conversation's folder does not change: {} started in {known}",
                        ev.session
                    ),
                )));
            }
        }
        self.notify(ev).await
    }

    /// The agent of each of `sessions` the app has remembered: see [`agents_of`].
    pub async fn agents_of(
        &self,
        sessions: &[SessionId],
    ) -> Result<BTreeMap<SessionId, String>, ServiceError> {
        agents_of(self.ports.meta.as_ref(), sessions).await
    }

    /// The conversation was closed (a `SessionEnd`, or its process seen gone): what waited
    /// for that becomes due once the quiet period has passed. Returns how many woke.
    pub async fn closed(&self, session: &SessionId) -> Result<usize, ServiceError> {
        let due = self.now() + self.config.policy.quiet_period;
        Ok(self.ports.store.wake(session, due, true).await?)
    }

    /// Wakes the entries waiting for an open conversation that is no longer open, as seen
    /// now. Reads Claude Code's session files only; writes only for what it wakes.
    pub async fn wake_closed(&self, pending: &[PendingEntry]) -> Result<usize, ServiceError> {
        let mut sessions: Vec<&SessionId> = pending
            .iter()
            .filter(|p| p.waiting.as_ref().is_some_and(Waiting::waits_for_close))
            .map(|p| &p.session_id)
            .collect();
        sessions.sort();
        sessions.dedup();
        let mut woke = 0;
        for s in sessions {
            if self.ports.meta.open(s).await?.is_none() {
                woke += self.closed(s).await?;
            }
        }
        Ok(woke)
    }
}

/// The agent of each of `sessions` the app has remembered (from its hook events): the one
/// the session meta names, or [`crate::DEFAULT_AGENT`]; a session it knows nothing of is
/// left out. One state read a session, no transcript read, nothing priced: for listings
/// (`pending`, `runs`, the API and the page).
pub async fn agents_of(
    meta: &dyn SessionMeta,
    sessions: &[SessionId],
) -> Result<BTreeMap<SessionId, String>, ServiceError> {
    let mut out = BTreeMap::new();
    for s in sessions {
        if out.contains_key(s) {
            continue;
        }
        let st = meta.state(s).await?;
        if st.agent.is_some() || st.transcript_path.is_some() || st.cwd.is_some() {
            let agent = st.agent.unwrap_or_else(|| crate::DEFAULT_AGENT.to_owned());
            out.insert(s.clone(), agent);
        }
    }
    Ok(out)
}
