//! Opening files that must be files.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// How a path is opened and how much of it may be read.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimit {
    /// The most bytes the file may hold; a larger one is refused before it is read.
    pub max_bytes: u64,
    /// Refuse a path whose last component is a symbolic link.
    pub no_follow: bool,
    /// Refuse a file another user owns (see [`own`]).
    pub own_only: bool,
}

impl ReadLimit {
    pub const fn bytes(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            no_follow: false,
            own_only: false,
        }
    }

    pub const fn no_follow(mut self) -> Self {
        self.no_follow = true;
        self
    }

    /// Only a file of this user's: what the app keeps its state in.
    pub const fn own_only(mut self) -> Self {
        self.own_only = true;
        self
    }
}

/// Whether `meta` is of something this (effective) user owns: a `PermissionDenied` error
/// naming the owner when not. State another user put where hooks-app keeps its own (a
/// queue entry naming their folder, a hook, a session) is never believed.
pub fn own(meta: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() == crate::account::uid() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "belongs to user {}, not to you",
            crate::account::name_of(meta.uid())
        ),
    ))
}

/// A folder the app keeps state in, made safe to use: refused when another user owns it
/// (or it is not a folder), made private (0700) when others could enter it. Says what it
/// changed, if anything. A folder that does not exist is left to be created.
pub fn own_private_dir(dir: &Path) -> io::Result<Option<String>> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    own(&meta)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a folder",
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(Some(format!(
        "made {} private (0700; it was {mode:04o})",
        dir.display()
    )))
}

/// Opens `path` for reading without blocking (a FIFO with no writer, a terminal, a device
/// that never answers) and returns it only when it is a regular file. Anything else is an
/// `InvalidInput` error that says what the path is.
pub fn open_regular(path: &Path, no_follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if no_follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| {
            if no_follow && e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(io::ErrorKind::InvalidInput, "is a symbolic link")
            } else {
                e
            }
        })?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not a regular file"),
    ))
}

/// Opens `path` the way a writer of the app's own files does (`options` says how: append,
/// create, its mode), without blocking on a FIFO and without following a final symbolic
/// link, and returns it only when it is a regular file.
pub fn open_regular_with(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::new(io::ErrorKind::InvalidInput, "is a symbolic link"),
            // A FIFO opened for writing with no reader.
            Some(libc::ENXIO) => {
                io::Error::new(io::ErrorKind::InvalidInput, "is a FIFO, not a regular file")
            }
            _ => e,
        })?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file",
        ));
    }
    Ok(file)
}

/// Reads the whole of `path` when it is a regular file of at most `limit.max_bytes`. A
/// larger file is a `FileTooLarge` error naming the cap; nothing is read from it.
pub fn read_regular(path: &Path, limit: ReadLimit) -> io::Result<Vec<u8>> {
    let file = open_regular(path, limit.no_follow)?;
    let meta = file.metadata()?;
    if limit.own_only {
        own(&meta)?;
    }
    let len = meta.len();
    if len > limit.max_bytes {
        return Err(too_large(len, limit.max_bytes));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // A file that grows while it is read is still read only up to the cap (and one byte,
    // to tell that it went over).
    file.take(limit.max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large(bytes.len() as u64, limit.max_bytes));
    }
    Ok(bytes)
}

/// The error for a file over its cap.
pub fn too_large(len: u64, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("holds {len} bytes, over the cap of {cap} bytes"),
    )
}

/// Replaces `path` with `text` atomically (a temp file beside it, renamed over it), the file
/// private to its owner (0600), creating its folder if need be.
pub fn write_private(path: &Path, text: &str) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    replace(path, text.as_bytes(), None)
}

/// Replaces `path` with `bytes` atomically: a new file beside it, renamed over it. The new
/// file is created private (0600) under a name no one can guess, never through a link or
/// onto anything already there (`O_CREAT|O_EXCL`, by `tempfile`), so another user watching
/// the folder cannot open it while it is written and a planted link or FIFO is never
/// followed. It is given `mode` (the file's old mode, say) only once written and synced,
/// just before the rename. A rename that fails leaves `path` as it was and removes the
/// new file.
pub fn replace(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Some(mode) = mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
    }
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Creates `dir` and any missing parents private to their owner (0700); a folder that is
/// already there keeps its mode.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A file's lines read from its end, one chunk at a time, within a byte budget: what an
/// append-only log's newest lines cost, whatever its size.
pub struct LinesFromEnd {
    file: File,
    pos: u64,
    buf: Vec<u8>,
    budget: u64,
    chunk: u64,
}

impl LinesFromEnd {
    /// Over `file`, `len` bytes long, reading at most `budget` bytes in chunks of `chunk`.
    pub fn new(file: File, len: u64, budget: u64, chunk: usize) -> Self {
        Self {
            file,
            pos: len,
            buf: Vec::new(),
            budget,
            chunk: chunk.max(1) as u64,
        }
    }

    /// What is left of the byte budget.
    pub fn budget_left(&self) -> u64 {
        self.budget
    }

    /// The next line back (without its newline), skipping blank ones; `None` at the start
    /// of the file or when the budget is spent (then what is left is returned once only if
    /// it reaches the start of the file: a line cut by the budget is not a line).
    pub fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        use std::io::{Read, Seek, SeekFrom};
        loop {
            if let Some(i) = self.buf.iter().rposition(|&b| b == b'\n') {
                let line = self.buf.split_off(i + 1);
                self.buf.truncate(i);
                if line.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Ok(Some(line));
                }
                continue;
            }
            if self.pos == 0 || self.budget == 0 {
                return Ok(
                    (self.pos == 0 && self.buf.iter().any(|b| !b.is_ascii_whitespace()))
                        .then(|| std::mem::take(&mut self.buf)),
                );
            }
            let n = self.chunk.min(self.pos).min(self.budget);
            let start = self.pos - n;
            let mut chunk = vec![0u8; usize::try_from(n).unwrap_or(0)];
            self.file.seek(SeekFrom::Start(start))?;
            self.file.read_exact(&mut chunk)?;
            chunk.extend_from_slice(&self.buf);
            self.buf = chunk;
            self.pos = start;
            self.budget -= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no memory effects.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_is_refused_at_once_and_a_file_is_read() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("transcript.jsonl");
        mkfifo(&fifo);
        // Opened as a file it would block until a writer came: the test would hang.
        let e = read_regular(&fifo, ReadLimit::bytes(1024)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("a FIFO"), "{e}");

        let e = read_regular(d.path(), ReadLimit::bytes(1024)).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        let e = read_regular(Path::new("/dev/null"), ReadLimit::bytes(1024)).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");

        let f = d.path().join("f");
        std::fs::write(&f, "hello").unwrap();
        assert_eq!(read_regular(&f, ReadLimit::bytes(5)).unwrap(), b"hello");
        let e = read_regular(&f, ReadLimit::bytes(4)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("cap of 4 bytes"), "{e}");
    }

    #[test]
    fn no_follow_refuses_a_link_and_follows_it_otherwise() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let l = d.path().join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        assert_eq!(read_regular(&l, ReadLimit::bytes(9)).unwrap(), b"x");
        let e = read_regular(&l, ReadLimit::bytes(9).no_follow()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }
}
