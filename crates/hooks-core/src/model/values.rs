//! The validated values a hook is made of: its delay, prompt file, caps and name; each
//! constructor checks one field's rule and names the field in its error.

use std::fmt;

use crate::id::ValidationError;
use crate::id::describe;

/// The folder, relative to a workspace, that hook prompt files live in.
pub const PROMPT_DIR: &str = ".claude/agents/hooks";
/// The longest delay a hook may have: one day.
pub const MAX_DELAY_SECONDS: u32 = 86_400;
/// How many firings a hook's history keeps (the newest).
pub const HISTORY_CAP: usize = 200;
/// The marker an agent ends its reply with when the task is done.
pub const DONE_MARKER: &str = "DONE";
/// The marker a follow-up ends its reply with.
pub const COMPLETED_MARKER: &str = "COMPLETED";

/// How long after the event a hook fires: a whole number of seconds, 0 to 86400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delay(pub(super) u32);

/// A whole number in `0..=max`, from a number or a decimal string; the error names `field`
/// and says `rule`.
pub(super) fn whole_in(
    field: &'static str,
    rule: &str,
    max: u32,
    n: Result<i64, &str>,
) -> Result<u32, ValidationError> {
    match n {
        Ok(n) => u32::try_from(n)
            .ok()
            .filter(|v| *v <= max)
            .ok_or_else(|| ValidationError::new(field, format!("{rule} (got {n})"))),
        Err(s) => Err(ValidationError::new(
            field,
            format!("{rule} (got {})", describe(s)),
        )),
    }
}

pub(super) const DELAY_RULE: &str = "must be a whole number from 0 to 86400 (seconds), or a length of time such as 30s, 5m, 2h or 1d up to a day";
pub(super) const CAP_RULE: &str = "must be a whole number ≥ 0";

impl Delay {
    /// From a number of seconds, 0 to 86400; the error names `delaySeconds`.
    pub fn from_seconds(s: i64) -> Result<Self, ValidationError> {
        whole_in("delaySeconds", DELAY_RULE, MAX_DELAY_SECONDS, Ok(s)).map(Self)
    }
    /// As typed on a command line or a form: whole seconds, or a length of time in the one
    /// form every length takes (`30s`, `5m`, `2h`, `1d`; [`crate::span::parse_span`]).
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let secs = match s.trim().parse::<i64>() {
            Ok(n) => Ok(n),
            Err(_) if s.trim().starts_with('-') => Err(s),
            Err(_) => crate::span::parse_span("delaySeconds", s)
                .map(|d| d.whole_seconds())
                .map_err(|_| s),
        };
        whole_in("delaySeconds", DELAY_RULE, MAX_DELAY_SECONDS, secs).map(Self)
    }
    /// In seconds.
    pub fn seconds(self) -> u32 {
        self.0
    }
    /// As a length of time.
    pub fn duration(self) -> time::Duration {
        time::Duration::seconds(i64::from(self.0))
    }
}

/// A prompt file's path relative to a workspace: a `.md` file directly in
/// `.claude/agents/hooks/`, with no `..`. An absolute path to a file directly in a
/// `.claude/agents/hooks/` folder stands for that file in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PromptFile(pub(super) String);

impl PromptFile {
    /// Checks a prompt file's path: directly in `.claude/agents/hooks/`, ending `.md`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let field = "promptFile";
        let rel = s.trim().trim_start_matches('/');
        if rel.chars().any(|c| c.is_control() || c == '\\') {
            return Err(ValidationError::new(
                field,
                "must not hold control characters or backslashes",
            ));
        }
        let parts: Vec<&str> = rel
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") {
            return Err(ValidationError::new(
                field,
                format!("must not contain '..' (got {})", describe(s)),
            ));
        }
        let Some((file, mut dir)) = parts.split_last() else {
            return Err(ValidationError::new(field, "must not be empty"));
        };
        let depth = PROMPT_DIR.split('/').count();
        if s.trim().starts_with('/') && dir.len() > depth {
            dir = &dir[dir.len() - depth..];
        }
        let is_md = file.len() > 3 && file.to_ascii_lowercase().ends_with(".md");
        if !is_md {
            return Err(ValidationError::new(
                field,
                format!("must be a .md file (got {})", describe(s)),
            ));
        }
        if dir.join("/") != PROMPT_DIR {
            return Err(ValidationError::new(
                field,
                format!(
                    "must be a file directly in {PROMPT_DIR}/ of the workspace, as \
                     {PROMPT_DIR}/NAME.md or an absolute path ending so (got {})",
                    describe(s)
                ),
            ));
        }
        Ok(Self(format!("{PROMPT_DIR}/{file}")))
    }
    /// The path relative to a workspace, with `/` separators.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PromptFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The largest context, in thousands of tokens, a conversation may have to be followed up;
