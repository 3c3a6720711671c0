//! What hooks-app knows about a Claude Code session.
//!
//! - the durable state of a session (its once-per-hook stamps, run lease, cwd, transcript
//!   path and origin) is not kept here: it lives beside the queue, behind the core's
//!   [`SessionStore`] port, which each store adapter implements;
//! - [`transcript`]: facts read from Claude Code's own transcript, from the end of the file
//!   in bounded chunks.
//! - [`settings`]: the model Claude Code's settings choose for a conversation's folder;
//! - [`live`]: whether a Claude Code process has the session open (its
//!   `<claude-home>/sessions/<pid>.json`), and whether a process is still the one a lease
//!   names (pid and start time from `/proc`).
//!
//! A run lease's holder is seen alive when it is on this host and its runner or its child
//! is alive; gone when it is on this host and neither is; unknown on another host, where
//! only the lease's expiry tells.
//!
//! [`MetaStore`] puts the store's session state and what this host can see together behind
//! the core's `SessionMeta` port.

pub mod codex;
pub mod live;
pub mod settings;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use hooks_core::ports::{Begin, BeginRun, MetaError, SessionMeta, SessionStore, StampResult};
use hooks_core::stamp::Timestamp;
use hooks_core::*;

pub use transcript::{MAX_SCAN_BYTES, read_facts, read_facts_counted};

/// The `SessionMeta` adapter: the store's session state plus transcripts under a Claude
/// home.
#[derive(Clone)]
pub struct MetaStore {
    sessions: Arc<dyn SessionStore>,
    claude_home: PathBuf,
    codex_home: Option<PathBuf>,
    host: String,
}

impl MetaStore {
    /// `sessions` keeps the sessions' durable state; `claude_home` is Claude Code's folder
    /// (`~/.claude` or `$CLAUDE_CONFIG_DIR`), whose `projects/` holds transcripts.
    pub fn new(sessions: Arc<dyn SessionStore>, claude_home: &Path) -> Self {
        Self {
            sessions,
            claude_home: claude_home.to_owned(),
            codex_home: None,
            host: String::new(),
        }
    }

    /// Also looks for conversations open in OpenAI's Codex, whose folder (`~/.codex` or
    /// `$CODEX_HOME`) is `codex_home`.
    pub fn with_codex_home(mut self, codex_home: impl Into<PathBuf>) -> Self {
        self.codex_home = Some(codex_home.into());
        self
    }

    /// The agent process that has `session` open: a Claude Code session, else a Codex
    /// thread.
    fn open_now(&self, session: &SessionId) -> Option<OpenSession> {
        live::open_session(&self.claude_home, session).or_else(|| {
            self.codex_home
                .as_deref()
                .and_then(|h| live::open_codex_thread(h, session))
        })
    }

    /// Names this host as leases do, so that leases taken here are judged by their
    /// processes. Without it every lease is judged by its expiry alone.
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    /// What can be seen of a lease's holder from here.
    pub fn judge(&self, lease: RunLease) -> LeaseInfo {
        // The daemon that took the lease is its holder: it alone records the run's outcome.
        // A run whose daemon died is over for the record even if its claude still runs
        // (where no parent-death signal ended it, as on macOS): the next daemon ends it
        // and records it interrupted. Only a lease that names no daemon is judged by its
        // run's process.
        let holder = if self.host.is_empty() || lease.host != self.host {
            Holder::Unknown
        } else if let Some(owner) = lease.owner_process {
            if live::is_alive(&owner) {
                Holder::Alive
            } else {
                Holder::Gone
            }
        } else if let Some(child) = lease.child {
            if live::is_alive(&child) {
                Holder::Alive
            } else {
                Holder::Gone
            }
        } else {
            Holder::Unknown
        };
        LeaseInfo { lease, holder }
    }

