//! What is known of a conversation: where it came from, what the app remembers, what
//! its transcript says, and the facts a decision reads.

use std::collections::BTreeMap;

use crate::id::describe;
use crate::id::{HookId, ValidationError};
use crate::live::{LeaseInfo, OpenSession};
use crate::stamp::Timestamp;

/// Where a conversation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    #[default]
    /// A person's conversation (the default).
    Interactive,
    /// A conversation a cron job started (`HOOKS_APP_ORIGIN=cron`).
    Cron,
}

impl Origin {
    /// From its name; the error names `origin`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "cron" => Ok(Origin::Cron),
            "" | "interactive" => Ok(Origin::Interactive),
            other => Err(ValidationError::new(
                "origin",
                format!("must be cron or interactive (got {})", describe(other)),
            )),
        }
    }
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Interactive => "interactive",
            Origin::Cron => "cron",
        }
    }
}

/// What the app has remembered about a session in its own files. `#[non_exhaustive]`: a
/// store outside this crate starts from `default()` and sets what it keeps.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SessionState {
    /// The folder the conversation started in, set once.
    pub cwd: Option<String>,
    /// Where its transcript is.
    pub transcript_path: Option<String>,
    /// Who started it.
    pub origin: Option<Origin>,
    /// The once-per-hook stamps: when each hook fired for this session.
    pub stamps: BTreeMap<HookId, Timestamp>,
    /// The agent whose conversation it is, as the [`crate::ports::SessionMeta`] tells from
    /// the agent's files (`None`: not known, which is [`crate::DEFAULT_AGENT`]'s). Not
    /// kept: a [`crate::ports::SessionStore`] leaves it `None`.
    pub agent: Option<String>,
}

/// What remembering an event adds to a session's state; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionUpdate {
    /// The conversation's folder, when known (kept only if none is yet).
    pub cwd: Option<String>,
    /// Its transcript, when known.
    pub transcript_path: Option<String>,
    /// Who started it, when known.
    pub origin: Option<Origin>,
}

