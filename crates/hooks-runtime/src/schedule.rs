//! Follow-ups at a time (`after`, `every`) as the command line and the API ask for them:
//! which conversation they go into, and the on-demand daemon woken for them. The rules
//! are the core's ([`hooks_core::schedule`]).

use std::path::{Path, PathBuf};

use hooks_core::schedule::{Schedule, Scheduled};
use hooks_core::{SessionId, SessionUpdate};

use crate::compose::{block_on, service};
use crate::{AppError, AppResult, Context};

/// How the conversation a follow-up goes into was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Named (`--session`, the API's path).
    Named,
    /// The Claude Code conversation this command runs under (its agent ran it).
    Calling,
    /// The most recent conversation of this folder.
    NewestHere(PathBuf),
}

/// The conversation a follow-up goes into, with what is known of its folder.
#[derive(Debug, Clone)]
pub struct Target {
    /// The conversation.
    pub session: SessionId,
    /// How it was found.
    pub found: Found,
    /// What to remember of it.
    pub update: SessionUpdate,
}

/// The conversation `named` names (a whole id or a unique prefix); without a name, the
/// one whose agent runs this command (its Claude Code process's session file), else the
/// most recent of the current folder (its newest transcript).
pub fn target(ctx: &Context, named: Option<&str>) -> AppResult<Target> {
    if let Some(text) = named {
        let (svc, _) = service(ctx)?;
        let session = match block_on(svc.find_session(text))? {
            Ok(s) => s,
            Err(hooks_core::lookup::SessionLookup::Unknown(m)) => {
                return Err(AppError::invalid(format!("session: {m}")));
            }
            Err(e) => return Err(e.into()),
        };
        return Ok(Target {
            session,
            found: Found::Named,
            update: SessionUpdate::default(),
        });
    }
    if let Some(t) = target_calling(ctx) {
        return Ok(t);
    }
    let folder =
        ctx.claude_home
            .join("projects")
            .join(hooks_claude_code::hook_input::project_dir_name(
                &ctx.here.to_string_lossy(),
            ));
    let Some((session, transcript)) = newest_transcript(&folder) else {
        return Err(AppError::invalid(format!(
            "session: no conversation of {} was found (none in {}); name one with --session",
            ctx.here.display(),
            folder.display()
        )));
    };
    Ok(Target {
        session,
        found: Found::NewestHere(ctx.here.clone()),
        update: SessionUpdate {
            cwd: Some(ctx.here.to_string_lossy().into_owned()),
            transcript_path: Some(transcript.to_string_lossy().into_owned()),
            origin: None,
        },
    })
}

/// The Claude Code conversation whose process this one runs under, if any.
pub fn target_calling(ctx: &Context) -> Option<Target> {
    let (session, cwd) = hooks_meta::live::calling_session(&ctx.claude_home)?;
    Some(Target {
        session,
        found: Found::Calling,
        update: SessionUpdate {
            cwd: cwd.filter(|c| Path::new(c).is_absolute()),
            ..SessionUpdate::default()
        },
    })
}

/// The most recently written `<session>.jsonl` in `folder`.
fn newest_transcript(folder: &Path) -> Option<(SessionId, PathBuf)> {
    std::fs::read_dir(folder)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let stem = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_owned();
            let session = SessionId::parse(&stem).ok()?;
            let meta = std::fs::symlink_metadata(&path).ok()?;
            let at = meta.modified().ok().filter(|_| meta.is_file())?;
            Some((at, session, path))
        })
        .max_by_key(|(at, _, _)| *at)
        .map(|(_, s, p)| (s, p))
}

/// What [`schedule`] did.
#[derive(Debug)]
pub struct Done {
    /// Where it went.
    pub target: Target,
    /// What was queued.
    pub scheduled: Scheduled,
    /// Whether an on-demand daemon was started for it.
    pub started: bool,
    /// Why none could be, if one was needed and could not.
    pub not_started: Option<String>,
    /// Whether a daemon will take it: one runs, or one was just started.
    pub daemon: bool,
}

/// Queues `prompt` into `target` as `schedule` says, and wakes the on-demand daemon.
pub fn schedule(
    ctx: &Context,
    target: Target,
    schedule: &Schedule,
    prompt: &str,
) -> AppResult<Done> {
    let (svc, _) = service(ctx)?;
    let scheduled = block_on(svc.schedule(&target.session, &target.update, schedule, prompt))??;
    // Run by an agent, this process's environment is partly the repository's (its
    // settings `env`): the daemon starts only with the one the person's `install` kept.
    let from_agent = target.found == Found::Calling;
    let (started, not_started) = match crate::daemon::ondemand::ensure_running(ctx, from_agent) {
        Ok(s) => (s, None),
        Err(e) => (false, Some(e.message)),
    };
    let daemon = started || crate::daemon::ondemand::daemon_running(&ctx.data_dir);
    Ok(Done {
        target,
        scheduled,
        started,
        not_started,
        daemon,
    })
}

/// Sends `prompt` into `target` now (`key`: at most once), and wakes the on-demand daemon;
/// also whether a daemon will take it.
pub fn send(
    ctx: &Context,
    target: &Target,
    key: Option<&str>,
    prompt: &str,
) -> AppResult<(hooks_core::schedule::Sent, bool)> {
    let (svc, _) = service(ctx)?;
    let sent = block_on(svc.send(&target.session, &target.update, key, prompt))??;
    let started = crate::daemon::ondemand::ensure_running(ctx, target.found == Found::Calling)
        .unwrap_or(false);
    Ok((
        sent,
        started || crate::daemon::ondemand::daemon_running(&ctx.data_dir),
    ))
}
