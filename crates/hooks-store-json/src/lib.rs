//! The hook store on one JSON file, `<data-dir>/hooks.json`, in the original module's
//! format, plus the append-only run log `<data-dir>/runs.jsonl`.
//!
//! Every change takes an exclusive lock on the stable file `hooks.lock`, reads the store
//! fresh, applies the change with the core's queue rules, writes a temp file with a unique
//! name in the same folder, fsyncs it, keeps the current file as `hooks.json.bak`, renames
//! the temp file over `hooks.json` and fsyncs the folder. Readers never see a half-written
//! file and nothing is cached between operations, so several processes can share the
//! folder. A file that does not parse is an error naming the file and position; it is
//! never treated as empty and never overwritten.

mod dto;
mod fsutil;
mod scan;
mod sessions;

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hooks_core::decide::EnqueueDecision;
use hooks_core::ports::*;
use hooks_core::stamp::Timestamp;
use hooks_core::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use time::Duration;

pub use dto::FileDto;
use dto::{HookDto, KeyDto, PendingDto, RulesDto, RunDto};
use fsutil::{DirLock, create_dir_private, io_err};
pub use sessions::SessionFiles;

/// The store file's name in the data folder.
pub const STORE_FILE: &str = "hooks.json";
/// The last good copy of the store file.
pub const BACKUP_FILE: &str = "hooks.json.bak";
/// The lock file every change holds.
pub const LOCK_FILE: &str = "hooks.lock";
/// The run log.
pub const RUNS_FILE: &str = "runs.jsonl";
const TEMP_PREFIX: &str = "hooks.json.tmp.";

/// The JSON-file hook store.
#[derive(Debug, Clone)]
pub struct JsonStore {
    dir: PathBuf,
    path: PathBuf,
    /// The largest store file read; a larger one is refused before it is read.
    max_bytes: u64,
}

/// The largest store file read unless [`JsonStore::with_max_bytes`] says otherwise: far
/// above what a million queued entries take, far below what a memory budget fears.
pub const DEFAULT_MAX_STORE_BYTES: u64 = 256 * 1024 * 1024;

/// The store as read for one operation.
struct State {
    file: FileDto,
    pending: Vec<PendingEntry>,
    /// Each entry as read, with its stored bytes: an entry no operation changed is written
    /// back as it was, neither re-formatted nor re-serialised.
    originals: HashMap<EntryKey, (PendingEntry, Box<RawValue>)>,
    /// Pending entries that do not validate: kept as they are, never claimed.
    invalid: Vec<Box<RawValue>>,
}

impl State {
    fn hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError> {
        match self.file.hooks.get(id.as_str()) {
            None => Ok(None),
            Some(raw) => HookDto::from_raw(id.as_str(), raw)
                .and_then(|d| d.to_hook(id.as_str()))
                .map(Some)
                .map_err(|e| invalid_hook(id.as_str(), &e)),
        }
    }

    fn hooks(&self) -> Result<Vec<Hook>, StoreError> {
        self.file
            .hooks
            .iter()
            .map(|(k, raw)| {
                HookDto::from_raw(k, raw)
                    .and_then(|d| d.to_hook(k))
                    .map_err(|e| invalid_hook(k, &e))
            })
            .collect()
    }

    fn put_hook(&mut self, hook: &Hook) -> Result<(), StoreError> {
        let raw = HookDto::rewrite(self.file.hooks.get(hook.id.as_str()).map(|r| &**r), hook)
            .ok_or_else(|| StoreError::Io(format!("could not serialise hook {}", hook.id)))?;
        self.file.hooks.insert(hook.id.to_string(), raw);
        Ok(())
    }

    fn into_file(mut self) -> FileDto {
        let mut out: Vec<Box<RawValue>> =
            Vec::with_capacity(self.pending.len() + self.invalid.len());
        for e in &self.pending {
            let extra = match self.originals.remove(&e.key()) {
                Some((orig, raw)) if orig == *e => {
                    out.push(raw);
                    continue;
                }
                Some((_, raw)) => dto::unknown_fields(&raw, &dto::PENDING_FIELDS),
                None => Map::new(),
            };
            if let Ok(raw) = serde_json::value::to_raw_value(&PendingDto::from_entry(e, extra)) {
                out.push(raw);
            }
        }
        out.append(&mut self.invalid);
        self.file.pending = out;
        self.file
    }
}

