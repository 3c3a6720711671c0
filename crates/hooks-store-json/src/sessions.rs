//! Per-session state files.
//!
//! `<data-dir>/sessions/<id>.json`:
//! `{"sessionId", "cwd", "transcriptPath", "origin", "hooks": {"<hookId>": "<iso>"}}`.
//! `hooks` is the map of once-per-hook stamps, and `lease` the session's run lease while a
//! follow-up runs on it (`{"runId", "hookId", "owner", "host", "ownerPid", "ownerStart",
//! "childPid", "childStart", "startedAt", "expiresAt"}`); it is merged, never replaced, and a stamp is
//! only ever removed with its whole file by an explicit prune. Changes hold the lock file
//! `sessions/.lock`, so a stamp is a test-and-set across processes: of two processes
//! stamping one (hook, session) pair, exactly one wins. Files are written to a temp file,
//! fsynced and renamed; folders are `0700`, files `0600`.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hooks_core::ports::{Begin, MetaError, SessionRecord, SessionStore, StampResult};
use hooks_core::stamp::{self, Timestamp};
use hooks_core::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

const LOCK_FILE: &str = ".lock";
/// The largest session file read: stamps of every hook and a lease fit many times over.
const MAX_SESSION_BYTES: u64 = 1024 * 1024;

/// A session file's bytes, when it is a regular file (never a FIFO, never waited on).
fn read_session_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    hooks_platform::read_regular(
        path,
        hooks_platform::ReadLimit::bytes(MAX_SESSION_BYTES).own_only(),
    )
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transcript_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    #[serde(default)]
    hooks: BTreeMap<String, String>,
    /// The run lease, while a follow-up runs on the session (or its runner died).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease: Option<Value>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// A run lease as the session file keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseDto {
    run_id: String,
    hook_id: String,
    owner: String,
    #[serde(default)]
    host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_start: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    child_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    child_start: Option<u64>,
    started_at: String,
    expires_at: String,
}

fn process(pid: Option<u32>, start: Option<u64>) -> Option<ProcessRef> {
    Some(ProcessRef {
        pid: pid?,
        start: start?,
    })
}

impl LeaseDto {
    fn from_lease(l: &RunLease) -> Self {
        Self {
            run_id: l.run_id.clone(),
            hook_id: l.hook_id.to_string(),
            owner: l.owner.clone(),
            host: l.host.clone(),
            owner_pid: l.owner_process.map(|p| p.pid),
            owner_start: l.owner_process.map(|p| p.start),
            child_pid: l.child.map(|p| p.pid),
            child_start: l.child.map(|p| p.start),
            started_at: stamp::format(l.started_at),
            expires_at: stamp::format(l.expires_at),
        }
    }
    fn to_lease(&self) -> Option<RunLease> {
        Some(RunLease {
            run_id: self.run_id.clone(),
            hook_id: HookId::parse(&self.hook_id).ok()?,
            owner: self.owner.clone(),
            host: self.host.clone(),
            owner_process: process(self.owner_pid, self.owner_start),
            child: process(self.child_pid, self.child_start),
            started_at: stamp::parse(&self.started_at)?,
            expires_at: stamp::parse(&self.expires_at)?,
        })
    }
}

impl SessionDto {
    /// The lease, if there is one. A lease that cannot be read still holds the session
    /// until it expires: it is shown as a lease of an unknown run that expired at once,
    /// so the next fire records it and clears it.
    fn lease(&self) -> Option<RunLease> {
        let v = self.lease.as_ref()?;
        serde_json::from_value::<LeaseDto>(v.clone())
            .ok()
            .and_then(|d| d.to_lease())
            .or_else(|| {
                Some(RunLease {
                    run_id: "unreadable".to_owned(),
                    hook_id: HookId::parse("unknown").ok()?,
                    owner: "unknown".to_owned(),
                    host: String::new(),
                    owner_process: None,
                    child: None,
                    started_at: time::OffsetDateTime::UNIX_EPOCH,
                    expires_at: time::OffsetDateTime::UNIX_EPOCH,
                })
            })
    }
    fn set_lease(&mut self, l: Option<&RunLease>) {
        self.lease = l.and_then(|l| serde_json::to_value(LeaseDto::from_lease(l)).ok());
    }
    fn to_state(&self) -> SessionState {
        {
            let mut o = SessionState::default();
            o.cwd = self.cwd.clone();
            o.transcript_path = self.transcript_path.clone();
            o.origin = self.origin.as_deref().and_then(|o| Origin::parse(o).ok());
            o.stamps = self
                .hooks
                .iter()
                .filter_map(|(k, v)| Some((HookId::parse(k).ok()?, stamp::parse(v)?)))
                .collect();
            // The meta tells it from the agent's files; it is not kept.
            o.agent = None;
            o
        }
    }
}

/// The session files in one data folder.
#[derive(Debug, Clone)]
pub struct SessionFiles {
    dir: PathBuf,
}

