//! Follow-ups at a time (`hooks-app after 40m …`, `every 2h … --times 3`): a prompt a
//! person or the agent itself asks to see later in one conversation.
//!
//! Each occurrence is a one-off hook of event [`Event::Scheduled`] with one queued entry
//! for that conversation, due at its time. So it takes the one path every follow-up takes
//! — claimed, decided on fresh facts (pause, caps, budget, an open TUI), delivered or
//! resumed, recorded — and runs at most once, by the rule that a hook follows a session up
//! once. No event ever queues such a hook again. A series is its occurrences, made at once
//! and bounded ([`MAX_OCCURRENCES`]): what runs with the person's credentials while nobody
//! watches ends by itself. An occurrence found later than the series' interval past its
//! time (the machine slept, the TUI stayed open) is skipped, not run in a pile with the
//! next one.

use time::Duration;

use crate::model::*;
use crate::service::{Service, ServiceError};
use crate::stamp::Timestamp;
use crate::{SessionId, ValidationError};

/// The most occurrences one `every` makes.
pub const MAX_OCCURRENCES: u32 = 100;

/// The most follow-ups at a time one conversation may have queued at once.
pub const MAX_QUEUED_PER_SESSION: usize = 100;

/// How far ahead a follow-up may be asked for.
pub const MAX_AHEAD: Duration = Duration::days(365);

/// What one conversation may hold of follow-ups at a time, on top of what every schedule
/// keeps: the store's own cap by default, or the person's tighter limits on what an agent
/// schedules for itself (`hooks-app mcp`). Checked where they are queued, in the same look
/// at the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most queued at once in one conversation (at most [`MAX_QUEUED_PER_SESSION`]).
    pub max_queued: usize,
    /// How far ahead the last occurrence may be (at most [`MAX_AHEAD`]).
    pub max_ahead: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_queued: MAX_QUEUED_PER_SESSION,
            max_ahead: MAX_AHEAD,
        }
    }
}

/// The shortest interval of a series.
pub const MIN_EVERY: Duration = Duration::minutes(1);

/// The longest prompt, in bytes.
pub const MAX_PROMPT_BYTES: usize = 32 * 1024;

/// When the occurrences of a follow-up at a time come: checked, so every one lies within
/// [`MAX_AHEAD`] and a series has 1 to [`MAX_OCCURRENCES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    first: Duration,
    every: Option<Duration>,
    times: u32,
    max_cost: CostCap,
}

impl Schedule {
    /// Once, `after` from now; the error names `after`.
    pub fn once(after: Duration) -> Result<Self, ValidationError> {
        Self::check_ahead("after", after)?;
        Ok(Self {
            first: after,
            every: None,
            times: 1,
            max_cost: CostCap::NONE,
        })
    }

    /// `times` occurrences, the first `every` from now; the errors name `every` and
    /// `times`.
    pub fn every(every: Duration, times: u32) -> Result<Self, ValidationError> {
        if every < MIN_EVERY {
            return Err(ValidationError::new(
                "every",
                format!("must be at least a minute (got {}s)", every.whole_seconds()),
            ));
        }
        if !(1..=MAX_OCCURRENCES).contains(&times) {
            return Err(ValidationError::new(
                "times",
                format!("must be a whole number from 1 to {MAX_OCCURRENCES} (got {times})"),
            ));
        }
        let last = every
            .checked_mul(times as i32)
            .ok_or_else(|| ValidationError::new("times", "reaches too far ahead"))?;
        Self::check_ahead("every", last)?;
        Ok(Self {
            first: every,
            every: Some(every),
            times,
            max_cost: CostCap::NONE,
        })
    }

    /// The same, its first occurrence `first` from now (the rest an interval apart); the
    /// error names `after`.
    pub fn first_after(mut self, first: Duration) -> Result<Self, ValidationError> {
        let span = self.every.unwrap_or(Duration::ZERO) * (self.times.saturating_sub(1) as i32);
        Self::check_ahead("after", first + span)?;
        self.first = first;
        Ok(self)
    }