fn invalid_hook(key: &str, e: &ValidationError) -> StoreError {
    StoreError::Corrupt(format!("{STORE_FILE}: hook {key:?}: {e}"))
}

impl JsonStore {
    /// Opens the store in `dir`, creating the folder (`0700`) and seeding the file with the
    /// `post-task` and `continue-after-limit` hooks when it does not exist yet.
    pub fn open(dir: &Path, now: Timestamp) -> Result<Self, StoreError> {
        fsutil::own_store_dir(dir, true)?;
        create_dir_private(dir).map_err(|e| io_err(dir, "create the data folder", &e))?;
        let store = Self {
            dir: dir.to_owned(),
            path: dir.join(STORE_FILE),
            max_bytes: DEFAULT_MAX_STORE_BYTES,
        };
        if !store.path.exists() {
            let _lock = store.lock()?;
            if !store.path.exists() {
                let mut file = FileDto::default();
                for hook in seed_hooks(now) {
                    let raw = HookDto::rewrite(None, &hook).ok_or_else(|| {
                        StoreError::Io("could not serialise the seed hooks".to_owned())
                    })?;
                    file.hooks.insert(hook.id.to_string(), raw);
                }
                store.write(&file)?;
            }
        }
        Ok(store)
    }

    /// Opens an existing store without creating or seeding anything.
    pub fn open_existing(dir: &Path) -> Result<Self, StoreError> {
        fsutil::own_store_dir(dir, false)?;
        let store = Self {
            dir: dir.to_owned(),
            path: dir.join(STORE_FILE),
            max_bytes: DEFAULT_MAX_STORE_BYTES,
        };
        if !store.path.exists() {
            return Err(StoreError::Io(format!(
                "{} does not exist (run `hooks-app init`)",
                store.path.display()
            )));
        }
        Ok(store)
    }

