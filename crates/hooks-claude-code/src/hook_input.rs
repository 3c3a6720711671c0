//! What Claude Code writes to a hook on stdin (or POSTs to an `http` hook), exactly as it
//! sends it: the wire type, apart from the domain event the app makes of it.

use serde::Deserialize;

/// The most of a hook input read.
pub const MAX_INPUT: u64 = 1024 * 1024;

/// The fields of a hook input this app reads; the rest are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HookInput {
    pub hook_event_name: String,
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// `Stop`, `StopFailure`: the reply's (or the error's) text.
    #[serde(default)]
    pub last_assistant_message: Option<String>,
    /// Set when a subagent's turn ended.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// `StopFailure`: what stopped the turn (`rate_limit`, `overloaded`, …).
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_details: Option<String>,
}

/// Why a hook input was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    TooLarge,
    NotAHookInput(String),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::TooLarge => write!(f, "the hook input is over {MAX_INPUT} bytes"),
            InputError::NotAHookInput(e) => write!(f, "not a Claude Code hook input ({e})"),
        }
    }
}

impl std::error::Error for InputError {}

impl HookInput {
    /// Reads one hook input, at most [`MAX_INPUT`] bytes of JSON.
    pub fn parse(buf: &[u8]) -> Result<Self, InputError> {
        if buf.len() as u64 > MAX_INPUT {
            return Err(InputError::TooLarge);
        }
        serde_json::from_slice(buf).map_err(|e| InputError::NotAHookInput(e.to_string()))
    }

    /// The texts of a `StopFailure` that may state when a limit resets.
    pub fn failure_texts(&self) -> Vec<String> {
        [&self.last_assistant_message, &self.error_details]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The hook's `cwd` when it is the conversation's project folder: the one whose name,
    /// as Claude Code writes it, is the folder the transcript is kept in. Claude Code
    /// reports the shell's folder, which the agent may have `cd`'d away from (into a
    /// package that brings its own `.claude/settings.json`); such a `cwd` is `None`, and
    /// the folder is read from the transcript's first line when a follow-up starts.
    pub fn project_cwd(&self) -> Option<&str> {
        let cwd = self.cwd.as_deref().filter(|c| !c.is_empty())?;
        match &self.transcript_path {
            None => Some(cwd),
            Some(t) => {
                let dir = std::path::Path::new(t).parent()?.file_name()?.to_str()?;
                (dir == project_dir_name(cwd)).then_some(cwd)
            }
        }
    }
}

/// The name Claude Code gives a project's folder under `projects/`: every character but
/// ASCII letters and digits becomes `-` (a longer name is cut and hashed by Claude Code,
/// and then never equals this: the transcript decides).
pub fn project_dir_name(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_the_agent_cd_d_into_is_not_the_projects() {
        let input = |cwd: &str| {
            HookInput::parse(
                serde_json::json!({"session_id": "s", "hook_event_name": "Stop", "cwd": cwd,
                    "transcript_path": "/h/.claude/projects/-home-me-enc-test-dir-sub-dir-x-y-z/s.jsonl"})
                .to_string()
                .as_bytes(),
            )
            .unwrap()
        };
        // As measured on 2.1.197: `/home/me/enc_test.dir/sub dir_x@y+z`.
        let home = input("/home/me/enc_test.dir/sub dir_x@y+z");
        assert_eq!(
            home.project_cwd(),
            Some("/home/me/enc_test.dir/sub dir_x@y+z")
        );
        let cd = input("/home/me/enc_test.dir/sub dir_x@y+z/node_modules/evil-pkg");
        assert_eq!(cd.project_cwd(), None);
    }

    #[test]
    fn a_stop_failure_as_2_1_332_sends_it_is_read() {
        let sent = r#"{"session_id":"79c35a1c-93af-408c-b4f6-e360045ed872","transcript_path":"/h/.claude/projects/-p/79c35a1c.jsonl","cwd":"/p","prompt_id":"01946d33","effort":{"level":"medium"},"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"You've hit your 5-hour limit · resets 7:20am (UTC)"}"#
            .as_bytes();
        let i = HookInput::parse(sent).unwrap();
        assert_eq!(i.hook_event_name, "StopFailure");
        assert_eq!(i.error.as_deref(), Some("rate_limit"));
        assert_eq!(
            i.failure_texts(),
            ["You've hit your 5-hour limit · resets 7:20am (UTC)"]
        );
        assert!(matches!(
            HookInput::parse(br#"{"session_id": 1}"#),
            Err(InputError::NotAHookInput(_))
        ));
        let big = vec![b' '; MAX_INPUT as usize + 1];
        assert_eq!(HookInput::parse(&big), Err(InputError::TooLarge));
    }
}
