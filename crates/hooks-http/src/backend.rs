//! What the server asks of the program it serves beyond the core's service and store: the
//! port the composition root implements. Claude Code's hook input, the session files and
//! the store's location are known there, never here.

use hooks_core::SessionId;
use hooks_core::service::NotifyReport;
use serde_json::Value;

use crate::ApiError;

/// Why text a person gave names no one conversation.
pub enum Lookup {
    /// Not a session id at all, or a prefix several conversations share: the rule broken.
    Invalid(String),
    /// Nothing known by that id or prefix.
    Unknown(String),
    /// The store or the session files could not be read.
    Failed(ApiError),
}

impl Lookup {
    /// What a person is told.
    pub fn message(&self) -> String {
        match self {
            Lookup::Invalid(m) | Lookup::Unknown(m) => m.clone(),
            Lookup::Failed(e) => e.message(),
        }
    }
}

/// What is known about one conversation: the `session --json` document and the same as
/// sentences, one `(label, text)` per line.
pub struct SessionView {
    pub json: Value,
    pub lines: Vec<(&'static str, String)>,
}

#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Where the store is, as the page names it.
    fn store_location(&self) -> String;

    /// Whether the store can be used now: `Err` says what is wrong with it.
    async fn health(&self) -> Result<(), String>;

    /// A Claude Code hook input (`on_session_end` when installed for `SessionEnd`), as
    /// `claude-hook` handles it: what was queued or skipped; nothing when it is ignored.
    async fn hook_input(
        &self,
        body: &[u8],
        on_session_end: bool,
    ) -> Result<Vec<NotifyReport>, ApiError>;

    /// The conversation `text` names: its whole id, or a prefix only one starts with.
    async fn find_session(&self, text: &str) -> Result<SessionId, Lookup>;

    /// What is known about a conversation.
    async fn session(&self, id: &SessionId) -> Result<SessionView, ApiError>;
}