    /// The same store, refusing a file larger than `max_bytes`.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> Result<DirLock, StoreError> {
        DirLock::acquire(&self.dir.join(LOCK_FILE))
            .map_err(|e| io_err(&self.dir.join(LOCK_FILE), "lock", &e))
    }

    /// Removes the temp files of writers that died between writing and renaming. Under the
    /// lock no writer is in that window, so every temp file found is a dead writer's.
    /// Returns how many were removed. Long-lived commands call it; the hook path does not.
    pub fn clean_up(&self) -> Result<usize, StoreError> {
        let _lock = self.lock()?;
        let mut removed = 0;
        if let Ok(rd) = fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
                    && fs::remove_file(e.path()).is_ok()
                {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Reads and parses the store file.
    pub fn read_file(&self) -> Result<FileDto, StoreError> {
        Self::parse(&self.path, &self.read_bytes()?)
    }

    fn read_bytes(&self) -> Result<fsutil::FileBytes, StoreError> {
        fsutil::FileBytes::read(&self.path, self.max_bytes).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::Io(format!(
                "{} does not exist (run `hooks-app init`)",
                self.path.display()
            )),
            std::io::ErrorKind::FileTooLarge => StoreError::Io(format!(
                "{}: {e} (HOOKS_STORE_MAX_MB raises the cap; nothing was changed)",
                self.path.display()
            )),
            _ => io_err(&self.path, "read", &e),
        })
    }

    /// The file's pieces, owned or borrowed from `bytes`.
    fn parse<'a, V: serde::Deserialize<'a>>(
        path: &Path,
        bytes: &'a [u8],
    ) -> Result<FileDto<V>, StoreError> {
        serde_json::from_slice(bytes).map_err(|e| {
            StoreError::Corrupt(format!(
                "{}: not a valid store file at line {}, column {}: {e} (the last good copy is {BACKUP_FILE}; the file was left as it is)",
                path.display(),
                e.line(),
                e.column()
            ))
        })
    }

    fn read_state(&self) -> Result<State, StoreError> {
        let mut file = self.read_file()?;
        let raw = std::mem::take(&mut file.pending);
        let mut pending = Vec::with_capacity(raw.len());
        let mut originals = HashMap::with_capacity(raw.len());
        let mut invalid = Vec::new();
        for v in raw {
            let parsed = serde_json::from_str::<PendingDto>(v.get())
                .ok()
                .and_then(|d| d.to_entry().ok());
            match parsed {
                // A second entry for the same pair (hand-edited, or the original's lost
                // update) is kept aside like an invalid one rather than dropped.
                Some(e) if !originals.contains_key(&e.key()) => {
                    originals.insert(e.key(), (e.clone(), v));
                    pending.push(e);
                }
                _ => invalid.push(v),
            }
        }
        Ok(State {
            file,
            pending,
            originals,
            invalid,
        })
    }

    /// The rules of every hook, read without their histories.
    fn rules<V: std::ops::Deref<Target = RawValue>>(
        file: &FileDto<V>,
    ) -> Result<Vec<HookRules>, StoreError> {
        file.hooks
            .iter()
            .map(|(k, raw)| RulesDto::read(k, raw).map_err(|e| invalid_hook(k, &e)))
            .collect()
    }

    /// The valid entries whose session `wanted` accepts. Each comes with its session where
    /// the scan found it; the others are parsed for their key alone, borrowed from the
    /// file's bytes. Entries of other sessions stay as they are stored.
    fn entries_of<'r>(
        pending: impl IntoIterator<Item = (&'r str, Option<&'r str>)>,
        wanted: impl Fn(&str) -> bool,
    ) -> Vec<PendingEntry> {
        pending
            .into_iter()
            .filter(|(raw, session)| match session {
                Some(s) => wanted(s),
                None => serde_json::from_str::<KeyDto>(raw).is_ok_and(|k| wanted(&k.session_id)),
            })
            .filter_map(|(raw, _)| {
                serde_json::from_str::<PendingDto>(raw)
                    .ok()?
                    .to_entry()
                    .ok()
            })
            .collect()
    }

    /// Adds entries under the lock, reading in full only the entries of the sessions they
    /// are for: what enqueuing needs to refuse a pair already queued. `plan` gets the hooks'
    /// rules and those entries and returns its result and the entries to add.
    fn append<T>(
        &self,
        sessions: &[&SessionId],
        plan: impl FnOnce(&[HookRules], &[PendingEntry]) -> (T, Vec<PendingEntry>),
    ) -> Result<(T, Vec<EnqueueResult>), StoreError> {
        let _lock = self.lock()?;
        let bytes = self.read_bytes()?;
        let wanted = |s: &str| sessions.iter().any(|w| w.as_str() == s);
        // The quick way, for a file with entries already: one pass that reads the hooks'
        // rules without copying them, and new entries written in after the last one, the
        // rest of the file copied as it is. Anything unusual takes the full way below,
        // which also gives the precise error.
        if let Some(view) = scan::layout(&bytes)
            && let Some(at) = view.pending.last().map(|l| l.range.end)
            && let Ok(rules) = view
                .hooks
                .iter()
                .map(|(k, fields)| {
                    RulesDto::from_fields(k, fields).map_err(|e| invalid_hook(k, &e))
                })
                .collect::<Result<Vec<_>, _>>()
        {
            let pieces = view
                .pending
                .iter()
                .map(|p| (&view.text[p.range.clone()], p.session));
            let mut related = Self::entries_of(pieces, wanted);
            let (out, entries) = plan(&rules, &related);
            let before = related.len();
            let results =
                queue::enqueue(&mut related, |h| rules.iter().any(|r| r.id == *h), entries);
            if related.len() > before {
                let ranges: Vec<_> = view.pending.iter().map(|p| p.range.clone()).collect();
                let insert = entries_text(&bytes, &ranges, &related[before..])?;
                self.write_with(|w| {
                    w.write_all(&bytes[..at])?;
                    w.write_all(&insert)?;
                    w.write_all(&bytes[at..])
                })?;
            }
            return Ok((out, results));
        }
        // Borrowed from the bytes read: only the new entries are owned.
        let added: Vec<Box<RawValue>>;
        let mut file: FileDto<&RawValue> = Self::parse(&self.path, &bytes)?;
        let rules = Self::rules(&file)?;
        let mut related = Self::entries_of(file.pending.iter().map(|r| (r.get(), None)), wanted);
        let (out, entries) = plan(&rules, &related);
        let before = related.len();
        let results = queue::enqueue(
            &mut related,
            |h| file.hooks.contains_key(h.as_str()),
            entries,
        );
        if related.len() > before {
            added = related[before..]
                .iter()
                .map(|e| {
                    serde_json::value::to_raw_value(&PendingDto::from_entry(e, Map::new())).map_err(
                        |err| StoreError::Io(format!("could not serialise an entry: {err}")),
                    )
                })
                .collect::<Result<_, _>>()?;
            file.pending.extend(added.iter().map(AsRef::as_ref));
            self.write(&file)?;
        }
        Ok((out, results))
    }

    /// Pending entries in the file that do not validate (kept, never claimed).
    pub fn invalid_pending(&self) -> Result<Vec<Value>, StoreError> {
        Ok(self
            .read_state()?
            .invalid
            .iter()
            .filter_map(|r| serde_json::from_str(r.get()).ok())
            .collect())
    }

    /// Runs one read-change-write under the lock. `f` returns its result and whether it
    /// changed anything; nothing is written when it did not.
    fn change<T>(
        &self,
        f: impl FnOnce(&mut State) -> Result<(T, bool), StoreError>,
    ) -> Result<T, StoreError> {
        let _lock = self.lock()?;
        let mut state = self.read_state()?;
        let (out, changed) = f(&mut state)?;
        if changed {
            self.write(&state.into_file())?;
        }
        Ok(out)
    }

    fn write<V: serde::Serialize>(&self, file: &FileDto<V>) -> Result<(), StoreError> {
        self.write_with(|w| {
            serde_json::to_writer_pretty(&mut *w, file).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })
    }

    /// Replaces the file durably with what `body` writes: temp file, fsync, `.bak` link,
    /// rename, folder fsync.
    fn write_with(
        &self,
        body: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
    ) -> Result<(), StoreError> {
        let tmp = self.dir.join(format!(
            "{TEMP_PREFIX}{}.{}",
            std::process::id(),
            fsutil::nonce()
        ));
        let result = std::thread::scope(|scope| -> std::io::Result<()> {
            // The last good copy is linked while the new file is written and synced: until
            // the rename it is the current file either way, and dropping the old copy
            // (freeing its blocks) need not wait for that I/O, nor it for this.
            let backup = scope.spawn(|| self.link_backup());
            let written = (|| -> std::io::Result<()> {
                // Streamed to the file: a large store is never held twice in memory.
                let mut w =
                    std::io::BufWriter::with_capacity(64 * 1024, fsutil::create_private(&tmp)?);
                body(&mut w)?;
                let f = w
                    .into_inner()
                    .map_err(std::io::IntoInnerError::into_error)?;
                hooks_platform::sync::sync_file(&f)
            })();
            let backup = backup
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the backup link panicked")));
            written?;
            backup?;
            failpoint("after-temp-write");
            fs::rename(&tmp, &self.path)?;
            fsutil::sync_dir(&self.dir)
        });
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_err(&self.path, "write", &e)
        })
    }

    /// Makes `hooks.json.bak` a second name of the current file, when there is one.
    fn link_backup(&self) -> std::io::Result<()> {
        if !self.path.exists() {
            return Ok(());
        }
        let bak = self.dir.join(BACKUP_FILE);
        let _ = fs::remove_file(&bak);
        fs::hard_link(&self.path, &bak)
    }

    fn runs_path(&self) -> PathBuf {
        self.dir.join(RUNS_FILE)
    }
}

