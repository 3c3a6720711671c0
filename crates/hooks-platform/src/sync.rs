//! Durable writes. On macOS `File::sync_all` is `fcntl(F_FULLFSYNC)`, which some file
//! systems (SMB, exFAT, some FUSE ones) refuse with ENOTSUP or EINVAL: there a plain
//! `fsync` is the most that can be had, and the log says so once.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static SAID: AtomicBool = AtomicBool::new(false);

/// Flushes `f` to stable storage as far as its file system allows.
pub fn sync_file(f: &File) -> std::io::Result<()> {
    match f.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP | libc::EINVAL)) => {
            if !SAID.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %e, "this file system cannot flush fully; falling back to fsync");
            }
            use std::os::fd::AsRawFd;
            // SAFETY: fsync on a descriptor `f` owns for the whole call.
            if unsafe { libc::fsync(f.as_raw_fd()) } == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        }
        other => other,
    }
}

/// Flushes a folder (what it lists) to stable storage.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    sync_file(&File::open(dir)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_and_its_folder_sync() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "x").unwrap();
        super::sync_file(&std::fs::File::open(&p).unwrap()).unwrap();
        super::sync_dir(d.path()).unwrap();
    }
}
