//! macOS and the other Unixes (and Linux, with the `portable` feature): process facts
//! through sysinfo, folder watches through notify, process groups through `getpgid`.

use std::path::{Path, PathBuf};

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System, UpdateKind};

use crate::process::Proc;

pub const NAME: &str = "portable";

fn one(pid: u32, kind: ProcessRefreshKind) -> Option<(System, Pid)> {
    let p = Pid::from_u32(pid);
    let mut sys = System::new();
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[p]), true, kind);
    sys.process(p)?;
    Some((sys, p))
}

pub fn process(pid: u32) -> Option<Proc> {
    let (sys, p) = one(pid, ProcessRefreshKind::nothing())?;
    let info = sys.process(p)?;
    // SAFETY: getpgid has no memory effects; -1 for a process that is gone.
    let pgrp = unsafe { libc::getpgid(pid as libc::pid_t) };
    Some(Proc {
        pid,
        ppid: info.parent().map_or(0, Pid::as_u32),
        pgrp: u32::try_from(pgrp).ok()?,
        start: info.start_time(),
        alive: !matches!(info.status(), ProcessStatus::Zombie | ProcessStatus::Dead),
    })
}

pub fn all_pids() -> Vec<u32> {
    let mut sys = System::new();
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
    sys.processes().keys().map(|p| p.as_u32()).collect()
}

pub fn env_has(pid: u32, key: &str) -> bool {
    let Some((sys, p)) = one(
        pid,
        ProcessRefreshKind::nothing().with_environ(UpdateKind::Always),
    ) else {
        return false;
    };
    let key = format!("{key}=");
    sys.process(p).is_some_and(|info| {
        info.environ()
            .iter()
            .any(|v| v.as_encoded_bytes().starts_with(key.as_bytes()))
    })
}

pub fn exe(pid: u32) -> Option<PathBuf> {
    let (sys, p) = one(
        pid,
        ProcessRefreshKind::nothing().with_exe(UpdateKind::Always),
    )?;
    sys.process(p)?.exe().map(Path::to_owned)
}

pub fn start_epoch(p: &Proc) -> Option<i64> {
    i64::try_from(p.start).ok()
}

/// Ticks after boot (what Claude Code writes on Linux), read by a build that knows starts
/// in seconds: compared to the second.
pub fn ticks_match(p: &Proc, ticks: u64) -> bool {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let Ok(hz) = u64::try_from(hz) else {
        return true;
    };
    if hz == 0 {
        return true;
    }
    let at = System::boot_time() + ticks / hz;
    at.abs_diff(p.start) <= 1
}

pub const DIES_WITH_PARENT: bool = false;

pub fn die_with_parent(_parent: u32) -> std::io::Result<()> {
    Ok(())
}

pub fn watch(
    dir: &Path,
    name: &'static str,
    wake: Box<dyn Fn() + Send + Sync>,
) -> std::io::Result<()> {
    use notify::event::{AccessKind, AccessMode, ModifyKind};
    use notify::{EventKind, RecursiveMode, Watcher};
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let Ok(ev) = ev else { return };
        // Put in place: created, renamed in, written and closed. Not a read, an open or a
        // change of times: the daemon reads the file itself, and waking on its own reads
        // would read again, for ever.
        let put_in_place = match ev.kind {
            EventKind::Create(_) => true,
            EventKind::Modify(ModifyKind::Metadata(_)) => false,
            EventKind::Modify(_) => true,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            _ => false,
        };
        if put_in_place
            && ev
                .paths
                .iter()
                .any(|p| p.file_name().is_some_and(|n| n == name))
        {
            wake();
        }
    })
    .map_err(std::io::Error::other)?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(std::io::Error::other)?;
    // The watch lasts as long as the process, as the Linux one does.
    Box::leak(Box::new(watcher));
    Ok(())
}

/// Extra `mmap` flags: none beyond the mapping itself.
pub const MMAP_FLAGS: libc::c_int = 0;

/// The user owning the TCP socket listening on `port` of `ip`, as `lsof` tells it (macOS
/// has it; where it is missing, `None`).
pub fn listener_uid(ip: std::net::IpAddr, port: u16) -> Option<u32> {
    let out = std::process::Command::new("lsof")
        .args(["-nP", "-sTCP:LISTEN", "-Fu"])
        .arg(format!("-iTCP@{ip}:{port}"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix('u')?.parse().ok())
}

/// The user owning the TCP socket whose local end is `local` and remote end `remote`, as
/// `lsof` tells it (macOS has it; where it is missing, `None`).
pub fn connection_uid(local: std::net::SocketAddr, remote: std::net::SocketAddr) -> Option<u32> {
    let out = std::process::Command::new("lsof")
        .args(["-nP", "-Fun"])
        .arg(format!("-iTCP@{}:{}", local.ip(), local.port()))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!("n{local}->{remote}");
    let mut uid = None;
    for l in text.lines() {
        if let Some(u) = l.strip_prefix('u') {
            uid = u.parse().ok();
        } else if l == want {
            return uid;
        }
    }
    None
}