/// The text that puts `entries` after the last pending entry, laid out like the entries
/// before it: the same separator, each line at the same indentation. `pending` is where
/// each stored entry lies in `bytes`; it is not empty.
fn entries_text(
    bytes: &[u8],
    pending: &[std::ops::Range<usize>],
    entries: &[PendingEntry],
) -> Result<Vec<u8>, StoreError> {
    let Some(last) = pending.last() else {
        return Err(StoreError::Io("no entry to write after".to_owned()));
    };
    let prev_end = pending.len().checked_sub(2).map(|i| pending[i].end);
    // The last entry's indentation: what lies between the line break before it and it,
    // looked for no further back than the entry before it (or the `[`).
    let from = prev_end.unwrap_or_else(|| {
        bytes[..last.start]
            .iter()
            .rposition(|&b| b == b'[')
            .unwrap_or(0)
    });
    let indent = bytes[from..last.start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| &bytes[from + i + 1..last.start])
        .filter(|i| i.iter().all(|b| *b == b' ' || *b == b'\t'));
    let sep: Vec<u8> = match (prev_end, indent) {
        (Some(prev_end), _) => bytes[prev_end..last.start].to_vec(),
        (None, Some(i)) => [b",\n".as_slice(), i].concat(),
        (None, None) => b",".to_vec(),
    };
    let mut out = Vec::new();
    for e in entries {
        let dto = PendingDto::from_entry(e, Map::new());
        let text = match indent {
            Some(i) => serde_json::to_string_pretty(&dto).map(|t| {
                let i = String::from_utf8_lossy(i);
                t.replace('\n', &format!("\n{i}"))
            }),
            None => serde_json::to_string(&dto),
        }
        .map_err(|err| StoreError::Io(format!("could not serialise an entry: {err}")))?;
        out.extend_from_slice(&sep);
        out.extend_from_slice(text.as_bytes());
    }
    Ok(out)
}

