//! Linux: `/proc`, inotify and `prctl`.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::process::Proc;

pub const NAME: &str = "linux";

/// What `/proc/<pid>/stat` says. The command name (field 2) is in parentheses and may
/// itself hold spaces and parentheses, so the fields are counted after the last `)`.
pub fn parse_stat(pid: u32, text: &str) -> Option<Proc> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: 3 state, 4 ppid, 5 pgrp, …, 22 starttime → indexes 0, 1, 2, 19.
    let state = f.first()?.chars().next()?;
    Some(Proc {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
        alive: !matches!(state, 'Z' | 'X' | 'x'),
    })
}

pub fn process(pid: u32) -> Option<Proc> {
    parse_stat(
        pid,
        &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
    )
}

pub fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

pub fn env_has(pid: u32, key: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let key = format!("{key}=");
    env.split(|b| *b == 0)
        .any(|v| v.starts_with(key.as_bytes()))
}

pub fn exe(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// Clock ticks per second, and the boot time in seconds after the epoch.
fn clock() -> Option<(u64, i64)> {
    static CLOCK: OnceLock<Option<(u64, i64)>> = OnceLock::new();
    *CLOCK.get_or_init(|| {
        // SAFETY: sysconf has no memory effects.
        let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let btime = stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        (hz > 0).then_some((hz, btime))
    })
}

pub fn start_epoch(p: &Proc) -> Option<i64> {
    let (hz, btime) = clock()?;
    Some(btime + i64::try_from(p.start / hz).ok()?)
}

/// Ticks are what this build reads: they must be equal.
pub fn ticks_match(p: &Proc, ticks: u64) -> bool {
    p.start == ticks
}

pub const DIES_WITH_PARENT: bool = true;

pub fn die_with_parent(parent: u32) -> std::io::Result<()> {
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG takes a signal number and has no memory
    // effects; it is async-signal-safe, so it may run between fork and exec.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // A parent that died between the fork and the prctl sends no signal: the child must
    // not go on as an orphan. SAFETY: getppid(2) cannot fail and touches no memory.
    if u32::try_from(unsafe { libc::getppid() }).ok() != Some(parent) {
        return Err(std::io::Error::other("the process that started it is gone"));
    }
    Ok(())
}

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

/// Extra `mmap` flags: fault the whole mapping in at once.
pub const MMAP_FLAGS: libc::c_int = libc::MAP_POPULATE;

/// The user owning the TCP socket listening on `port` of an address like `ip` (the
/// address itself or the wildcard), from `/proc/net/tcp` and `/proc/net/tcp6`.
pub fn listener_uid(ip: std::net::IpAddr, port: u16) -> Option<u32> {
    let files: &[&str] = match ip {
        std::net::IpAddr::V4(_) => &["/proc/net/tcp", "/proc/net/tcp6"],
        std::net::IpAddr::V6(_) => &["/proc/net/tcp6"],
    };
    files.iter().find_map(|f| {
        let text = std::fs::read_to_string(f).ok()?;
        text.lines().skip(1).find_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:tm retrnsmt uid …; LISTEN is 0A.
            let (local, state, uid) = (cols.get(1)?, cols.get(3)?, cols.get(7)?);
            let (addr, p) = local.split_once(':')?;
            let listening = *state == "0A" && u16::from_str_radix(p, 16).ok()? == port;
            let any = addr.bytes().all(|b| b == b'0');
            let same = match ip {
                std::net::IpAddr::V4(v4) => {
                    addr.len() == 8
                        && u32::from_str_radix(addr, 16).ok()?.to_ne_bytes() == v4.octets()
                        || addr.len() == 32
                            && addr.ends_with(&format!("{:08X}", u32::from_ne_bytes(v4.octets())))
                }
                std::net::IpAddr::V6(_) => false,
            };
            (listening && (any || same)).then(|| uid.parse().ok())?
        })
    })
}

/// The user owning the TCP socket whose local end is `local` and remote end `remote`
/// (a loopback client's socket, seen from the server), from `/proc/net/tcp{,6}`.
pub fn connection_uid(local: std::net::SocketAddr, remote: std::net::SocketAddr) -> Option<u32> {
    let hex = |a: std::net::SocketAddr| -> Option<(String, String)> {
        match a {
            std::net::SocketAddr::V4(v4) => Some((
                format!(
                    "{:08X}:{:04X}",
                    u32::from_ne_bytes(v4.ip().octets()),
                    v4.port()
                ),
                "/proc/net/tcp".to_owned(),
            )),
            std::net::SocketAddr::V6(_) => None,
        }
    };
    let (l, file) = hex(local)?;
    let (r, _) = hex(remote)?;
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        (cols.get(1)? == &l && cols.get(2)? == &r).then(|| cols.get(7)?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_last_parenthesis() {
        let line = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 307923 1000 10";
        let p = parse_stat(4242, line).unwrap();
        assert_eq!((p.ppid, p.pgrp, p.start, p.alive), (1, 4242, 307_923, true));
        let z = line.replace(") S ", ") Z ");
        assert!(!parse_stat(4242, &z).unwrap().alive);
        assert_eq!(parse_stat(1, "garbage"), None);
        assert_eq!(parse_stat(1, "1 (x) S 1 2"), None, "too short");
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

    #[test]
    fn a_start_in_ticks_is_a_time_after_boot() {
        let me = crate::process::this_process().unwrap();
        let at = start_epoch(&me).unwrap();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        assert!((now - 3600..=now + 1).contains(&at), "{at} vs {now}");
    }
}
