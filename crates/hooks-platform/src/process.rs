//! Processes: whether one is alive and when it started, so a reused pid is never taken for
//! the process it once named; its group, environment and program; this host's name.

use std::path::PathBuf;

/// What is known of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgrp: u32,
    /// When it started, as this platform tells it: clock ticks after boot on Linux (what
    /// `/proc/<pid>/stat` says), seconds after the epoch elsewhere. Comparable only with
    /// starts read on the same host by the same build.
    pub start: u64,
    /// False for a process that has exited but was not reaped yet (a zombie).
    pub alive: bool,
}

/// The process `pid`, if it exists.
pub fn process(pid: u32) -> Option<Proc> {
    if pid == 0 {
        return None;
    }
    crate::imp::process(pid)
}

/// Whether `pid` names a live process.
pub fn exists(pid: u32) -> bool {
    process(pid).is_some_and(|p| p.alive)
}

/// Whether `pid` is alive and started at `start` (as [`Proc::start`] gives it).
pub fn is_alive(pid: u32, start: u64) -> bool {
    process(pid).is_some_and(|p| p.alive && p.start == start)
}

/// This process.
pub fn this_process() -> Option<Proc> {
    process(std::process::id())
}

/// Every process id on the host.
pub fn all_pids() -> Vec<u32> {
    crate::imp::all_pids()
}

/// Whether the environment of `pid` has the variable `key` (an unreadable one: no).
pub fn env_has(pid: u32, key: &str) -> bool {
    crate::imp::env_has(pid, key)
}

/// The processes still there of the process group a run led: in the group `leader` led,
/// started no earlier than it (`leader_start`, as [`Proc::start`] gives it), alive, and
/// carrying the variable `marker` in their environment (a runner sets it on its child), so
/// a reused pid or group id is never taken for the run's. What every runner whose daemon
/// died mid-run needs to end what the run left.
pub fn group_leftovers(leader: u32, leader_start: u64, marker: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            process(pid).is_some_and(|p| p.pgrp == leader && p.start >= leader_start && p.alive)
        })
        .filter(|&pid| env_has(pid, marker))
        .collect()
}