#[cfg(feature = "failpoints")]
fn failpoint(name: &str) {
    if std::env::var("HOOKS_FAILPOINT").is_ok_and(|v| v == name) {
        // Die the way a killed process does: no unwinding, no cleanup.
        std::process::abort();
    }
}

#[cfg(not(feature = "failpoints"))]
fn failpoint(_: &str) {}

/// The file's identity as `stat` sees it: inode, size and change time.
fn file_sig(p: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p)
        .ok()
        .map(|m| format!("{}:{}:{}.{}", m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

impl StoreSignals for JsonStore {
    /// An inotify watch on the data folder, woken when `hooks.json` is renamed into place.
    fn watch(&self, wake: Box<dyn Fn() + Send + Sync>) -> Result<(), String> {
        self.dir
            .canonicalize()
            .and_then(|d| hooks_platform::watch::watch(&d, STORE_FILE, wake))
            .map_err(|e| format!("cannot watch {}: {e}", self.dir.display()))
    }

    fn fingerprint(&self) -> Option<String> {
        file_sig(&self.path)
    }

    fn exists(&self) -> bool {
        self.dir.exists()
    }

    /// Temp files of writers that died between writing and renaming.
    fn housekeep(&self) -> Result<usize, StoreError> {
        self.clean_up()
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn restore_hint(&self) -> Option<String> {
        Some(format!(
            "cp '{}' '{}'",
            self.dir.join(BACKUP_FILE).display(),
            self.path.display()
        ))
    }
}

#[async_trait]
impl HookStore for JsonStore {
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let state = self.read_state()?;
        Ok(Snapshot {
            hooks: state.hooks()?,
            pending: state.pending,
        })
    }

    async fn get_hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError> {
        self.read_state()?.hook(id)
    }

    async fn create_hook(&self, spec: HookSpec, now: Timestamp) -> Result<Hook, StoreError> {
        self.change(|s| {
            let id = unique_hook_id(&spec.name, |c| s.file.hooks.contains_key(c));
            let hook = spec.into_hook(id, now);
            s.put_hook(&hook)?;
            Ok((hook, true))
        })
    }

    async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, StoreError> {
        self.change(|s| {
            let mut hook = s
                .hook(id)?
                .ok_or_else(|| StoreError::HookNotFound(id.clone()))?;
            patch.apply(&mut hook);
            s.put_hook(&hook)?;
            Ok((hook, true))
        })
    }

    async fn import_hook(&self, hook: &Hook) -> Result<(), StoreError> {
        self.change(|s| {
            s.put_hook(hook)?;
            Ok(((), true))
        })
    }

    async fn delete_hook(&self, id: &HookId) -> Result<usize, StoreError> {
        self.change(|s| {
            s.file
                .hooks
                .remove(id.as_str())
                .ok_or_else(|| StoreError::HookNotFound(id.clone()))?;
            let before = s.pending.len();
            s.pending.retain(|p| p.hook_id != *id);
            Ok((before - s.pending.len(), true))
        })
    }

    async fn enqueue(&self, entries: Vec<PendingEntry>) -> Result<Vec<EnqueueResult>, StoreError> {
        let sessions: Vec<SessionId> = entries.iter().map(|e| e.session_id.clone()).collect();
        let refs: Vec<&SessionId> = sessions.iter().collect();
        let ((), results) = self.append(&refs, |_, _| ((), entries))?;
        Ok(results)
    }

    async fn enqueue_event(
        &self,
        request: &EnqueueRequest,
    ) -> Result<Vec<(HookId, EnqueueDecision)>, StoreError> {
        let (decisions, _) = self.append(&[&request.session], |rules, pending| {
            queue::plan_event(rules, pending, request)
        })?;
        Ok(decisions)
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        owner: &str,
        ttl: Duration,
        limit: usize,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        // A cheap look first: most passes find nothing due and need no lock.
        let peek = self.read_state()?;
        if limit == 0 || !peek.pending.iter().any(|p| p.is_claimable(now)) {
            return Ok(Vec::new());
        }
        self.change(|s| {
            let claimed = queue::claim_due(&mut s.pending, now, owner, ttl, limit);
            let changed = !claimed.is_empty();
            Ok((claimed, changed))
        })
    }

    async fn renew(
        &self,
        keys: &[EntryKey],
        owner: &str,
        until: Timestamp,
    ) -> Result<Vec<EntryKey>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.change(|s| {
            let held = queue::renew(&mut s.pending, keys, owner, until);
            let changed = !held.is_empty();
            Ok((held, changed))
        })
    }

    async fn requeue(&self, key: &EntryKey, owner: &str, to: &Requeue) -> Result<(), StoreError> {
        self.change(|s| queue::requeue(&mut s.pending, key, owner, to).map(|()| ((), true)))
    }

    async fn wake(
        &self,
        session: &SessionId,
        due_at: Timestamp,
        open_only: bool,
    ) -> Result<usize, StoreError> {
        // Most calls find nothing waiting: look without the lock first, write nothing then.
        let waits = |p: &PendingEntry| {
            p.session_id == *session
                && p.waiting
                    .as_ref()
                    .is_some_and(|w| w.waits_for_close() || !open_only)
        };
        if !self.read_state()?.pending.iter().any(waits) {
            return Ok(0);
        }
        self.change(|s| {
            let n = queue::wake(&mut s.pending, session, due_at, open_only);
            Ok((n, n > 0))
        })
    }

    async fn complete(
        &self,
        key: &EntryKey,
        owner: &str,
        record: Option<HookRecord>,
    ) -> Result<(), StoreError> {
        self.change(|s| {
            queue::take(&mut s.pending, key, owner)?;
            if let Some(r) = record
                && let Some(mut hook) = s.hook(&key.hook_id)?
            {
                queue::record(&mut hook, &key.session_id, &r);
                s.put_hook(&hook)?;
            }
            Ok(((), true))
        })
    }

    async fn release(&self, keys: &[EntryKey], owner: &str) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        self.change(|s| {
            // Another owner's keys change nothing, and nothing is written for them.
            let n = queue::release(&mut s.pending, keys, owner);
            Ok(((), n > 0))
        })
    }

    async fn drop_unclaimed(
        &self,
        keys: &[EntryKey],
        now: Timestamp,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.change(|s| {
            let gone = queue::drop_unclaimed(&mut s.pending, keys, now);
            let changed = !gone.is_empty();
            Ok((gone, changed))
        })
    }

    async fn record(
        &self,
        hook: &HookId,
        session: &SessionId,
        record: HookRecord,
    ) -> Result<(), StoreError> {
        self.change(|s| match s.hook(hook)? {
            Some(mut h) => {
                queue::record(&mut h, session, &record);
                s.put_hook(&h)?;
                Ok(((), true))
            }
            None => Ok(((), false)),
        })
    }

    async fn append_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        let path = self.runs_path();
        let mut line = serde_json::to_vec(&RunDto::from_record(run))
            .map_err(|e| StoreError::Io(format!("{}: could not serialise: {e}", path.display())))?;
        line.push(b'\n');
        let mut f = fsutil::open_append_private(&path).map_err(|e| io_err(&path, "open", &e))?;
        // One write of one line with O_APPEND: lines of concurrent writers never interleave.
        f.write_all(&line)
            .and_then(|()| f.sync_data())
            .map_err(|e| io_err(&path, "append to", &e))
    }

    /// Read from the log's end, line by line, and no further back than the filter needs:
    /// lines are appended as runs start and end, so once a line was written (its end, else
    /// its start) well before `since`, or before the start of the `limit`-th newest run
    /// found, nothing earlier can be asked for. A listing costs what it shows, whatever
    /// the log's size; a filter by hook or session alone still reads the whole log.
    async fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let path = self.runs_path();
        let file = match hooks_platform::open_regular(&path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&path, "read", &e)),
        };
        let meta = file.metadata().map_err(|e| io_err(&path, "read", &e))?;
        hooks_platform::files::own(&meta).map_err(|e| io_err(&path, "read", &e))?;
        let len = meta.len();
        let mut lines = hooks_platform::files::LinesFromEnd::new(file, len, u64::MAX, 256 * 1024);
        // Lines from different writers may be appended a little out of time order.
        let slack = time::Duration::hours(1);
        // The starts of the newest `limit` runs found so far (the smallest on top), and
        // the runs counted.
        let mut newest: std::collections::BinaryHeap<
            std::cmp::Reverse<hooks_core::stamp::Timestamp>,
        > = std::collections::BinaryHeap::new();
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut kept: Vec<RunRecord> = Vec::new();
        while let Some(raw) = lines.next_line().map_err(|e| io_err(&path, "read", &e))? {
            let Some(r) = serde_json::from_slice::<RunDto>(&raw)
                .ok()
                .and_then(|d| d.to_record())
            else {
                continue;
            };
            let written = r.finished_at.unwrap_or(r.started_at);
            if filter.since.is_some_and(|t| written < t - slack) {
                break;
            }
            if let Some(n) = filter.limit
                && newest.len() >= n
                && newest.peek().is_some_and(|t| written < t.0 - slack)
            {
                break;
            }
            if !filter.matches(&r) {
                continue;
            }
            let first = match &r.run_id {
                Some(id) => seen.insert(id.clone()),
                None => true,
            };
            if first && let Some(n) = filter.limit {
                newest.push(std::cmp::Reverse(r.started_at));
                if newest.len() > n {
                    newest.pop();
                }
            }
            kept.push(r);
        }
        kept.reverse();
        let mut all = fold_runs(kept);
        all.sort_by_key(|r| r.started_at);
        let skip = filter.limit.map_or(0, |n| all.len().saturating_sub(n));
        Ok(all.into_iter().skip(skip).collect())
    }

    async fn budget(&self) -> Result<Option<hooks_core::cost::Budget>, StoreError> {
        self.get_extra(dto::BUDGET_KEY, "budget: ", dto::BudgetDto::read)
    }

    async fn pause(&self) -> Result<Option<hooks_core::Pause>, StoreError> {
        self.get_extra(dto::PAUSE_KEY, "", dto::PauseDto::read)
    }

    async fn set_pause(&self, pause: Option<hooks_core::Pause>) -> Result<(), StoreError> {
        let dto = pause.as_ref().map(dto::PauseDto::from_pause);
        self.set_extra(dto::PAUSE_KEY, "the pause", dto.as_ref())
    }

    async fn set_budget(&self, budget: Option<hooks_core::cost::Budget>) -> Result<(), StoreError> {
        let dto = budget.as_ref().map(dto::BudgetDto::from_budget);
        self.set_extra(dto::BUDGET_KEY, "the budget", dto.as_ref())
    }
}