/// 0 means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextCap(pub(super) u32);

impl ContextCap {
    /// No cap.
    pub const NONE: ContextCap = ContextCap(0);

    /// From thousands of tokens; the error names `maxContextK`.
    pub fn from_k(k: i64) -> Result<Self, ValidationError> {
        whole_in("maxContextK", CAP_RULE, u32::MAX, Ok(k)).map(Self)
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        whole_in(
            "maxContextK",
            CAP_RULE,
            u32::MAX,
            s.trim().parse::<i64>().map_err(|_| s),
        )
        .map(Self)
    }
    /// In thousands of tokens (0: no cap).
    pub fn k(self) -> u32 {
        self.0
    }
    /// The cap in tokens, or `None` when there is no cap.
    pub fn tokens(self) -> Option<u64> {
        (self.0 > 0).then(|| u64::from(self.0) * 1000)
    }
}

/// How late past its due time an entry may still be followed up, in seconds (the machine
/// slept, the daemon was down); 0 means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MaxLateness(pub(super) u32);

pub(super) const LATENESS_RULE: &str =
    "must be a whole number of seconds from 0 to 2592000 (30 days; 0 for no limit)";

impl MaxLateness {
    /// No limit.
    pub const NONE: MaxLateness = MaxLateness(0);

    /// From a number of seconds; the error names `maxLatenessSeconds`.
    pub fn from_seconds(n: i64) -> Result<Self, ValidationError> {
        whole_in("maxLatenessSeconds", LATENESS_RULE, 2_592_000, Ok(n)).map(Self)
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        whole_in(
            "maxLatenessSeconds",
            LATENESS_RULE,
            2_592_000,
            s.trim().parse::<i64>().map_err(|_| s),
        )
        .map(Self)
    }
    /// In seconds (0: no limit).
    pub fn seconds(self) -> u32 {
        self.0
    }
    /// The limit, or `None` when there is none.
    pub fn limit(self) -> Option<time::Duration> {
        (self.0 > 0).then(|| time::Duration::seconds(i64::from(self.0)))
    }
}

/// The most a follow-up of a hook may cost, in US dollars, kept in millionths of a dollar;
/// 0 means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CostCap(pub(super) u64);

pub(super) const COST_RULE: &str = "must be a number of US dollars from 0 to 10000 (0 for no cap)";

impl CostCap {
    /// No cap.
    pub const NONE: CostCap = CostCap(0);

    /// From US dollars, 0 to 10000; the error names `maxCostUsd`.
    pub fn from_usd(usd: f64) -> Result<Self, ValidationError> {
        if usd.is_finite() && (0.0..=10_000.0).contains(&usd) {
            let micros = (usd * 1e6).round() as u64;
            // A cap too small to keep would be kept as 0, which means no cap at all: that
            // would fail open.
            if usd > 0.0 && micros == 0 {
                return Err(ValidationError::new(
                    "maxCostUsd",
                    format!(
                        "must be 0 (no cap) or at least 0.000001 US dollars (got {usd}, which would round to no cap)"
                    ),
                ));
            }
            Ok(Self(micros))
        } else {
            Err(ValidationError::new(
                "maxCostUsd",
                format!("{COST_RULE} (got {usd})"),
            ))
        }
    }
    /// From text, as the CLI and forms give it.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let t = s.trim().trim_start_matches('$');
        match t.parse::<f64>() {
            Ok(v) => Self::from_usd(v),
            Err(_) => Err(ValidationError::new(
                "maxCostUsd",
                format!("{COST_RULE} (got {})", describe(s)),
            )),
        }
    }
    /// The cap in dollars, or `None` when there is no cap.
    pub fn usd(self) -> Option<f64> {
        (self.0 > 0).then(|| self.0 as f64 / 1e6)
    }
}

/// A hook's name: 1 to 200 characters, no control characters.
pub fn validate_name(name: &str) -> Result<String, ValidationError> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > 200 || n.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "name",
            "must be 1 to 200 characters with no control characters",
        ));
    }
    Ok(n.to_owned())
}
