//! What the store's test targets share: a fixed clock, entries, fixture files.

use std::fs;
use std::path::{Path, PathBuf};

use hooks_core::*;
use hooks_store_json::{JsonStore, STORE_FILE};
use serde_json::Value;
use time::OffsetDateTime;

pub fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_796_199_477).unwrap() // 2026-12-02T08:17:57Z
}

/// A pending entry of the post-task hook for `session`, due at `due`.
pub fn due_entry(session: &str, due: OffsetDateTime) -> PendingEntry {
    {
        let mut o = PendingEntry::new(
            post_task_id(),
            SessionId::parse(session).unwrap(),
            DueAt::At(due),
        );
        o.error = None;
        o.queued_at = Some(due);
        o.retries = 0;
        o.claim = None;
        o.waiting = None;
        o
    }
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(name)
}

pub fn store_with(text: &str) -> (tempfile::TempDir, JsonStore) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(STORE_FILE), text).unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    (dir, store)
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
}