    pub fn sessions(&self) -> &Arc<dyn SessionStore> {
        &self.sessions
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

/// `st` with its agent, as its remembered transcript path tells (nothing is read).
fn with_agent(mut st: SessionState) -> SessionState {
    st.agent = codex::agent_of_path(st.transcript_path.as_deref());
    st
}

#[async_trait]
impl SessionMeta for MetaStore {
    async fn state(&self, session: &SessionId) -> Result<SessionState, MetaError> {
        Ok(with_agent(self.sessions.state(session).await?.0))
    }

    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        Ok(with_agent(self.sessions.remember(session, update).await?))
    }

    async fn facts(&self, session: &SessionId) -> Result<SessionFacts, MetaError> {
        let (state, lease) = self.sessions.state(session).await?;
        let state = with_agent(state);
        let transcript = match self.find_transcript(session, state.transcript_path.as_deref()) {
            Some(p) => Some(
                read_facts(&p)
                    .map_err(|e| MetaError::Io(format!("could not read {}: {e}", p.display())))?,
            ),
            None => None,
        };
        let mut facts = {
            let mut o = SessionFacts::default();
            o.state = state;
            o.transcript = transcript;
            o.open = self.open_now(session);
            o.lease = lease.map(|l| self.judge(l));
            o.settings_model = None;
            o
        };
        facts.folder_owner = facts.cwd().and_then(|c| foreign_owner(Path::new(c)));
        // Only where the conversation names no model of its own (no reply yet).
        if facts
            .transcript
            .as_ref()
            .and_then(|t| t.model.as_ref())
            .is_none()
        {
            facts.settings_model =
                settings::settings_model(&self.claude_home, facts.cwd().map(Path::new));
        }
        Ok(facts)
    }

    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        self.sessions.stamp(session, hook, at).await
    }

    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        self.sessions.unstamp(session, hook).await
    }

    async fn begin_run(
        &self,
        session: &SessionId,
        lease: &RunLease,
        _now: Timestamp,
    ) -> Result<BeginRun, MetaError> {
        Ok(match self.sessions.begin_run(session, lease).await? {
            Begin::Won => BeginRun::Won,
            Begin::Stamped { at } => BeginRun::Stamped { at },
            Begin::Held(l) => BeginRun::Busy(Box::new(self.judge(l))),
        })
    }

    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        self.sessions.update_lease(session, lease).await
    }

    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        self.sessions.end_lease(session, run_id).await
    }

    async fn leases(&self) -> Result<Vec<(SessionId, LeaseInfo)>, MetaError> {
        Ok(self
            .sessions
            .leases()
            .await?
            .into_iter()
            .map(|(s, l)| (s, self.judge(l)))
            .collect())
    }

    async fn open(&self, session: &SessionId) -> Result<Option<OpenSession>, MetaError> {
        Ok(self.open_now(session))
    }

    async fn sessions_starting(&self, prefix: &str) -> Result<(Vec<SessionId>, String), MetaError> {
        let mut ids: std::collections::BTreeSet<String> = self
            .sessions
            .sessions()
            .await?
            .into_iter()
            .map(|r| r.session.as_str().to_owned())
            .filter(|s| s.starts_with(prefix))
            .collect();
        let projects = self.claude_home.join("projects");
        for dir in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = f.file_name();
                if let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl"))
                    && id.starts_with(prefix)
                {
                    ids.insert(id.to_owned());
                }
            }
        }
        Ok((
            ids.iter()
                .filter_map(|s| SessionId::parse(s).ok())
                .collect(),
            format!(
                "the sessions hooks-app remembers and the transcripts under {}",
                projects.display()
            ),
        ))
    }
}

/// Who owns `dir`, when another user does (a folder that cannot be read is nobody's).
fn foreign_owner(dir: &Path) -> Option<String> {
    let meta = std::fs::metadata(dir).ok()?;
    hooks_platform::files::own(&meta).err().map(|_| {
        use std::os::unix::fs::MetadataExt;
        hooks_platform::account::name_of(meta.uid())
    })
}