    /// The same, each occurrence capped at `cap` (as a hook's `max_cost`).
    pub fn max_cost(mut self, cap: CostCap) -> Self {
        self.max_cost = cap;
        self
    }

    fn check_ahead(field: &'static str, d: Duration) -> Result<(), ValidationError> {
        if d.is_negative() || d > MAX_AHEAD {
            return Err(ValidationError::new(
                field,
                "must be from now to a year ahead".to_owned(),
            ));
        }
        Ok(())
    }

    /// When each occurrence is due, counted from `now`.
    pub fn due_times(&self, now: Timestamp) -> Vec<Timestamp> {
        (0..self.times)
            .map(|k| now + self.first + self.every.unwrap_or(Duration::ZERO) * (k as i32))
            .collect()
    }

    /// The interval of a series; `None` for once.
    pub fn interval(&self) -> Option<Duration> {
        self.every
    }
}

/// What [`Service::send`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// Queued now, due at once.
    Queued(Scheduled),
    /// Its key was sent before: nothing more is; how that one ended (`None`: it is still
    /// queued or running).
    Already {
        /// The first send's hook.
        hook: HookId,
        /// How it ended, if it has.
        status: Option<Status>,
    },
}

/// A follow-up at a time as a person or an agent writes it (the CLI's arguments, the API's
/// fields, an MCP tool's): `after` (a length of time), `every` (an interval) with `times`
/// or `until` (a length of time from now, or a time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ask<'a> {
    /// When the first comes, from now; with `every`, an interval from now if not given.
    pub after: Option<&'a str>,
    /// The interval of a series.
    pub every: Option<&'a str>,
    /// How many in a series.
    pub times: Option<u32>,
    /// The last of a series no later than this.
    pub until: Option<&'a str>,
}

impl Schedule {
    /// The schedule `ask` says, counted from `now`; the error names the field and its rule.
    pub fn parse(ask: &Ask<'_>, now: Timestamp) -> Result<Self, ValidationError> {
        use crate::span::parse_span;
        let after = ask.after.map(|a| parse_span("after", a)).transpose()?;
        let Some(every) = ask.every else {
            if ask.times.is_some_and(|n| n != 1) {
                return Err(ValidationError::new("every", "is required with times"));
            }
            if ask.until.is_some() {
                return Err(ValidationError::new("every", "is required with until"));
            }
            return Self::once(after.ok_or_else(|| ValidationError::new("after", "is required"))?);
        };
        let every = parse_span("every", every)?;
        let first = after.unwrap_or(every);
        let times = match (ask.times, ask.until) {
            (Some(_), Some(_)) => {
                return Err(ValidationError::new(
                    "until",
                    "give times or until, not both",
                ));
            }
            (None, None) => {
                return Err(ValidationError::new(
                    "times",
                    "give times or until: a series ends by itself",
                ));
            }
            (Some(n), None) => n,
            (None, Some(u)) => {
                let until = match parse_span("until", u) {
                    Ok(d) => d,
                    Err(_) => match crate::stamp::parse(u) {
                        Some(t) => t - now,
                        None => {
                            return Err(ValidationError::new(
                                "until",
                                format!(
                                    "must be a length of time from now (7d, 12h) or a time such as 2026-12-24T18:00:00Z (got {u:?})"
                                ),
                            ));
                        }
                    },
                };
                if until < first || every < MIN_EVERY {
                    return Err(ValidationError::new(
                        "until",
                        "must be no earlier than the first follow-up",
                    ));
                }
                let n = (until - first).whole_seconds() / every.whole_seconds() + 1;
                if n > i64::from(MAX_OCCURRENCES) {
                    return Err(ValidationError::new(
                        "until",
                        format!(
                            "makes {n} occurrences; a series has at most {MAX_OCCURRENCES}: a longer interval or an earlier end"
                        ),
                    ));
                }
                n as u32
            }
        };
        Self::every(every, times)?.first_after(first)
    }
}

/// What [`Service::schedule`] queued.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    /// The prompt file the occurrences share.
    pub prompt_file: PromptFile,
    /// Each occurrence's hook and when it is due, earliest first.
    pub occurrences: Vec<(HookId, Timestamp)>,
}

