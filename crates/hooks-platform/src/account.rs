//! The account this process runs as, from the system's user database rather than the
//! environment: a Claude Code hook's environment is partly the repository's to set (a
//! project's settings `env` reaches every hook command), so `HOME` there proves nothing.

use std::ffi::CStr;
use std::path::PathBuf;

/// The effective user's id.
pub fn uid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The home folder the user database gives the effective user, whatever `HOME` says.
/// Looked up once a process: a hook call needs it for the data, Claude and Codex folders,
/// and each lookup may ask a directory service.
pub fn home() -> Option<PathBuf> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(lookup_home).clone()
}

fn lookup_home() -> Option<PathBuf> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: passwd is plain data; getpwuid_r writes into it and into `buf`, whose
        // length is passed, and `result` points at `pw` or is null.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || pw.pw_dir.is_null() {
            return None;
        }
        // SAFETY: pw_dir points into `buf`, NUL-terminated by getpwuid_r.
        let dir = unsafe { CStr::from_ptr(pw.pw_dir) };
        let dir = PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir.to_bytes()),
        );
        return dir.is_absolute().then_some(dir);
    }
}

/// The name the user database gives the user `uid`, or its number.
pub fn name_of(uid: u32) -> String {
    let mut buf = vec![0u8; 4096];
    // SAFETY: as in `home`.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc == 0 && !result.is_null() && !pw.pw_name.is_null() {
        // SAFETY: pw_name points into `buf`, NUL-terminated.
        let name = unsafe { CStr::from_ptr(pw.pw_name) };
        if let Ok(n) = name.to_str() {
            return n.to_owned();
        }
    }
    format!("uid {uid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_users_home_and_name_are_found() {
        let home = home().expect("this user has a home in the user database");
        assert!(home.is_absolute());
        assert_ne!(name_of(uid()), format!("uid {}", uid()), "a named user");
    }
}
