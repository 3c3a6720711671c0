//! The terminal standard output writes to, when it writes to one.

use std::io::IsTerminal;

/// The width in columns of the terminal standard output is, or `None` when it is not a
/// terminal (a pipe, a file) or its size is not known: output for a program keeps every
/// cell whole.
pub fn stdout_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ writes one winsize into the struct given, which lives here.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}