/// The prompt file's text for `prompt`: a name and nothing else in its frontmatter (so
/// the prompt's own text is never read as options, and Claude Code, which registers
/// `.claude/agents` files with a name *and* a description, never makes it a subagent).
pub fn prompt_text(name: &str, prompt: &str) -> String {
    format!("---\nname: {name}\n---\n\n{}\n", prompt.trim())
}

/// Checks what a person or an agent asks a follow-up to say; the error names `prompt`.
pub fn check_prompt(prompt: &str) -> Result<(), ValidationError> {
    if prompt.trim().is_empty() {
        return Err(ValidationError::new("prompt", "must not be empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(ValidationError::new(
            "prompt",
            format!(
                "must be at most {MAX_PROMPT_BYTES} bytes (got {})",
                prompt.len()
            ),
        ));
    }
    if prompt
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(ValidationError::new(
            "prompt",
            "must not hold control characters other than line breaks and tabs",
        ));
    }
    crate::prompt::parse_prompt(&prompt_text("check", prompt)).map(|_| ())
}

/// `after-YYYYMMDD-HHMMSS` (or `every-…`), from `now`: a name a person can read and
/// sort; a clash takes a `-2`, `-3`, … from the prompt source and the store.
fn base_name(kind: &str, now: Timestamp) -> String {
    format!(
        "{kind}-{:04}{:02}{:02}-{:02}{:02}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// `7d`, `12h`, `90m`, `45s`: the largest unit that divides it.
fn span_text(d: Duration) -> String {
    match d.whole_seconds() {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

impl Service {
    /// Queues `prompt` into `session` as `schedule` says: remembers what `update` says of
    /// the conversation (its folder, its transcript), writes the prompt once (through the
    /// prompt source), makes one scheduled hook an occurrence, and queues each for
    /// `session` at its time, in one write. Refused, with nothing changed, when a rule is
    /// broken: the prompt ([`check_prompt`]), the update's paths, or more than
    /// [`MAX_QUEUED_PER_SESSION`] queued for the conversation.
    pub async fn schedule(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
        schedule: &Schedule,
        prompt: &str,
    ) -> Result<Scheduled, ServiceError> {
        self.schedule_within(session, update, schedule, prompt, &Limits::default())
            .await
    }

    /// [`Self::schedule`] within `limits` (never beyond the defaults): more than
    /// `max_queued` queued is refused naming `times`, an occurrence past `max_ahead`
    /// naming `after`.
    pub async fn schedule_within(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
        schedule: &Schedule,
        prompt: &str,
        limits: &Limits,
    ) -> Result<Scheduled, ServiceError> {
        check_prompt(prompt)?;
        update.validate()?;
        let now = self.now();
        let kind = if schedule.interval().is_some() {
            "every"
        } else {
            "after"
        };
        let base = base_name(kind, now);
        let done = self
            .schedule_as(session, update, schedule, prompt, (&base, false), limits)
            .await?;
        done.ok_or_else(|| ValidationError::new("id", "internal: a free name was taken").into())
    }

    /// [`Self::schedule`] with its hooks named from `base` (and a prompt file of that name,
    /// `-2`, … when taken), once the prompt and the update are checked; the one place the
    /// per-conversation cap ([`MAX_QUEUED_PER_SESSION`]) is held, so `send` keeps it too.
    /// With `exact`, a hook name another took first queues nothing and is `None`.
    async fn schedule_as(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
        schedule: &Schedule,
        prompt: &str,
        (base, exact): (&str, bool),
        limits: &Limits,
    ) -> Result<Option<Scheduled>, ServiceError> {
        let now = self.now();
        let times = schedule.due_times(now);
        let max_ahead = limits.max_ahead.min(MAX_AHEAD);
        if times.last().is_some_and(|last| *last - now > max_ahead) {
            return Err(ValidationError::new(
                "after",
                format!(
                    "follow-ups may be asked for up to {} ahead",
                    span_text(max_ahead)
                ),
            )
            .into());
        }
        let max_queued = limits.max_queued.min(MAX_QUEUED_PER_SESSION);
        let queued = self.scheduled_for(session).await?.len();
        if queued + times.len() > max_queued {
            return Err(ValidationError::new(
                "times",
                format!(
                    "this conversation has {queued} follow-ups at a time queued, and {max_queued} at once are allowed (cancelling one, or `hooks-app pending drop`, takes one out)"
                ),
            )
            .into());
        }
        if *update != SessionUpdate::default() {
            self.ports.meta.remember(session, update).await?;
        }
        let (name, prompt_file) = self.save_prompt(base, prompt).await?;
        let mut occurrences = Vec::new();
        let mut entries = Vec::new();
        for (k, due) in times.iter().enumerate() {
            let hook_name = match schedule.interval() {
                Some(_) => format!("{name}-{}", k + 1),
                None => name.clone(),
            };
            let mut spec = HookSpec::new(&hook_name, prompt_file.clone())?;
            spec.event = Event::Scheduled;
            spec.delay = Delay::from_seconds(0)?;
            spec.skip_cron = false;
            spec.skip_subagents = false;
            spec.max_cost = schedule.max_cost;
            if let Some(every) = schedule.interval() {
                spec.max_lateness =
                    MaxLateness::from_seconds(every.whole_seconds().min(2_592_000))?;
            }
            let hook = self.ports.store.create_hook(spec, now).await?;
            if exact && hook.id.as_str() != hook_name {
                // Another made a hook of this name first: nothing of ours is queued.
                self.ports.store.delete_hook(&hook.id).await?;
                return Ok(None);
            }
            let mut entry = PendingEntry::new(hook.id.clone(), session.clone(), DueAt::At(*due));
            entry.queued_at = Some(now);
            entries.push(entry);
            occurrences.push((hook.id, *due));
        }
        let results = self.ports.store.enqueue(entries).await?;
        if let Some(r) = results
            .iter()
            .find(|r| **r != crate::store::EnqueueResult::Queued)
        {
            return Err(ValidationError::new(
                "session",
                format!("a follow-up at a time could not be queued ({r:?}): `hooks-app pending` shows what is"),
            )
            .into());
        }
        Ok(Some(Scheduled {
            prompt_file,
            occurrences,
        }))
    }

    /// Sends `prompt` into `session` now: a follow-up at a time due at once, which goes
    /// into the open TUI where the agent offers a way in, or resumes the conversation once
    /// it is not open. With a `key` (1 to 64 of A-Z a-z 0-9 and `-`, read without case), the
    /// same key again sends nothing more and says how the first went: its hook is
    /// `send-<key>`, and a hook follows a conversation up once. A key used for another
    /// conversation is refused, naming `key`.
    pub async fn send(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
        key: Option<&str>,
        prompt: &str,
    ) -> Result<Sent, ServiceError> {
        check_prompt(prompt)?;
        update.validate()?;
        let once = Schedule::once(Duration::ZERO)?;
        let Some(key) = key else {
            let base = base_name("send", self.now());
            let done = self
                .schedule_as(
                    session,
                    update,
                    &once,
                    prompt,
                    (&base, false),
                    &Limits::default(),
                )
                .await?;
            return done.map(Sent::Queued).ok_or_else(|| {
                ValidationError::new("id", "internal: a free name was taken").into()
            });
        };
        if key.is_empty()
            || key.len() > 64
            || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(ValidationError::new(
                "key",
                format!(
                    "must be 1 to 64 of A-Z a-z 0-9 and - (got {} bytes)",
                    key.len()
                ),
            )
            .into());
        }
        let id = HookId(format!("send-{}", key.to_ascii_lowercase()));
        if let Some(sent) = self.sent_before(&id, session).await? {
            return Ok(sent);
        }
        match self
            .schedule_as(
                session,
                update,
                &once,
                prompt,
                (id.as_str(), true),
                &Limits::default(),
            )
            .await?
        {
            Some(done) => Ok(Sent::Queued(done)),
            // Another send of the same key came first: it is the one sent.
            None => self.sent_before(&id, session).await?.ok_or_else(|| {
                ValidationError::new("key", "was being sent at the same moment").into()
            }),
        }
    }

    /// How the send of hook `id` went, if there was one: for `session`, or refused.
    async fn sent_before(
        &self,
        id: &HookId,
        session: &SessionId,
    ) -> Result<Option<Sent>, ServiceError> {
        let Some(hook) = self.ports.store.get_hook(id).await? else {
            return Ok(None);
        };
        let snap = self.ports.store.snapshot().await?;
        let to = snap
            .pending
            .iter()
            .find(|p| p.hook_id == *id)
            .map(|p| p.session_id.as_str().to_owned())
            .or_else(|| hook.history.entries().first().map(|e| e.session.clone()));
        if let Some(to) = to.filter(|t| t != session.as_str()) {
            return Err(ValidationError::new(
                "key",
                format!("was used for another conversation ({to}); a key sends one prompt"),
            )
            .into());
        }
        Ok(Some(Sent::Already {
            hook: hook.id,
            status: hook.last_status,
        }))
    }

    /// The follow-ups at a time queued for `session`, earliest due first.
    pub async fn scheduled_for(
        &self,
        session: &SessionId,
    ) -> Result<Vec<PendingEntry>, ServiceError> {
        let snap = self.ports.store.snapshot().await?;
        let scheduled: std::collections::BTreeSet<&HookId> = snap
            .hooks
            .iter()
            .filter(|h| h.event == Event::Scheduled)
            .map(|h| &h.id)
            .collect();
        let mut out: Vec<PendingEntry> = snap
            .pending
            .iter()
            .filter(|p| p.session_id == *session && scheduled.contains(&p.hook_id))
            .cloned()
            .collect();
        // By the instant (a due time's text sorts wrongly across offsets); one due as soon
        // as possible first.
        out.sort_by_key(|p| p.became_due().time());
        Ok(out)
    }

    /// Cancels the follow-up at a time `hook` queued for `session`, ending it as
    /// `skipped: why`. Refused, naming `id`, when it is no follow-up at a time of that
    /// conversation (so an agent cancels its own only) or it is being sent right now.
    pub async fn cancel_scheduled(
        &self,
        session: &SessionId,
        hook: &HookId,
        why: &str,
    ) -> Result<(), ServiceError> {
        if !self
            .scheduled_for(session)
            .await?
            .iter()
            .any(|p| p.hook_id == *hook)
        {
            return Err(ValidationError::new(
                "id",
                format!("no follow-up {hook} is queued in this conversation"),
            )
            .into());
        }
        let key = EntryKey {
            hook_id: hook.clone(),
            session_id: session.clone(),
        };
        let (gone, _) = self.drop_pending(std::slice::from_ref(&key), why).await?;
        if gone.is_empty() {
            return Err(
                ValidationError::new("id", format!("{hook} is being sent right now")).into(),
            );
        }
        Ok(())
    }

    /// Writes `prompt` as a new prompt file named from `base` (`-2`, `-3`, … when taken).
    async fn save_prompt(
        &self,
        base: &str,
        prompt: &str,
    ) -> Result<(String, PromptFile), ServiceError> {
        for n in 1..=20 {
            let name = match n {
                1 => base.to_owned(),
                n => format!("{base}-{n}"),
            };
            let file = PromptFile::parse(&format!("{PROMPT_DIR}/{name}.md"))?;
            match self
                .ports
                .prompts
                .save(&file, &prompt_text(&name, prompt))
                .await
            {
                Ok(true) => return Ok((name, file)),
                Ok(false) => continue,
                Err(e) => return Err(ValidationError::new("prompt", e.to_string()).into()),
            }
        }
        Err(ValidationError::new(
            "prompt",
            format!("could not find a free file name for {base}"),
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use time::macros::datetime;

    use super::*;
    use crate::ports::HookStore;
    use crate::service::{Config, FireAction, Ports};
    use crate::testing::*;

    struct World {
        store: Arc<InMemoryStore>,
        meta: Arc<InMemoryMeta>,
        runner: Arc<ScriptedRunner>,
        clock: Arc<ManualClock>,
        service: Service,
    }

    fn t0() -> Timestamp {
        datetime!(2026-12-07 15:00:00 UTC)
    }

    fn world() -> World {
        let store = InMemoryStore::seeded(t0());
        let meta = InMemoryMeta::new();
        let runner = ScriptedRunner::ok();
        let clock = ManualClock::new(t0());
        let ports = Ports {
            store: store.clone(),
            meta: meta.clone(),
            runner: runner.clone(),
            prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", "Tidy up."),
            clock: clock.clone(),
        };
        let service = Service::new(ports, Config::new("me"));
        World {
            store,
            meta,
            runner,
            clock,
            service,
        }
    }

    fn s1() -> SessionId {
        SessionId::parse("s1").unwrap()
    }

    fn s2() -> SessionId {
        SessionId::parse("s2").unwrap()
    }

    fn in_work() -> SessionUpdate {
        SessionUpdate {
            cwd: Some("/work".into()),
            ..SessionUpdate::default()
        }
    }

    /// A quiet transcript, last written an hour before `at`.
    fn quiet(at: Timestamp) -> TranscriptFacts {
        TranscriptFacts {
            path: "/t/s1.jsonl".into(),
            context_tokens: Some(1000),
            last_change: Some(at - Duration::hours(1)),
            cwd: Some("/work".into()),
            ..TranscriptFacts::default()
        }
    }

    async fn fire_due(w: &World) -> Vec<FireAction> {
        let mut out = Vec::new();
        for e in w.service.claim(100).await.unwrap() {
            out.push(w.service.fire(&e).await.unwrap().action);
        }
        out
    }

    #[tokio::test]
    async fn a_follow_up_after_a_while_runs_once_at_its_time_with_its_prompt() {
        let w = world();
        let s = Schedule::once(Duration::minutes(40)).unwrap();
        let done = w
            .service
            .schedule(&s1(), &in_work(), &s, "check the deploy")
            .await
            .unwrap();
        assert_eq!(done.occurrences.len(), 1);
        let (id, due) = &done.occurrences[0];
        assert_eq!(id.as_str(), "after-20261207-150000");
        assert_eq!(*due, t0() + Duration::minutes(40));
        let hook = w.store.get_hook(id).await.unwrap().unwrap();
        assert_eq!(hook.event, Event::Scheduled);
        assert!(!hook.skip_subagents && !hook.skip_cron);
        w.meta.set_transcript(&s1(), quiet(t0()));
        w.clock.advance(Duration::minutes(39));
        assert!(fire_due(&w).await.is_empty(), "not before its time");
        w.clock.advance(Duration::minutes(1));
        let fired = fire_due(&w).await;
        assert!(matches!(&fired[..], [FireAction::Ran(_)]), "{fired:?}");
        let call = &w.runner.calls()[0];
        assert_eq!(
            (call.cwd.as_str(), call.prompt.body.as_str()),
            ("/work", "check the deploy")
        );
        // No event queues it again: a DONE in the conversation queues post-task only.
        let ev = crate::service::NotifyEvent {
            failure: None,
            session: s1(),
            event: Event::ConversationDone,
            update: in_work(),
            subagent: false,
        };
        let r = w.service.notify(&ev).await.unwrap();
        assert!(r.iter().all(|r| r.hook_id != *id), "{r:?}");
        w.clock.advance(Duration::days(1));
        fire_due(&w).await;
        assert_eq!(
            w.runner.count(),
            2,
            "post-task and the one follow-up, no more"
        );
    }

    #[tokio::test]
    async fn a_series_runs_each_occurrence_once_and_skips_one_found_too_late() {
        let w = world();
        let s = Schedule::every(Duration::hours(2), 3).unwrap();
        let done = w
            .service
            .schedule(&s1(), &in_work(), &s, "look at CI")
            .await
            .unwrap();
        let ids: Vec<&str> = done.occurrences.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(
            ids,
            [
                "every-20261207-150000-1",
                "every-20261207-150000-2",
                "every-20261207-150000-3"
            ]
        );
        let dues: Vec<Timestamp> = done.occurrences.iter().map(|(_, t)| *t).collect();
        assert_eq!(
            dues,
            [2, 4, 6].map(|h| t0() + Duration::hours(h)),
            "one interval apart"
        );
        w.meta.set_transcript(&s1(), quiet(t0()));
        w.clock.advance(Duration::hours(2));
        assert!(matches!(&fire_due(&w).await[..], [FireAction::Ran(_)]));
        // The machine slept through the second and half the third interval.
        w.clock.advance(Duration::hours(5));
        let late = fire_due(&w).await;
        assert!(
            matches!(&late[..], [FireAction::Finished(Status::Skipped(_))]),
            "the second, over an interval late, is skipped: {late:?}"
        );
        let third = fire_due(&w).await;
        assert!(matches!(&third[..], [FireAction::Ran(_)]), "{third:?}");
        assert_eq!(w.runner.count(), 2);
        assert!(w.store.snapshot().await.unwrap().pending.is_empty());
    }

    #[tokio::test]
    async fn what_breaks_a_rule_is_refused_and_changes_nothing() {
        let w = world();
        let before = w.store.snapshot().await.unwrap();
        let once = Schedule::once(Duration::minutes(1)).unwrap();
        for (prompt, rule) in [
            ("  ", "must not be empty"),
            ("say {{nonsense}}", "nonsense"),
            ("a\u{7}bell", "control characters"),
        ] {
            let e = w
                .service
                .schedule(&s1(), &in_work(), &once, prompt)
                .await
                .unwrap_err();
            assert!(e.to_string().contains("prompt"), "{e}");
            assert!(e.to_string().contains(rule), "{prompt:?}: {e}");
        }
        let relative = SessionUpdate {
            cwd: Some("work".into()),
            ..SessionUpdate::default()
        };
        assert!(
            w.service
                .schedule(&s1(), &relative, &once, "hi")
                .await
                .is_err()
        );
        assert_eq!(w.store.snapshot().await.unwrap(), before);
        let far = Schedule::once(Duration::days(366)).unwrap_err();
        assert_eq!(far.field, "after");
        assert_eq!(
            Schedule::every(Duration::seconds(30), 2).unwrap_err().field,
            "every"
        );
        assert_eq!(
            Schedule::every(Duration::hours(1), 101).unwrap_err().field,
            "times"
        );
        let ask = |every, until| Ask {
            every: Some(every),
            until: Some(until),
            ..Ask::default()
        };
        assert_eq!(
            Schedule::parse(&ask("1h", "30m"), t0()).unwrap_err().field,
            "until"
        );
        let s = Schedule::parse(&ask("1h", "150m"), t0()).unwrap();
        assert_eq!(s.due_times(t0()).len(), 2, "the last no later than the end");
        let at = Schedule::parse(&ask("1h", "2026-12-07T18:00:00Z"), t0()).unwrap();
        assert_eq!(
            at.due_times(t0()).last(),
            Some(&(t0() + Duration::hours(3))),
            "an end given as a time"
        );
        for (bad, field) in [
            (Ask::default(), "after"),
            (
                Ask {
                    every: Some("1h"),
                    ..Ask::default()
                },
                "times",
            ),
            (
                Ask {
                    after: Some("1h"),
                    times: Some(3),
                    ..Ask::default()
                },
                "every",
            ),
            (
                Ask {
                    every: Some("1h"),
                    times: Some(2),
                    until: Some("5h"),
                    ..Ask::default()
                },
                "until",
            ),
            (
                Ask {
                    every: Some("1h"),
                    until: Some("soon"),
                    ..Ask::default()
                },
                "until",
            ),
        ] {
            assert_eq!(
                Schedule::parse(&bad, t0()).unwrap_err().field,
                field,
                "{bad:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_conversation_holds_at_most_so_many_and_a_person_makes_no_scheduled_hook() {
        let w = world();
        let many = Schedule::every(Duration::minutes(1), MAX_OCCURRENCES).unwrap();
        w.service
            .schedule(&s1(), &in_work(), &many, "tick")
            .await
            .unwrap();
        let e = w
            .service
            .schedule(
                &s1(),
                &in_work(),
                &Schedule::once(Duration::ZERO).unwrap(),
                "one more",
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("100 at once are allowed"), "{e}");
        // A send is a follow-up at a time too: it keeps the cap, keyed or not, and leaves
        // nothing behind when refused.
        let hooks = w.store.snapshot().await.unwrap().hooks.len();
        for key in [None, Some("k1")] {
            let e = w
                .service
                .send(&s1(), &in_work(), key, "one more")
                .await
                .unwrap_err();
            assert!(e.to_string().contains("100 at once are allowed"), "{e}");
        }
        assert_eq!(w.store.snapshot().await.unwrap().hooks.len(), hooks);
        let mut spec = HookSpec::new(
            "mine",
            PromptFile::parse(".claude/agents/hooks/p.md").unwrap(),
        )
        .unwrap();
        spec.event = Event::Scheduled;
        let e = w.service.create_another_hook(spec).await.unwrap_err();
        assert!(e.to_string().contains("event"), "{e}");
        let patch = HookPatch {
            event: Some(Event::Scheduled),
            ..HookPatch::default()
        };
        let post_task = HookId::parse("post-task").unwrap();
        assert!(w.service.update_hook(&post_task, &patch).await.is_err());
    }

    /// The person's tighter limits (an agent's own scheduling) are held where the
    /// follow-ups are queued, each refusal naming its field, nothing queued.
    #[tokio::test]
    async fn a_schedule_within_limits_keeps_them() {
        let w = world();
        let limits = Limits {
            max_queued: 2,
            max_ahead: Duration::hours(1),
        };
        let in_ = |m| Schedule::once(Duration::minutes(m)).unwrap();
        for m in [10, 20] {
            w.service
                .schedule_within(&s1(), &in_work(), &in_(m), "check", &limits)
                .await
                .unwrap();
        }
        let e = w
            .service
            .schedule_within(&s1(), &in_work(), &in_(30), "check", &limits)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("times: "), "{e}");
        let e = w
            .service
            .schedule_within(&s2(), &in_work(), &in_(61), "check", &limits)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("up to 1h ahead"), "{e}");
        assert!(w.service.scheduled_for(&s2()).await.unwrap().is_empty());
        assert_eq!(w.service.scheduled_for(&s1()).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_send_with_a_key_is_delivered_once_however_often_it_comes() {
        let w = world();
        let (one, work) = (s1(), in_work());
        let send = |key| w.service.send(&one, &work, key, "deploy is done");
        let Sent::Queued(first) = send(Some("Build-42")).await.unwrap() else {
            panic!("the first send queues");
        };
        let (hook, due) = &first.occurrences[0];
        assert_eq!(
            (hook.as_str(), *due),
            ("send-build-42", t0()),
            "due at once"
        );
        assert_eq!(
            send(Some("build-42")).await.unwrap(),
            Sent::Already {
                hook: hook.clone(),
                status: None
            },
            "again while queued: nothing more, the key read without case"
        );
        w.meta.set_transcript(&s1(), quiet(t0()));
        assert!(matches!(&fire_due(&w).await[..], [FireAction::Ran(_)]));
        assert_eq!(
            send(Some("Build-42")).await.unwrap(),
            Sent::Already {
                hook: hook.clone(),
                status: Some(Status::Ok)
            },
            "again once it ran: how it went"
        );
        fire_due(&w).await;
        assert_eq!(w.runner.count(), 1, "delivered once");
        let other = SessionId::parse("s2").unwrap();
        let e = w
            .service
            .send(&other, &in_work(), Some("build-42"), "x")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("key"), "{e}");
        let long = "k".repeat(65);
        for bad in ["", "a b", "k/../x", long.as_str()] {
            let e = send(Some(bad)).await.unwrap_err();
            assert!(e.to_string().contains("key"), "{bad:?}: {e}");
        }
        assert!(
            matches!(send(None).await.unwrap(), Sent::Queued(_)),
            "no key: one more"
        );
    }
}
