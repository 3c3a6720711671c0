//! Small file-system helpers: private modes, the lock file, folder fsync.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use hooks_core::ports::StoreError;

pub fn io_err(path: &Path, what: &str, e: &std::io::Error) -> StoreError {
    StoreError::Io(format!("could not {what} {}: {e}", path.display()))
}

/// Creates `dir` and its parents with mode `0700`.
pub fn create_dir_private(dir: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates a new file with mode `0600`; fails if it exists.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

pub fn open_append_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A value unique enough, with the pid, to name a temp file.
pub fn nonce() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// An exclusive lock on a stable lock file, released on drop (or when the process dies).
pub struct DirLock(File);

impl DirLock {
    pub fn acquire(path: &Path) -> std::io::Result<Self> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        f.lock()?;
        Ok(Self(f))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}
