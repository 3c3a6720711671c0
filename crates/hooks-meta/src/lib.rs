//! What hooks-app knows about a Claude Code session.
//!
//! - [`state`]: the app's own per-session files, `<data-dir>/sessions/<id>.json`, holding
//!   the once-per-hook stamps, the cwd, the transcript path and the origin. One small file
//!   per session, so each operation costs the same however many sessions exist.
//! - [`transcript`]: facts read from Claude Code's own transcript, from the end of the file
//!   in bounded chunks.
//!
//! [`MetaStore`] puts the two together behind the core's `SessionMeta` port.

pub mod state;
pub mod transcript;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hooks_core::ports::{MetaError, SessionMeta, StampResult};
use hooks_core::stamp::Timestamp;
use hooks_core::*;

pub use state::SessionFiles;
pub use transcript::{MAX_SCAN_BYTES, read_facts, read_facts_counted};

/// The `SessionMeta` adapter: session files plus transcripts under a Claude home.
#[derive(Debug, Clone)]
pub struct MetaStore {
    files: SessionFiles,
    claude_home: PathBuf,
}

impl MetaStore {
    /// `data_dir` holds the `sessions/` folder; `claude_home` is Claude Code's folder
    /// (`~/.claude` or `$CLAUDE_CONFIG_DIR`), whose `projects/` holds transcripts.
    pub fn new(data_dir: &Path, claude_home: &Path) -> Self {
        Self {
            files: SessionFiles::new(data_dir),
            claude_home: claude_home.to_owned(),
        }
    }

    pub fn files(&self) -> &SessionFiles {
        &self.files
    }

    /// The session's transcript: the remembered path if it exists, else
    /// `<claude-home>/projects/*/<session>.jsonl`.
    pub fn find_transcript(
        &self,
        session: &SessionId,
        remembered: Option<&str>,
    ) -> Option<PathBuf> {
        if let Some(p) = remembered.map(Path::new).filter(|p| p.is_file()) {
            return Some(p.to_owned());
        }
        let name = format!("{}.jsonl", session.as_str());
        std::fs::read_dir(self.claude_home.join("projects"))
            .ok()?
            .flatten()
            .map(|e| e.path().join(&name))
            .find(|p| p.is_file())
    }
}

#[async_trait]
impl SessionMeta for MetaStore {
    async fn state(&self, session: &SessionId) -> Result<SessionState, MetaError> {
        self.files.read(session)
    }

    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        self.files.remember(session, update)
    }

    async fn facts(&self, session: &SessionId) -> Result<SessionFacts, MetaError> {
        let state = self.files.read(session)?;
        let transcript = match self.find_transcript(session, state.transcript_path.as_deref()) {
            Some(p) => Some(
                read_facts(&p)
                    .map_err(|e| MetaError::Io(format!("could not read {}: {e}", p.display())))?,
            ),
            None => None,
        };
        Ok(SessionFacts { state, transcript })
    }

    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        self.files.stamp(session, hook, at)
    }
}
