//! Files and folders as the app keeps them: private (0600 files, 0700 folders), written
//! whole by rename, and quoted for a shell. A leaf: it names no other module.

use std::path::{Path, PathBuf};

use crate::{AppError, AppResult};

/// The folders of a data folder that hold what others must not read.
pub const PRIVATE_DIRS: [&str; 4] = ["", "http-logins", "daemons", "sessions"];

pub use hooks_platform::shell_quote;

/// Replaces `path` with `text` atomically, private to its owner (see
/// [`hooks_platform::files::write_private`]).
pub fn write_private(path: &Path, text: &str) -> AppResult {
    hooks_platform::files::write_private(path, text)
        .map_err(|e| AppError::runtime(format!("could not write {}: {e}", path.display())))
}

pub use hooks_platform::files::create_private_dir;

/// The data folder's folders that others can enter or read, with their modes.
pub fn loose_dirs(data_dir: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    PRIVATE_DIRS
        .iter()
        .map(|d| data_dir.join(d))
        .filter_map(|d| {
            let m = std::fs::symlink_metadata(&d).ok()?;
            let mode = m.permissions().mode() & 0o7777;
            (m.is_dir() && mode & 0o077 != 0).then_some((d, mode))
        })
        .collect()
}

/// Makes the data folder's folders private (0700) where others could read them; says
/// what it changed.
pub fn tighten_data_dir(data_dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    loose_dirs(data_dir)
        .into_iter()
        .map(|(d, mode)| {
            match std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)) {
                Ok(()) => format!("made {} private (0700; it was {mode:04o})", d.display()),
                Err(e) => format!(
                    "could not make {} private (it is {mode:04o}): {e}",
                    d.display()
                ),
            }
        })
        .collect()
}

/// What of the data folder belongs to another user, said as a refusal: the folder itself,
/// one of its private folders, or a file directly in it. Tokens, logins and the queue are
/// kept only where no one else can have placed or read them. `None` when all is the
/// user's own (or the folder does not exist yet). `quick`: the folder alone (one `stat`,
/// for the Claude Code hook's path).
pub fn foreign_owner(data_dir: &Path, quick: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = hooks_platform::account::uid();
    let theirs = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.uid() != me)
            .map(|m| {
                format!(
                    "{} belongs to user {}, not to you: hooks-app keeps its tokens, logins and queue only in a folder of your own; remove it, or pass --data-dir",
                    p.display(),
                    hooks_platform::account::name_of(m.uid())
                )
            })
    };
    if let Some(why) = theirs(data_dir) {
        return Some(why);
    }
    if quick {
        return None;
    }
    PRIVATE_DIRS
        .iter()
        .filter(|d| !d.is_empty())
        .find_map(|d| theirs(&data_dir.join(d)))
        .or_else(|| {
            std::fs::read_dir(data_dir)
                .ok()?
                .flatten()
                .find_map(|e| theirs(&e.path()))
        })
}

/// Opens (creating, 0600) a file that is only ever locked, never written.
pub fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    hooks_platform::files::open_regular_with(
        path,
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600),
    )
}

pub fn home() -> AppResult<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| AppError::runtime("HOME is not set: pass --data-dir and --claude-home"))
}

pub fn absolute(p: &Path) -> AppResult<PathBuf> {
    std::path::absolute(p).map_err(|e| AppError::invalid(format!("{}: {e}", p.display())))
}

/// Creates and removes a file in `dir`: whether this process can write there.
pub fn can_write_in(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".hooks-app-doctor.{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(probe)
}
