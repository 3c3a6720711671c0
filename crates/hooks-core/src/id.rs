//! The ids everything else refers to, and the error a value refused at the edge carries:
//! the leaf of the core's modules.

use std::fmt;

/// A value refused at the edge: which field, and which rule it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct ValidationError {
    /// The field that broke the rule, as files and the API name it.
    pub field: &'static str,
    /// The rule, and what was given.
    pub rule: String,
}

impl ValidationError {
    /// An error naming `field` and its `rule`.
    pub fn new(field: &'static str, rule: impl Into<String>) -> Self {
        Self {
            field,
            rule: rule.into(),
        }
    }
}

pub(crate) fn describe(s: &str) -> String {
    // Whole, as long as a path can be: a message never cuts the path it names.
    let mut shown: String = s.chars().take(4096).collect();
    if shown.len() < s.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// A conversation's id: `[A-Za-z0-9_-]{1,128}`, not starting with `-`. Only such ids ever
/// become part of a path or a command line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

impl SessionId {
    /// Checks a session id: 1 to 128 of letters, digits, `-` and `_`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        const RULE: &str = "must be 1 to 128 of A-Z a-z 0-9 _ - and not start with -";
        let ok = !s.is_empty()
            && s.len() <= 128
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(ValidationError::new(
                "sessionId",
                format!("{RULE} (got {})", describe(s)),
            ))
        }
    }
    /// As text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A hook's id: `[A-Za-z0-9_.-]{1,128}`, starting with a letter or digit. New ids are slugs
/// of the hook's name (see [`crate::model::slugify`]); older files may hold any id of that shape.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HookId(pub(crate) String);

impl HookId {
    /// Checks a hook id: 1 to 128 of lowercase letters, digits, `-` and `_`, not starting with `-` or `.`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.as_bytes()[0].is_ascii_alphanumeric()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(ValidationError::new(
                "id",
                format!(
                    "must be 1 to 128 of A-Z a-z 0-9 _ . - starting with a letter or digit (got {})",
                    describe(s)
                ),
            ))
        }
    }
    /// As text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HookId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