impl JsonStore {
    /// One of this project's top-level keys of the store file, read by `read`; a value it
    /// refuses is a corrupt store, named with `prefix`.
    fn get_extra<T>(
        &self,
        key: &str,
        prefix: &str,
        read: impl Fn(&RawValue) -> Result<T, ValidationError>,
    ) -> Result<Option<T>, StoreError> {
        let file = self.read_file()?;
        match file.extra.iter().find(|(k, _)| k == key) {
            None => Ok(None),
            Some((_, raw)) => read(raw)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("{STORE_FILE}: {prefix}{e}"))),
        }
    }

    /// Sets (or, `None`, removes) one of this project's top-level keys of the store file.
    fn set_extra(
        &self,
        key: &str,
        what: &str,
        value: Option<&impl serde::Serialize>,
    ) -> Result<(), StoreError> {
        let raw = value
            .map(serde_json::value::to_raw_value)
            .transpose()
            .map_err(|e| StoreError::Io(format!("could not serialise {what}: {e}")))?;
        self.change(|state| {
            let extra = &mut state.file.extra;
            let at = extra.iter().position(|(k, _)| k == key);
            match (at, raw) {
                (Some(i), Some(r)) => extra[i].1 = r,
                (None, Some(r)) => extra.push((key.to_owned(), r)),
                (Some(i), None) => {
                    extra.remove(i);
                }
                (None, None) => return Ok(((), false)),
            }
            Ok(((), true))
        })
    }
}
