//! What the app asks of the operating system, in one small place: is a process alive and
//! when did it start, its process group, environment and program; watching a folder; the
//! host's name; a durable sync; and files that must be regular files.
//!
//! Two implementations sit behind one API: `imp/linux.rs` (`/proc`, inotify, `prctl`) and
//! `imp/portable.rs` (sysinfo, notify, `gethostname`), for macOS and the other Unixes. The
//! `portable` feature selects the second on Linux too, so CI runs the whole suite through
//! it. Nothing else in the workspace reads `/proc` or names a Linux-only `libc` item:
//! `cargo xtask portability` checks it.

#[cfg(windows)]
compile_error!(
    "hooks-app does not run on native Windows: Claude Code's hooks, process groups and the \
     files it keeps are Unix ones. Use WSL2 (with Claude Code inside WSL too, the data folder \
     not under /mnt/c, and systemd enabled in /etc/wsl.conf for --daemon service)."
);

pub mod account;
pub mod files;
pub mod net;
pub mod process;
pub mod sync;
pub mod terminal;
pub mod watch;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[path = "imp/linux.rs"]
mod imp;
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
#[path = "imp/portable.rs"]
mod imp;

pub use files::{ReadLimit, open_regular, read_regular};

/// Which implementation this build uses: `linux` or `portable`.
pub const IMPLEMENTATION: &str = imp::NAME;

/// The `mmap` flags for reading a whole file at once: `MAP_PRIVATE`, and on Linux
/// `MAP_POPULATE` (every page faulted in by the call).
pub const MMAP_READ_FLAGS: libc::c_int = libc::MAP_PRIVATE | imp::MMAP_FLAGS;

/// Quotes `s` for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
