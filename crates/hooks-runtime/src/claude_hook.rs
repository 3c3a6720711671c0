//! `hooks-app claude-hook`: one Claude Code hook event on stdin.
//!
//! A `Stop` whose last assistant message ends with the done marker's line (`DONE` unless
//! `--done-marker` or `HOOKS_DONE_MARKER` says otherwise) queues the hooks; a
//! `StopFailure` (a turn stopped by a usage limit, an overload, …) queues the
//! `conversation-failed` hooks that follow its `error` up;
//! any other `Stop`, and `SubagentStop`, change nothing. A `SessionEnd` means the
//! conversation was closed: it wakes what waits for that, and on the entry installed with
//! `--trigger session-end` (which passes `--on session-end`) it also queues the hooks when
//! the transcript's last assistant message ends with the done marker (the event carries no
//! message text). Events
//! coming from this app's own follow-up runs are ignored. In the on-demand daemon mode
//! (the default), what queued something or woke a waiting entry starts `serve` in the
//! background when none runs. Malformed or oversized input
//! exits 1 with one line on stderr and changes nothing; this command never exits 2, which
//! would block Claude.

use hooks_core::decide::Arrival;
use std::io::Read;
use std::process::ExitCode;

use hooks_core::service::{Config, NotifyEvent};
use hooks_core::*;

use crate::options::HookTrigger;
use crate::{AppError, AppResult, Context, compose};

/// The most read from stdin.
pub use hooks_claude_code::hook_input::MAX_INPUT;
use hooks_claude_code::hook_input::{HookInput, InputError};

pub fn run(ctx: &Context, on: Option<HookTrigger>) -> ExitCode {
    match handle(ctx, on, &mut std::io::stdin().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "hooks-app claude-hook: {}",
                crate::output::safe(e.message.lines().next().unwrap_or("failed"))
            );
            ExitCode::from(1)
        }
    }
}

/// What one hook input asks for: queuing the hooks (and waking what waited for the close,
/// on a `SessionEnd`), or only that wake.
#[derive(Debug, Clone)]
pub struct HookPlan {
    pub event: NotifyEvent,
    pub queue: bool,
    pub closed: bool,
}