/// Ends (SIGKILL) the processes [`group_leftovers`] finds; returns how many it signalled.
pub fn end_group_leftovers(leader: u32, leader_start: u64, marker: &str) -> usize {
    let pids = group_leftovers(leader, leader_start, marker);
    for &pid in &pids {
        if let Ok(p) = libc::pid_t::try_from(pid) {
            // SAFETY: kill(2) has no memory effects; the pid was checked just above to be
            // a marked process of the run's group.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
    }
    pids.len()
}

/// Whether process `pid` is still alive once `grace` has passed: a process killed a moment
/// ago may take a little while to go, so this asks again until it is gone or `grace` is up.
pub fn outlives(pid: u32, grace: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + grace;
    loop {
        if !process(pid).is_some_and(|p| p.alive) {
            return false;
        }
        if std::time::Instant::now() >= until {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// For a runner's tests: the process whose id a test agent wrote to `pid_file`, and whether
/// it [outlives] `grace`; one that does is ended (SIGKILL, by its id), so a
/// failing check leaves nothing running. `None` when the file holds no process id.
pub fn recorded_child_outlives(
    pid_file: &std::path::Path,
    grace: std::time::Duration,
) -> Option<(u32, bool)> {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let alive = outlives(pid, grace);
    if alive
        && let Ok(p) = libc::pid_t::try_from(pid)
        && p > 1
    {
        // SAFETY: kill(2) has no memory effects; the pid is the test agent's own child,
        // checked alive just above.
        unsafe {
            libc::kill(p, libc::SIGKILL);
        }
    }
    Some((pid, alive))
}

/// Sends `sig` to the process group `pgid` (a runner's child leads its own), by its id; a
/// group id of 0 or 1 (which would name the caller's group or every process) is never
/// signalled.
pub fn signal_group(pgid: u32, sig: libc::c_int) {
    if let Ok(p) = libc::pid_t::try_from(pgid)
        && p > 1
    {
        // SAFETY: kill(2) with a negative pid signals a process group and has no memory
        // effects; 0 and 1 are refused above.
        unsafe {
            libc::kill(-p, sig);
        }
    }
}

/// The program `pid` runs.
pub fn exe(pid: u32) -> Option<PathBuf> {
    crate::imp::exe(pid)
}

/// When `p` started, in seconds after the epoch.
pub fn start_epoch(p: &Proc) -> Option<i64> {
    crate::imp::start_epoch(p)
}

/// This host's name.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer it is given.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_owned();
    (!name.is_empty()).then_some(name)
}

/// Whether [`die_with_parent`] makes the kernel end a child whose starter died (Linux's
/// `PR_SET_PDEATHSIG`); elsewhere the next daemon ends it, from its run's lease.
pub const DIES_WITH_PARENT: bool = crate::imp::DIES_WITH_PARENT;

/// For a child between fork and exec: be killed when the thread that started it dies,
/// where the system can say so (Linux), and fail to start when `parent` (the starter's
/// pid, taken before the fork) is already gone; elsewhere nothing (a dead daemon's runs
/// are ended by the next daemon, from their lease).
pub fn die_with_parent(parent: u32) -> std::io::Result<()> {
    crate::imp::die_with_parent(parent)
}

/// Whether the `procStart` Claude Code wrote into `sessions/<pid>.json` names the process
/// `p`. Claude Code writes field 22 of `/proc/<pid>/stat` on Linux (clock ticks after
/// boot, e.g. `"307923"`) and `LC_ALL=C TZ=UTC ps -o lstart= -p PID` elsewhere (e.g.
/// `"Sat Aug  8 07:11:34 2026"`, to the second). Either form is compared, ticks exactly
/// where this build reads ticks and to the second otherwise; one that cannot be read counts
/// as a match, as Claude Code itself counts it.
pub fn matches_proc_start(p: &Proc, claimed: &str) -> bool {
    let c = claimed.trim();
    if c.is_empty() {
        return true;
    }
    if let Ok(ticks) = c.parse::<u64>() {
        return crate::imp::ticks_match(p, ticks);
    }
    match (parse_lstart(c), start_epoch(p)) {
        (Some(at), Some(started)) => (at - started).abs() <= 1,
        _ => true,
    }
}

/// `ps -o lstart` in the C locale and UTC: `"Sat Aug  8 07:11:34 2026"`, in seconds after
/// the epoch.
pub fn parse_lstart(s: &str) -> Option<i64> {
    let f: Vec<&str> = s.split_whitespace().collect();
    let [_weekday, month, day, clock, year] = f[..] else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == month)?;
    let month = time::Month::try_from(u8::try_from(month + 1).ok()?).ok()?;
    let date = time::Date::from_calendar_date(year.parse().ok()?, month, day.parse().ok()?).ok()?;
    let mut hms = clock.split(':').map(|x| x.parse::<u8>().ok());
    let (Some(Some(h)), Some(Some(m)), Some(Some(sec)), None) =
        (hms.next(), hms.next(), hms.next(), hms.next())
    else {
        return None;
    };
    let at = time::PrimitiveDateTime::new(date, time::Time::from_hms(h, m, sec).ok()?);
    Some(at.assume_utc().unix_timestamp())
}

/// `p`'s start in `ps -o lstart` form (UTC), as Claude Code writes it outside Linux.
pub fn lstart(p: &Proc) -> Option<String> {
    lstart_of(start_epoch(p)?)
}

/// A time (seconds after the epoch) in `ps -o lstart` form, in UTC:
/// `"Sat Aug  8 07:11:34 2026"`.
pub fn lstart_of(epoch: i64) -> Option<String> {
    let at = time::OffsetDateTime::from_unix_timestamp(epoch).ok()?;
    let f = time::format_description::parse_borrowed::<2>(
        "[weekday repr:short] [month repr:short] [day padding:space] [hour]:[minute]:[second] [year]",
    )
    .ok()?;
    at.format(&f).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_made_up_start_is_not() {
        let me = this_process().expect("this process");
        assert_eq!(me.pid, std::process::id());
        assert!(me.alive && exists(me.pid));
        assert!(is_alive(me.pid, me.start));
        assert!(!is_alive(me.pid, me.start + 1_000_000));
        assert!(all_pids().contains(&me.pid));
        assert!(env_has(me.pid, "PATH") || std::env::var_os("PATH").is_none());
        assert!(!env_has(me.pid, "HOOKS_PLATFORM_SURELY_UNSET_VARIABLE"));
        assert!(exe(me.pid).is_some());
        assert!(hostname().is_some());
        assert!(process(0).is_none());
    }

    #[test]
    fn lstart_reads_as_ps_writes_it_and_round_trips() {
        assert_eq!(
            parse_lstart("Sat Aug  8 07:11:34 2026"),
            Some(1_786_173_094)
        );
        assert_eq!(
            parse_lstart("Thu Dec  3 23:37:56 2026"),
            Some(1_796_341_076)
        );
        for bad in [
            "",
            "yesterday",
            "Sat Aug 8 07:11 2026",
            "Sat Foo  8 07:11:34 2026",
        ] {
            assert_eq!(parse_lstart(bad), None, "{bad}");
        }
        let me = this_process().unwrap();
        let text = lstart(&me).expect("an lstart");
        assert!(matches_proc_start(&me, &text), "{text}");
        let earlier = lstart_of(start_epoch(&me).unwrap() - 3600).unwrap();
        assert_eq!(
            lstart_of(1_786_173_094).as_deref(),
            Some("Sat Aug  8 07:11:34 2026")
        );
        assert!(
            !matches_proc_start(&me, &earlier),
            "an hour off is another process"
        );
        assert!(
            matches_proc_start(&me, "not a time"),
            "unreadable counts as a match"
        );
        assert!(matches_proc_start(&me, ""));
    }

    /// The form `ps` itself prints, read back: the same second as this process's start.
    #[test]
    fn what_ps_prints_names_this_process() {
        let Ok(out) = std::process::Command::new("ps")
            .args(["-o", "lstart=", "-p", &std::process::id().to_string()])
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .output()
        else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let me = this_process().unwrap();
        assert!(matches_proc_start(&me, &text), "ps says {text:?}");
    }
}
