//! What the server asks of the program it serves beyond the core's service and store: the
//! port the composition root implements. Claude Code's hook input and where the store
//! lives are known there, never here.

use hooks_core::service::NotifyReport;

use crate::ApiError;

#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Where the store is, as the page names it.
    fn store_location(&self) -> String;

    /// Whether the store can be used now: `Err` says what is wrong with it.
    async fn health(&self) -> Result<(), String>;

    /// A Claude Code hook input (`on_session_end` when installed for `SessionEnd`), as
    /// `claude-hook` handles it: what was queued or skipped; nothing when it is ignored.
    /// `checked`: it came with the hook token, which whoever holds the hook's port may have
    /// seen, so it is believed only as far as the conversation's own transcript (under
    /// Claude Code's folder, the user's own file) bears it out.
    async fn hook_input(
        &self,
        body: &[u8],
        on_session_end: bool,
        checked: bool,
    ) -> Result<Vec<NotifyReport>, ApiError>;
}