/// Reads one Claude Code hook input, `from` naming where it came (`stdin` for
/// `claude-hook`, `body` for an `http` hook's POST to the daemon). `Ok(None)`: nothing to do.
///
/// `checked`: the input came with the hook token over HTTP, which another local user may
/// have seen (holding the hook's port while the daemon was down), so it is believed only
/// as far as the conversation's own transcript bears it out: the transcript must be the
/// user's own file under Claude Code's `projects/`, named for the session; a `Stop` is
/// done only when the transcript's last reply ends with the marker; a `StopFailure` is a
/// failure only when the transcript ends in an API error, and is the failure of that line
/// (its kind, its time), so telling it again follows nothing up twice.
pub fn plan(
    ctx: &Context,
    buf: &[u8],
    on: Option<HookTrigger>,
    from: &str,
    checked: bool,
) -> AppResult<Option<HookPlan>> {
    let input =
        HookInput::parse(buf).map_err(|e: InputError| AppError::invalid(format!("{from}: {e}")))?;
    let told = if checked {
        check_transcript(ctx, &input)?;
        Some(told_failure(&input)?)
    } else {
        None
    };
    let from_transcript = || {
        input
            .transcript_path
            .as_deref()
            .and_then(|p| hooks_meta::read_facts(std::path::Path::new(p)).ok())
            .and_then(|f| f.last_assistant_text)
    };
    let done = |text: Option<String>| text.is_some_and(|t| ends_with_marker(&t, &ctx.done_marker));
    let closed = input.hook_event_name == "SessionEnd";
    // A turn Claude Code stopped on an error: the conversation-failed hooks, with what the
    // CLI said (a usage limit's message says when it resets).
    let claude_failure = (input.hook_event_name == "StopFailure").then(|| {
        let (kind, at) = match told.flatten() {
            Some((kind, at)) => (kind, at),
            None => (input.error.clone(), None),
        };
        failure::FailedTurn {
            kind: failure::FailureKind::from_claude(kind.as_deref().unwrap_or("unknown")),
            texts: input.failure_texts(),
            resets_at: None,
            at,
        }
    });
    // Codex has no StopFailure and runs no Stop hook for a turn it ended on an error: that
    // is read from its rollout when the conversation's SessionEnd comes (at once for
    // `codex exec`, on the TUI's exit), with the reset the rollout records.
    let codex_failure = || {
        let path = input
            .transcript_path
            .as_deref()
            .filter(|p| hooks_meta::codex::is_rollout_path(p))?;
        let f = hooks_meta::read_facts(std::path::Path::new(path))
            .ok()
            .filter(|f| f.ends_in_error)?;
        Some(failure::FailedTurn {
            kind: failure::FailureKind::from_claude(f.failed_kind.as_deref().unwrap_or("unknown")),
            texts: Vec::new(),
            resets_at: f.failed_resets_at,
            at: f.failed_at,
        })
    };
    let failure = claude_failure.or_else(|| {
        (!checked && input.hook_event_name == "SessionEnd")
            .then(codex_failure)
            .flatten()
    });
    let queue = failure.is_some()
        || match input.hook_event_name.as_str() {
            "Stop" if checked => done(from_transcript()),
            "Stop" => done(
                input
                    .last_assistant_message
                    .clone()
                    .or_else(from_transcript),
            ),
            "SessionEnd" => on == Some(HookTrigger::SessionEnd) && done(from_transcript()),
            _ => false,
        };
    if !queue && !closed {
        return Ok(None);
    }
    let session = SessionId::parse(&input.session_id)?;
    let origin = match std::env::var("HOOKS_APP_ORIGIN") {
        Ok(o) if o == "cron" => Some(Origin::Cron),
        _ => None,
    };
    Ok(Some(HookPlan {
        event: NotifyEvent {
            session,
            event: if failure.is_some() {
                Event::ConversationFailed
            } else {
                Event::ConversationDone
            },
            update: SessionUpdate {
                // Only the project's own folder: not one the agent `cd`'d into.
                cwd: input.project_cwd().map(str::to_owned),
                transcript_path: input.transcript_path,
                origin,
            },
            subagent: input.agent_id.is_some(),
            failure,
        },
        queue,
        closed,
    }))
}

/// For a checked `StopFailure`: the failure as the transcript tells it (the kind Claude
/// Code wrote on its API error line, and that line's time). An input whose transcript does
/// not end in an API error tells of no failure: refused. `Ok(None)` for other events.
fn told_failure(
    input: &HookInput,
) -> AppResult<Option<(Option<String>, Option<hooks_core::stamp::Timestamp>)>> {
    if input.hook_event_name != "StopFailure" {
        return Ok(None);
    }
    let facts = input
        .transcript_path
        .as_deref()
        .and_then(|p| hooks_meta::read_facts(std::path::Path::new(p)).ok());
    match facts {
        Some(f) if f.ends_in_error => Ok(Some((
            f.failed_kind.or_else(|| input.error.clone()),
            f.failed_at,
        ))),
        _ => Err(AppError::invalid(
            "hook_event_name: a StopFailure is believed only when the conversation's transcript ends in the failed turn, and it does not",
        )),
    }
}

/// Whether the transcript a hook input names already holds what the input says: Claude
/// Code may send an `http` hook before its transcript is on disk. True for anything but a
/// `Stop` or `StopFailure` once the file is there; for a `Stop`, once the transcript's last
/// reply is the one the input claims; for a `StopFailure`, once it ends in an API error.
/// `None` when the input names no transcript (or is not an input): nothing to wait for.
pub fn transcript_caught_up(input: &HookInput, facts: &TranscriptFacts) -> bool {
    match input.hook_event_name.as_str() {
        "Stop" => {
            input.last_assistant_message.as_deref().map(str::trim_end)
                == facts.last_assistant_text.as_deref().map(str::trim_end)
        }
        "StopFailure" => facts.ends_in_error,
        _ => true,
    }
}