impl SessionUpdate {
    /// Paths must be absolute: a relative one would later be resolved against whatever
    /// folder a daemon happens to run in.
    pub fn validate(&self) -> Result<(), ValidationError> {
        for (field, v) in [
            ("cwd", &self.cwd),
            ("transcriptPath", &self.transcript_path),
        ] {
            if let Some(p) = v
                && (!p.starts_with('/') || p.contains('\0') || p.len() > 4096)
            {
                return Err(ValidationError::new(
                    field,
                    format!(
                        "must be an absolute path of at most 4096 bytes (got {})",
                        describe(p)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Facts read from a session's Claude Code transcript.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TranscriptFacts {
    /// The transcript's path.
    pub path: String,
    /// Whether it is a subagent's.
    pub subagent: bool,
    /// input + cache creation + cache read tokens of the last real assistant response.
    pub context_tokens: Option<u64>,
    /// When the file last changed: the quiet period counts from here.
    pub last_change: Option<Timestamp>,
    /// The folder the conversation was started in: the `cwd` of the transcript's first
    /// line that has one. Later lines carry the shell's folder after the agent's `cd`s,
    /// which say nothing of the project.
    pub cwd: Option<String>,
    /// The last assistant message's text.
    pub last_assistant_text: Option<String>,
    /// The model that wrote the last real assistant message (`message.model`).
    pub model: Option<String>,
    /// When the last real assistant message was written (its line's `timestamp`).
    pub last_reply_at: Option<Timestamp>,
    /// The conversation's last assistant line is an API error Claude Code wrote in place
    /// of a reply (`isApiErrorMessage`): its last turn failed and nothing answered since.
    pub ends_in_error: bool,
    /// When the API error the conversation ends in was written (its line's `timestamp`),
    /// with [`TranscriptFacts::ends_in_error`].
    pub failed_at: Option<Timestamp>,
    /// The kind of that error as Claude Code wrote it (the line's `error`: `rate_limit`,
    /// `overloaded`, …).
    pub failed_kind: Option<String>,
    /// When the limit that error was resets, where the transcript records it as an
    /// instant (Codex's rollout: the `rate_limits` window at 100 %).
    pub failed_resets_at: Option<Timestamp>,
    /// The agent whose conversation this is, when its format says (`codex` for a Codex
    /// rollout); `None` for Claude Code's own transcripts.
    pub agent: Option<String>,
    /// The hook whose delivered follow-up the last turn answered, when its prompt was one
    /// ([`crate::live::delivered_follow_up`]): that turn is the follow-up's, not one the
    /// person asked for.
    pub follow_up_of: Option<String>,
}

impl TranscriptFacts {
    /// Whether the conversation took a turn that was answered after a failure at `failed`
    /// (when its entry was queued): it no longer ends in an error, and its last reply is
    /// newer. A person's prompt, Claude Code's own continue at a limit and another
    /// follow-up all count; a `/exit` or a turn that failed again does not.
    pub fn went_on_after(&self, failed: Timestamp) -> bool {
        !self.ends_in_error && self.last_reply_at.is_some_and(|r| r > failed)
    }
}

/// Everything the app knows about a session when it decides.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SessionFacts {
    /// What the store keeps of the session.
    pub state: SessionState,
    /// `None` when no transcript was found.
    pub transcript: Option<TranscriptFacts>,
    /// The Claude Code process that has the conversation open, if one has.
    pub open: Option<OpenSession>,
    /// The session's run lease, if one is held or was left behind.
    pub lease: Option<LeaseInfo>,
    /// The model Claude Code's settings choose for the conversation's folder (its local
    /// project settings, then the project's, then the user's), when one is set: what a
    /// conversation with no reply yet runs on.
    pub settings_model: Option<String>,
    /// The user who owns the folder a follow-up would run in ([`SessionFacts::cwd`]), when
    /// that is not this user: such a conversation is never resumed.
    pub folder_owner: Option<String>,
}

impl SessionFacts {
    /// Subagent by the transcript's path or lines.
    pub fn is_subagent(&self) -> bool {
        self.transcript.as_ref().is_some_and(|t| t.subagent)
            || self
                .state
                .transcript_path
                .as_deref()
                .is_some_and(is_subagent_path)
    }
    /// Who started the conversation ([`Origin::Interactive`] when unknown).
    pub fn origin(&self) -> Origin {
        self.state.origin.unwrap_or_default()
    }
    /// The directory to resume in: the folder the transcript says the conversation was
    /// started in, else the one remembered from its first event. Never a folder a later
    /// event names (the agent may have `cd`'d into a package that brings its own settings).
    pub fn cwd(&self) -> Option<&str> {
        self.transcript
            .as_ref()
            .and_then(|t| t.cwd.as_deref())
            .or(self.state.cwd.as_deref())
    }
}

/// Whether a transcript path is a subagent's: `…/<parent>/subagents/agent-*.jsonl` (2.1.2+)
/// or a legacy `…/agent-*.jsonl` beside the session files. Pure string work on `/` paths.
pub fn is_subagent_path(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or("");
    let parent = parts.next().unwrap_or("");
    (file.starts_with("agent-") && file.ends_with(".jsonl")) || parent == "subagents"
}

/// A done marker: one line, 1 to 100 characters, not blank. Surrounding blanks are dropped,
/// as they are when a reply's last line is compared with it.
pub fn validate_marker(marker: &str) -> Result<String, ValidationError> {
    let m = marker.trim();
    if m.is_empty() || m.chars().count() > 100 || m.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "doneMarker",
            "must be one line of 1 to 100 characters",
        ));
    }
    Ok(m.to_owned())
}

/// Whether the last non-empty line of `text` is exactly `marker` (surrounding blanks ignored).
pub fn ends_with_marker(text: &str, marker: &str) -> bool {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()) == Some(marker)
}