/// The session a file in the folder is of, if it is a session file.
fn session_of(e: &fs::DirEntry) -> Option<SessionId> {
    let name = e.file_name();
    SessionId::parse(name.to_str()?.strip_suffix(".json")?).ok()
}

impl SessionFiles {
    /// The session files there are, with their sessions (none when the folder is not there).
    fn files(&self) -> Result<Vec<(SessionId, fs::DirEntry)>, MetaError> {
        match fs::read_dir(&self.dir) {
            Ok(rd) => Ok(rd
                .flatten()
                .filter_map(|e| Some((session_of(&e)?, e)))
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io(&self.dir, "list", &e)),
        }
    }
}

fn io(path: &Path, what: &str, e: &std::io::Error) -> MetaError {
    MetaError::Io(format!("could not {what} {}: {e}", path.display()))
}

impl SessionFiles {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("sessions"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a session. A `SessionId` is validated, so it is a safe file name.
    pub fn path(&self, session: &SessionId) -> PathBuf {
        self.dir.join(format!("{}.json", session.as_str()))
    }

    fn lock(&self) -> Result<crate::fsutil::DirLock, MetaError> {
        crate::fsutil::create_dir_private(&self.dir).map_err(|e| io(&self.dir, "create", &e))?;
        let p = self.dir.join(LOCK_FILE);
        crate::fsutil::DirLock::acquire(&p).map_err(|e| io(&p, "open or lock", &e))
    }

    fn read_dto(&self, session: &SessionId) -> Result<SessionDto, MetaError> {
        let path = self.path(session);
        match read_session_file(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                MetaError::Corrupt(format!(
                    "{}: not a valid session file at line {}, column {}: {e}",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SessionDto::default()),
            Err(e) => Err(io(&path, "read", &e)),
        }
    }

    /// Writes a session file atomically (temp file, rename). With `durable`, the file and
    /// the folder are fsynced too: stamps are, because "never twice" rests on them.
    fn write_dto(
        &self,
        session: &SessionId,
        dto: &SessionDto,
        durable: bool,
    ) -> Result<(), MetaError> {
        let path = self.path(session);
        let tmp = self
            .dir
            .join(format!(".{}.tmp.{}", session.as_str(), std::process::id()));
        let bytes = serde_json::to_vec_pretty(dto).map_err(|e| MetaError::Io(e.to_string()))?;
        let r = (|| -> std::io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            if durable {
                hooks_platform::sync::sync_file(&f)?;
            }
            fs::rename(&tmp, &path)?;
            if durable {
                hooks_platform::sync::sync_dir(&self.dir)?;
            }
            Ok(())
        })();
        r.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io(&path, "write", &e)
        })
    }

    /// The session's state; a session never seen has the default (empty) state.
    pub fn read(&self, session: &SessionId) -> Result<SessionState, MetaError> {
        Ok(self.read_dto(session)?.to_state())
    }

    /// Merges what an event said about the session. Writes only when something changed, and
    /// without fsync: this sits on the Claude Code hook's path, and what it keeps (cwd,
    /// transcript path) is read again from the transcript if a crash loses it. Only the
    /// origin could be lost, on a machine crash within seconds of the event.
    pub fn remember(
        &self,
        session: &SessionId,
        u: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        let apply = |d: &mut SessionDto| -> bool {
            let mut changed = d.session_id.is_none();
            d.session_id = Some(session.to_string());
            // A conversation's folder is set once: a later event cannot move it.
            if d.cwd.is_none() && u.cwd.is_some() {
                d.cwd.clone_from(&u.cwd);
                changed = true;
            }
            if u.transcript_path.is_some() && d.transcript_path != u.transcript_path {
                d.transcript_path.clone_from(&u.transcript_path);
                changed = true;
            }
            if let Some(o) = u.origin
                && d.origin.as_deref() != Some(o.as_str())
            {
                d.origin = Some(o.as_str().to_owned());
                changed = true;
            }
            changed
        };
        // Most events repeat what is already known: check without the lock first.
        let mut peek = self.read_dto(session)?;
        if !apply(&mut peek) {
            return Ok(peek.to_state());
        }
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if apply(&mut d) {
            self.write_dto(session, &d, false)?;
        }
        Ok(d.to_state())
    }

    /// The session's state and its run lease, from one read.
    pub fn read_with_lease(
        &self,
        session: &SessionId,
    ) -> Result<(SessionState, Option<RunLease>), MetaError> {
        let d = self.read_dto(session)?;
        Ok((d.to_state(), d.lease()))
    }

    /// The atomic start of a run: when the session holds no lease and the lease's hook no
    /// stamp, stamps the pair and takes the lease, durably. A lease found is handed back
    /// for the caller to judge (a dead one is accounted for before the session is free).
    pub fn begin_run(&self, session: &SessionId, lease: &RunLease) -> Result<Begin, MetaError> {
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if let Some(held) = d.lease() {
            return Ok(Begin::Held(held));
        }
        if let Some(prev) = d.hooks.get(lease.hook_id.as_str()) {
            return Ok(Begin::Stamped {
                at: stamp::parse(prev).unwrap_or(lease.started_at),
            });
        }
        d.session_id = Some(session.to_string());
        d.hooks
            .insert(lease.hook_id.to_string(), stamp::format(lease.started_at));
        d.set_lease(Some(lease));
        self.write_dto(session, &d, true)?;
        Ok(Begin::Won)
    }

    /// Rewrites the lease of run `lease.run_id`; `false` if the session's lease is not
    /// that run's any more.
    pub fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if d.lease().is_none_or(|l| l.run_id != lease.run_id) {
            return Ok(false);
        }
        d.set_lease(Some(lease));
        self.write_dto(session, &d, true)?;
        Ok(true)
    }

    /// Clears the session's lease if run `run_id` holds it.
    pub fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if d.lease().is_some_and(|l| l.run_id == run_id) {
            d.set_lease(None);
            self.write_dto(session, &d, true)?;
        }
        Ok(())
    }

    /// Every session's lease. Reads only the files that mention one.
    pub fn leases(&self) -> Result<Vec<(SessionId, RunLease)>, MetaError> {
        let mut out = Vec::new();
        for (id, e) in self.files()? {
            let Ok(bytes) = read_session_file(&e.path()) else {
                continue;
            };
            if !bytes.windows(7).any(|w| w == b"\"lease\"") {
                continue;
            }
            if let Some(l) = serde_json::from_slice::<SessionDto>(&bytes)
                .ok()
                .and_then(|d| d.lease())
            {
                out.push((id, l));
            }
        }
        Ok(out)
    }

    /// Test-and-set of the (hook, session) stamp.
    pub fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if let Some(prev) = d.hooks.get(hook.as_str()) {
            // An unreadable stamp still counts as stamped: never fire twice.
            return Ok(StampResult::Lost {
                at: stamp::parse(prev).unwrap_or(at),
            });
        }
        d.session_id = Some(session.to_string());
        d.hooks.insert(hook.to_string(), stamp::format(at));
        self.write_dto(session, &d, true)?;
        Ok(StampResult::Won)
    }

    /// Removes the hook's stamp on the session; whether there was one.
    pub fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        let _lock = self.lock()?;
        let mut d = self.read_dto(session)?;
        if d.hooks.remove(hook.as_str()).is_none() {
            return Ok(false);
        }
        self.write_dto(session, &d, true)?;
        Ok(true)
    }

    /// Removes session files not changed since `before` whose session is not in `keep`
    /// and holds no lease. The only way a stamp ever goes. Returns the sessions removed.
    pub fn prune(
        &self,
        before: Timestamp,
        keep: &HashSet<SessionId>,
    ) -> Result<Vec<SessionId>, MetaError> {
        let _lock = self.lock()?;
        let cutoff = std::time::SystemTime::from(before);
        let mut removed = Vec::new();
        for (id, e) in self.files()? {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m < cutoff);
            // A session with a lease is never pruned: its run is not accounted for yet.
            let leased =
                read_session_file(&e.path()).is_ok_and(|b| b.windows(7).any(|w| w == b"\"lease\""));
            if old && !keep.contains(&id) && !leased {
                fs::remove_file(e.path()).map_err(|err| io(&e.path(), "remove", &err))?;
                removed.push(id);
            }
        }
        Ok(removed)
    }

    /// Every session file that reads, with its state and lease.
    pub fn all(&self) -> Result<Vec<SessionRecord>, MetaError> {
        let mut out = Vec::new();
        for (id, _) in self.files()? {
            let d = self.read_dto(&id)?;
            out.push(SessionRecord {
                state: d.to_state(),
                lease: d.lease(),
                session: id,
            });
        }
        out.sort_by(|a, b| a.session.cmp(&b.session));
        Ok(out)
    }

    /// How many session files there are.
    pub fn count(&self) -> usize {
        fs::read_dir(&self.dir).map_or(0, |rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
    }
}

#[async_trait]
impl SessionStore for SessionFiles {
    async fn state(
        &self,
        session: &SessionId,
    ) -> Result<(SessionState, Option<RunLease>), MetaError> {
        self.read_with_lease(session)
    }
    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        SessionFiles::remember(self, session, update)
    }
    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        SessionFiles::stamp(self, session, hook, at)
    }
    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        SessionFiles::unstamp(self, session, hook)
    }
    async fn begin_run(&self, session: &SessionId, lease: &RunLease) -> Result<Begin, MetaError> {
        SessionFiles::begin_run(self, session, lease)
    }
    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        SessionFiles::update_lease(self, session, lease)
    }
    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        SessionFiles::end_lease(self, session, run_id)
    }
    async fn leases(&self) -> Result<Vec<(SessionId, RunLease)>, MetaError> {
        SessionFiles::leases(self)
    }
    async fn sessions(&self) -> Result<Vec<SessionRecord>, MetaError> {
        self.all()
    }
    async fn prune(
        &self,
        before: Timestamp,
        keep: &HashSet<SessionId>,
    ) -> Result<Vec<SessionId>, MetaError> {
        SessionFiles::prune(self, before, keep)
    }
}