/// Waits, up to `wait`, until the transcript an input names holds what it says (see
/// [`transcript_caught_up`]), reading it again only when it changed (its size or time): a
/// false event costs one read of its transcript, however long it waits; a transcript not
/// written yet, a look at its metadata now and then. Only a transcript [`plan`] would
/// accept is read at all.
pub async fn await_transcript(ctx: &Context, buf: &[u8], wait: std::time::Duration) {
    let Ok(input) = HookInput::parse(buf) else {
        return;
    };
    let Some(path) = input.transcript_path.as_deref().map(std::path::Path::new) else {
        return;
    };
    let stamp = || {
        std::fs::metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let until = std::time::Instant::now() + wait;
    let mut seen = None;
    let mut checked = false;
    loop {
        let now = stamp();
        // Not there yet (Claude Code may post before it writes the file): only its
        // metadata is asked for until it is.
        if now.is_some() && now != seen {
            seen = now;
            if !checked {
                if check_transcript(ctx, &input).is_err() {
                    return;
                }
                checked = true;
            }
            match hooks_meta::read_facts(path) {
                Ok(f) if transcript_caught_up(&input, &f) => return,
                _ => {}
            }
        }
        if std::time::Instant::now() >= until {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// That a hook input names a conversation of this user: its transcript is a regular file
/// the user owns, under Claude Code's `projects/`, named `<session_id>.jsonl`.
fn check_transcript(ctx: &Context, input: &HookInput) -> AppResult {
    use std::os::unix::fs::MetadataExt;
    let refuse = |rule: &str| AppError::invalid(format!("transcript_path: {rule}"));
    let path = input
        .transcript_path
        .as_deref()
        .ok_or_else(|| refuse("is required with the hook token"))?;
    let path = std::path::Path::new(path);
    let projects = ctx
        .claude_home
        .join("projects")
        .canonicalize()
        .map_err(|_| refuse("no conversation of Claude Code's is kept here"))?;
    let real = path
        .canonicalize()
        .map_err(|_| refuse("must be a conversation's transcript, and there is none there"))?;
    let named = real.file_name().and_then(|n| n.to_str())
        == Some(format!("{}.jsonl", input.session_id).as_str());
    if !real.starts_with(&projects) || !named {
        return Err(refuse(&format!(
            "must be {}/…/<session_id>.jsonl",
            projects.display()
        )));
    }
    let file = hooks_platform::open_regular(&real, true)
        .map_err(|e| refuse(&format!("cannot be read ({e})")))?;
    let meta = file.metadata().map_err(|e| refuse(&e.to_string()))?;
    if meta.uid() != hooks_platform::account::uid() {
        return Err(refuse("must be a file of yours"));
    }
    Ok(())
}

/// Carries a plan out: the notify reports (none for a close alone), and whether something
/// was queued or woken (a daemon is then wanted).
pub async fn carry_out(
    service: &hooks_core::service::Service,
    plan: &HookPlan,
) -> Result<(Vec<hooks_core::service::NotifyReport>, bool), hooks_core::service::ServiceError> {
    if !plan.queue {
        // Closed without being done: only what waits for the close is woken (and nothing
        // is written when nothing waits).
        let woken = service.closed(&plan.event.session).await?;
        return Ok((Vec::new(), woken > 0));
    }
    let reports = service.notify(&plan.event).await?;
    if plan.closed {
        service.closed(&plan.event.session).await?;
    }
    let queued = reports
        .iter()
        .any(|r| matches!(r.outcome, hooks_core::service::NotifyOutcome::Queued { .. }));
    Ok((reports, queued))
}

fn handle(ctx: &Context, on: Option<HookTrigger>, stdin: &mut impl Read) -> AppResult {
    // Read the input first, whatever it turns out to be: Claude writes it to every hook,
    // and a hook that exits without reading leaves Claude with a broken pipe.
    let mut buf = Vec::new();
    stdin
        .take(MAX_INPUT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| AppError::runtime(format!("could not read stdin: {e}")))?;
    // A follow-up's own Stop or SessionEnd names its hook in the variable; believed below
    // only while that follow-up runs on the session.
    let follow_up = std::env::var(crate::compose::FOLLOW_UP_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    let Some(plan) = plan(ctx, &buf, on, "stdin", false)? else {
        return Ok(());
    };
    let (service, _) = ctx.service(
        // It queues and wakes, never runs: the claude runner stands in, whatever runs the
        // follow-ups, so a webhook's settings can never fail the hook.
        std::sync::Arc::new(ctx.claude_runner(std::time::Duration::from_secs(1))),
        {
            let mut c = Config::new(compose::owner_id());
            // What the heads-up says follows the daemons that will take it.
            if plan.event.event == Event::ConversationDone && !plan.closed {
                c.policy.deliver_open =
                    crate::daemon::ondemand::daemons_deliver_open(&ctx.data_dir);
            }
            c
        },
    )?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| AppError::runtime(format!("could not start the runtime: {e}")))?;
    // The app started that run: its events change nothing, but the DONE of a failed
    // turn's continuation, which finishes the conversation's own task. A variable no
    // running follow-up bears out (a repository's settings set it) is ignored.
    let done = plan.event.event == Event::ConversationDone && !plan.closed && plan.queue;
    if rt.block_on(service.ignores_follow_ups_event(
        &plan.event.session,
        follow_up.as_deref(),
        done,
    ))? {
        return Ok(());
    }
    let (reports, wanted) = rt.block_on(carry_out(&service, &plan))?;
    if wanted {
        start_daemon(ctx);
    }
    // A finished turn's Stop: the TUI shows the person what is coming (a SessionEnd's
    // output reaches nobody, a StopFailure's is ignored).
    if plan.event.event == Event::ConversationDone && !plan.closed {
        let arrivals = rt.block_on(arrivals(&service, &reports, &plan.event.session))?;
        let no_daemon = !wanted_daemon_running(ctx, wanted);
        if let Some(text) = heads_up(
            &reports,
            &arrivals,
            service.now(),
            plan.event.session.as_str(),
            no_daemon,
        ) {
            println!("{}", hooks_claude_code::hook_output::system_message(&text));
        }
    }
    Ok(())
}

/// Where each queued follow-up will come ([`Arrival::AtDue`] for the others), in the
/// order of `reports`.
async fn arrivals(
    service: &hooks_core::service::Service,
    reports: &[hooks_core::service::NotifyReport],
    session: &hooks_core::model::SessionId,
) -> Result<Vec<Arrival>, hooks_core::service::ServiceError> {
    let queued = |r: &hooks_core::service::NotifyReport| {
        matches!(r.outcome, hooks_core::service::NotifyOutcome::Queued { .. })
    };
    let ids: Vec<_> = reports
        .iter()
        .filter(|r| queued(r))
        .map(|r| r.hook_id.clone())
        .collect();
    let mut found = service.arrivals(session, &ids).await?.into_iter();
    Ok(reports
        .iter()
        .map(|r| {
            if queued(r) {
                found.next().unwrap_or(Arrival::AtDue)
            } else {
                Arrival::AtDue
            }
        })
        .collect())
}

/// A daemon will take what was queued: one runs, or the on-demand mode has just started
/// one (`started`).
fn wanted_daemon_running(ctx: &Context, started: bool) -> bool {
    let mode = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir).mode;
    (started && mode == crate::options::DaemonMode::OnDemand)
        || crate::daemon::ondemand::daemon_running(&ctx.data_dir)
}

/// A wait as a person reads it: seconds under a minute, then minutes, then hours and
/// minutes (due times are whole seconds rounded up, so the odd second is dropped).
fn roughly(secs: i64) -> String {
    match secs.max(0) {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", (s + 30) / 60),
        s => match (s + 30) / 60 {
            m if m % 60 == 0 => format!("{}h", m / 60),
            m => format!("{}h{:02}m", m / 60, m % 60),
        },
    }
}

/// The one line the person is shown when a turn finished with the done marker: which
/// follow-ups were queued, when and where each will come (`arrivals`, in the order of
/// `reports`: when due, or after the person closes the conversation), and which will not
/// come because they came already (once per conversation) or are queued already, so no
/// DONE goes unanswered; and, when `no_daemon`, that no daemon runs to start them. Hooks
/// that do not apply (switched off, a subagent's or a cron job's conversation) say
/// nothing. `None` when there is nothing to say. `session` names the conversation in the
/// way to run a hook again.
pub fn heads_up(
    reports: &[hooks_core::service::NotifyReport],
    arrivals: &[Arrival],
    now: hooks_core::stamp::Timestamp,
    session: &str,
    no_daemon: bool,
) -> Option<String> {
    use hooks_core::decide::SkipReason;
    use hooks_core::service::NotifyOutcome;
    let mut queued = Vec::new();
    let mut came = Vec::new();
    let mut own = false;
    for (i, r) in reports.iter().enumerate() {
        match &r.outcome {
            NotifyOutcome::Queued { due_at } => {
                let wait = (*due_at - now).whole_seconds();
                queued.push(match arrivals.get(i) {
                    Some(Arrival::AfterClose) if wait >= 60 => format!(
                        "{} after you close this conversation, not before {}",
                        r.hook_id,
                        roughly(wait)
                    ),
                    Some(Arrival::AfterClose) => {
                        format!("{} after you close this conversation", r.hook_id)
                    }
                    _ => format!("{} in {}", r.hook_id, roughly(wait)),
                });
            }
            NotifyOutcome::Skipped(SkipReason::AlreadyPending) => {
                queued.push(format!("{} (queued already)", r.hook_id));
            }
            NotifyOutcome::Skipped(SkipReason::AlreadyRan { .. }) => {
                came.push(r.hook_id.to_string())
            }
            NotifyOutcome::Skipped(SkipReason::FollowUpsTurn) => own = true,
            NotifyOutcome::Skipped(_) => {}
        }
    }
    let mut lines = Vec::new();
    if !queued.is_empty() {
        lines.push(format!(
            "hooks-app will follow up this conversation: {} (`hooks-app pause` stops them)",
            queued.join(", ")
        ));
        if no_daemon {
            lines.push(
                "no hooks-app daemon is running now: the follow-up starts once `hooks-app serve` (or a `tick`) runs; `hooks-app install` sets one up"
                    .to_owned(),
            );
        }
    }
    if !came.is_empty() {
        let again = came
            .iter()
            .map(|id| format!("`hooks-app hooks run {id} --session {session} --force`"))
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(format!(
            "hooks-app followed this conversation up already with {} (once per conversation); {again} runs it again, `hooks-app hooks update {} --repeat each-task` follows up every task",
            came.join(", "),
            came[0]
        ));
    }
    if own {
        lines.push("this turn answered a hooks-app follow-up: its DONE queues no other".to_owned());
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// In the on-demand mode, a daemon for what was just queued. What was queued is durable
/// already; a daemon that cannot be started is said on stderr (Claude shows it) and the
/// entry waits for the next one.
fn start_daemon(ctx: &Context) {
    if let Err(e) = crate::daemon::ondemand::ensure_running(ctx, true) {
        eprintln!(
            "hooks-app claude-hook: queued, but {}",
            crate::output::safe(&e.message)
        );
    }
}
