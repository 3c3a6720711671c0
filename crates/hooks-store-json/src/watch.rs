//! Tells a daemon when another process replaced the store file: an inotify watch on the
//! data folder, read by one thread that lives as long as the process.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Watches `dir` for `name` being renamed into place or closed after writing, and calls
/// `wake` each time. Errors when the system cannot watch the folder (the caller then falls
/// back to polling).
pub fn watch(
    dir: &Path,
    name: &'static str,
    wake: Box<dyn Fn() + Send + Sync>,
) -> std::io::Result<()> {
    let path = CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: inotify_init1 takes flags and returns a new descriptor or -1.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is the descriptor just created and owned by nothing else; from here the
    // File owns it and closes it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    let wd = unsafe {
        libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE)
    };
    if wd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::thread::Builder::new()
        .name("store-watch".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if names(&buf[..n]).any(|e| e == name.as_bytes()) {
                    wake();
                }
            }
        })?;
    Ok(())
}

/// The file names in a buffer of `struct inotify_event`s: wd, mask, cookie, len (four
/// 32-bit fields), then `len` bytes of NUL-padded name.
fn names(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let header = buf.get(at..at + 16)?;
        let len = u32::from_ne_bytes(header[12..16].try_into().ok()?) as usize;
        let raw = buf.get(at + 16..at + 16 + len)?;
        at += 16 + len;
        Some(raw.split(|b| *b == 0).next().unwrap_or(&[]))
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_rename_over_the_watched_name_wakes_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        watch(
            dir.path(),
            "hooks.json",
            Box::new(move || {
                let _ = tx.lock().map(|t| t.send(()));
            }),
        )
        .unwrap();
        // Another file changing is not a wake-up.
        std::fs::write(dir.path().join("runs.jsonl"), "x").unwrap();
        std::fs::write(dir.path().join("tmp"), "{}").unwrap();
        std::fs::rename(dir.path().join("tmp"), dir.path().join("hooks.json")).unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(()),
            "the rename woke the watcher"
        );
        let more = rx.recv_timeout(Duration::from_millis(300));
        assert!(
            more.is_err(),
            "runs.jsonl and the temp file did not: {more:?}"
        );
    }

    #[test]
    fn event_names_are_read_from_the_buffer() {
        let mut buf = Vec::new();
        for (name, pad) in [("hooks.json", 6usize), ("a", 15)] {
            buf.extend_from_slice(&1i32.to_ne_bytes());
            buf.extend_from_slice(&libc::IN_MOVED_TO.to_ne_bytes());
            buf.extend_from_slice(&0u32.to_ne_bytes());
            buf.extend_from_slice(&((name.len() + pad) as u32).to_ne_bytes());
            buf.extend_from_slice(name.as_bytes());
            buf.extend(std::iter::repeat_n(0u8, pad));
        }
        let got: Vec<&[u8]> = names(&buf).collect();
        assert_eq!(got, [b"hooks.json".as_slice(), b"a".as_slice()]);
        assert_eq!(names(&buf[..10]).count(), 0, "a cut-off header is not read");
    }
}
