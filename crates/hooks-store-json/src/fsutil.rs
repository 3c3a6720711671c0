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

/// The store's folder and its `sessions/` as a store may use them: refused when another
/// user owns either (they could have written the queue, and with it the folder a
/// follow-up runs in); with `tighten`, made private when others could enter them (a
/// read-only look changes nothing: `doctor` says what is loose, `init` and `serve` fix it).
pub fn own_store_dir(dir: &Path, tighten: bool) -> Result<(), StoreError> {
    for d in [dir.to_owned(), dir.join("sessions")] {
        let checked = if tighten {
            hooks_platform::files::own_private_dir(&d).map(drop)
        } else {
            match std::fs::symlink_metadata(&d) {
                Ok(m) => hooks_platform::files::own(&m),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            }
        };
        checked.map_err(|e| {
            StoreError::Io(format!(
                "{} {e}: hooks-app keeps its queue only in a folder of your own; remove it, or name another store",
                d.display()
            ))
        })?;
    }
    Ok(())
}

/// Creates a new file with mode `0600`; fails if it exists.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Opens (creating, 0600) a file to append to, never blocking on a FIFO put in its place.
pub fn open_append_private(path: &Path) -> std::io::Result<File> {
    hooks_platform::files::open_regular_with(
        path,
        OpenOptions::new().append(true).create(true).mode(0o600),
    )
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    hooks_platform::sync::sync_dir(dir)
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
        let f = hooks_platform::files::open_regular_with(
            path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600),
        )?;
        f.lock()?;
        Ok(Self(f))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A file's bytes for one read under the store's lock: mapped when the file is large,
/// read into memory otherwise.
///
/// Mapping a large file spares the copy into fresh memory, and the page faults and
/// zeroing of that memory, which on a virtual machine cost more than reading the bytes.
/// Every writer of the store replaces the file by renaming a new one over it, so a mapped
/// file does not change under the reader; a file truncated in place by a hand edit at that
/// very moment would end the process with SIGBUS, as it would any program that maps files,
/// and leaves nothing half-written (what this process writes is a temp file).
pub enum FileBytes {
    Read(Vec<u8>),
    Mapped { ptr: *mut libc::c_void, len: usize },
}

/// From this size on a file is mapped.
const MAP_FROM: u64 = 256 * 1024;

impl FileBytes {
    /// The file's bytes, when it is a regular file of at most `max` bytes (a larger one is
    /// refused before anything is read or mapped).
    pub fn read(path: &Path, max: u64) -> std::io::Result<Self> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let file = hooks_platform::open_regular(path, false)?;
        let meta = file.metadata()?;
        hooks_platform::files::own(&meta)?;
        let len = meta.len();
        if len > max {
            return Err(hooks_platform::files::too_large(len, max));
        }
        let mut file = file.take(max + 1);
        if len >= MAP_FROM
            && let Ok(len) = usize::try_from(len)
        {
            // SAFETY: a fresh private read-only mapping of an open file; the pointer is
            // checked, and unmapped once, on drop.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    hooks_platform::MMAP_READ_FLAGS,
                    file.get_ref().as_raw_fd(),
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                return Ok(Self::Mapped { ptr, len });
            }
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0) + 1);
        file.read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(hooks_platform::files::too_large(bytes.len() as u64, max));
        }
        Ok(Self::Read(bytes))
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Read(v) => v,
            // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives.
            Self::Mapped { ptr, len } => unsafe {
                std::slice::from_raw_parts(ptr.cast::<u8>(), *len)
            },
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let Self::Mapped { ptr, len } = *self {
            // SAFETY: mapped in `read`, unmapped only here.
            unsafe {
                libc::munmap(ptr, len);
            }
        }
    }
}
