//! Who holds a session now, read from the system: processes by pid and start time (through
//! hooks-platform), and the Claude Code processes that have a session open from
//! `<claude-home>/sessions/<pid>.json`.
//!
//! Claude Code (2.1.x) keeps one such file per running process —
//! `{"pid", "sessionId", "cwd", "procStart", "kind", "status", "updatedAt", …}`, and from
//! 2.1.332 an interactive session's `"messagingSocketPath"`, its inbox — and removes
//! it when the process exits; a process killed with SIGKILL leaves its file behind. A file
//! counts only when its process is alive and, where the file gives `procStart`, started
//! then (ticks on Linux, `ps -o lstart` text on macOS): a stale file, or one whose pid now
//! belongs to another process, means closed.
//! The files are read leniently: unknown fields, other shapes and garbage are passed over.
//! A Codex thread is open while a Codex process holds its writer lock
//! ([`open_codex_thread`]).

use std::fs;
use std::path::Path;

use hooks_core::{OpenSession, ProcessRef, SessionId};
use hooks_platform::process::{self, Proc};
use serde_json::Value;

/// Claude Code's per-process files are small; anything much bigger is not one.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// What the system says of `pid`, if it exists.
pub fn proc_info(pid: u32) -> Option<Proc> {
    process::process(pid)
}

/// Whether `p` is alive: its pid exists, has not exited, and started at `p.start`.
pub fn is_alive(p: &ProcessRef) -> bool {
    process::is_alive(p.pid, p.start)
}

/// This process.
pub fn this_process() -> Option<ProcessRef> {
    process::this_process().map(|p| ProcessRef {
        pid: p.pid,
        start: p.start,
    })
}

/// `procStart` as text: Claude Code writes a string (ticks on Linux, `ps -o lstart` elsewhere);
/// a number is read as its digits.
fn proc_start(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A number, or a string holding one.
fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The open session one `sessions/<pid>.json` file describes, if it names `session` and
/// its process is alive.
fn from_file(path: &Path, session: &SessionId) -> Option<OpenSession> {
    let bytes =
        hooks_platform::read_regular(path, hooks_platform::ReadLimit::bytes(MAX_FILE_BYTES))
            .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    if v.get("sessionId")?.as_str()? != session.as_str() {
        return None;
    }
    let pid = u32::try_from(as_u64(v.get("pid")?)?).ok()?;
    let proc = proc_info(pid)?;
    if !proc.alive {
        return None;
    }
    // In either form Claude Code writes it: ticks (Linux) or lstart (macOS), to the second.
    if let Some(start) = v.get("procStart").and_then(proc_start)
        && !process::matches_proc_start(&proc, &start)
    {
        return None;
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let kind = text("kind");
    // Only a TUI's inbox, and only a socket of this user's: a socket another local user
    // put at that path would be handed the follow-up's prompt. A `claude -p` run's file
    // says `interactive` too, with an inbox, but `entrypoint: sdk-cli` (2.1.332): nobody
    // reads what arrives there, and the inbox goes as the run ends.
    let inbox = text("messagingSocketPath")
        .filter(|_| kind.as_deref() == Some("interactive"))
        .filter(|_| text("entrypoint").as_deref() != Some("sdk-cli"))
        .filter(|p| is_own_socket(Path::new(p)));
    Some({
        let mut o = OpenSession::new("claude", pid);
        o.kind = kind;
        o.status = text("status");
        o.inbox = inbox;
        o
    })
}

/// The conversation of the Claude Code process this one runs under, if any, with its
/// folder: the nearest ancestor (up to 32 up) that has a `<claude-home>/sessions/<pid>.json`
/// naming it, alive and started when the file says. Claude Code writes that file itself, in
/// the person's own folder, so neither a repository's settings `env` nor the agent's words
/// choose the conversation: what a command the agent runs (its Bash tool, an MCP server it
/// started) schedules goes into the agent's own conversation.
pub fn calling_session(claude_home: &Path) -> Option<(SessionId, Option<String>)> {
    let dir = claude_home.join("sessions");
    let mut pid = process::this_process()?.pid;
    for _ in 0..32 {
        pid = proc_info(pid)?.ppid;
        if pid <= 1 {
            return None;
        }
        let path = dir.join(format!("{pid}.json"));
        let Ok(bytes) = hooks_platform::read_regular(
            &path,
            hooks_platform::ReadLimit::bytes(MAX_FILE_BYTES)
                .no_follow()
                .own_only(),
        ) else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let Some(session) = v
            .get("sessionId")
            .and_then(Value::as_str)
            .and_then(|s| SessionId::parse(s).ok())
        else {
            continue;
        };
        if v.get("pid").and_then(as_u64) != Some(u64::from(pid)) {
            continue;
        }
        let proc = proc_info(pid)?;
        if let Some(start) = v.get("procStart").and_then(proc_start)
            && !process::matches_proc_start(&proc, &start)
        {
            continue;
        }
        let cwd = v.get("cwd").and_then(Value::as_str).map(str::to_owned);
        return Some((session, cwd));
    }
    None
}

/// Whether `path` is a Unix socket owned by this user.
fn is_own_socket(path: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_socket() && m.uid() == hooks_platform::account::uid())
}

/// The live Claude Code process that has `session` open, if any, from the files in
/// `<claude-home>/sessions/`. A missing folder means none.
pub fn open_session(claude_home: &Path, session: &SessionId) -> Option<OpenSession> {
    let dir = claude_home.join("sessions");
    let mut found: Vec<OpenSession> = fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| from_file(&e.path(), session))
        .collect();
    // Several (a person's TUI and a headless run): the interactive one says more.
    found.sort_by_key(|o| o.kind.as_deref() != Some("interactive"));
    let mut open = found.into_iter().next()?;
    if open.inbox.is_some() && refuses_peers(claude_home) {
        open.inbox = None;
    }
    Some(open)
}

/// Whether the user's Claude Code settings refuse messages from other sessions
/// (`"crossSessionInbound": "refuse"`): the inbox would drop the follow-up unseen, so it
/// is no way in. (`"hold"` is: the person sees the message and approves or declines it.)
fn refuses_peers(claude_home: &Path) -> bool {
    hooks_platform::read_regular(
        &claude_home.join("settings.json"),
        hooks_platform::ReadLimit::bytes(4 * 1024 * 1024),
    )
    .ok()
    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    .is_some_and(|v| v["crossSessionInbound"] == "refuse")
}

/// The Codex process that has thread `session` open, if any. While a TUI (or a run) has a
/// thread open, Codex holds `<codex-home>/thread-writer-locks/<thread>.lock` locked: a lock
/// this process cannot share is that. The file is only probed, never written; a missing
/// file, or one that is not a regular file, means closed. Codex 0.171.0's TUI runs its
/// threads in its background server (`codex app-server --managed-daemon`), which holds the
/// lock while the TUI is open and for about a minute after it quits (measured: 64–65 s;
/// `codex exec resume` meanwhile fails "thread … already has an active writer"), so the
/// lock cannot tell the two apart, and the words say so.
pub fn open_codex_thread(codex_home: &Path, session: &SessionId) -> Option<OpenSession> {
    let path = codex_home
        .join("thread-writer-locks")
        .join(format!("{session}.lock"));
    let file = hooks_platform::open_regular(&path, true).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(std::fs::TryLockError::WouldBlock) => Some({
            let mut o = OpenSession::new("codex", 0);
            o.kind = Some(
                "thread held: by its TUI, or by Codex's background server for about a minute after the TUI quits"
                    .into(),
            );
            o.status = None;
            o.inbox = None;
            o
        }),
        Err(_) => None,
    }
}
