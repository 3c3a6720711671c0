//! Open conversations from Claude Code's `sessions/<pid>.json`, and run leases, on real
//! files and real processes.

use std::fs;
use std::path::Path;
use std::process::Command;

use hooks_core::ports::{BeginRun, SessionMeta};
use hooks_core::*;
use hooks_meta::MetaStore;
use hooks_meta::live::{is_alive, open_session, this_process};
use time::OffsetDateTime;

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn write(home: &Path, name: &str, body: &str) {
    fs::create_dir_all(home.join("sessions")).unwrap();
    fs::write(home.join("sessions").join(name), body).unwrap();
}

/// What Claude Code writes as `procStart` on Linux: field 22 of `/proc/<pid>/stat`.
fn ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// What Claude Code writes as `procStart` on macOS: `LC_ALL=C TZ=UTC ps -o lstart= -p PID`.
fn lstart(pid: u32) -> String {
    let out = Command::new("ps")
        .args(["-o", "lstart=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .expect("ps");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A pid that belonged to a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn a_session_is_open_only_while_the_process_its_file_names_is_alive() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let me = this_process().expect("this process");
    let start = ticks(me.pid);
    let s = sid("4f0e1c2a-open");
    assert_eq!(open_session(home, &s), None, "no sessions folder: closed");
    write(home, "garbage.json", "{not json");
    write(home, "array.json", "[1, 2, 3]");
    write(home, "huge.json", &"x".repeat(100_000));
    write(
        home,
        "note.txt",
        &format!("{{\"pid\": {}, \"sessionId\": \"{s}\"}}", me.pid),
    );
    write(
        home,
        "1.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"{s}\", \"procStart\": \"{}\"}}",
            dead_pid(),
            start
        ),
    );
    write(
        home,
        "2.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"{s}\", \"procStart\": \"{}\", \"kind\": \"interactive\"}}",
            me.pid,
            start + 100_000
        ),
    );
    write(
        home,
        "3.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"other\", \"procStart\": \"{}\"}}",
            me.pid, start
        ),
    );
    assert_eq!(
        open_session(home, &s),
        None,
        "garbage, other shapes, a dead pid, a reused pid and another session: all closed"
    );
    write(
        home,
        "4.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"{s}\", \"cwd\": \"/w\", \"procStart\": \"{}\", \"kind\": \"interactive\", \"status\": \"busy\", \"future\": {{\"x\": 1}}}}",
            me.pid, start
        ),
    );
    assert_eq!(
        open_session(home, &s),
        Some({
            let mut o = OpenSession::new("claude", me.pid);
            o.kind = Some("interactive".into());
            o.status = Some("busy".into());
            o.inbox = None;
            o
        })
    );
    assert_eq!(
        open_session(home, &s).unwrap().to_string(),
        "pid ".to_owned() + &me.pid.to_string() + ", interactive, busy"
    );
    // An older file without procStart, naming a live pid, counts as open.
    fs::remove_file(home.join("sessions/4.json")).unwrap();
    write(
        home,
        "5.json",
        &format!("{{\"pid\": \"{}\", \"sessionId\": \"{s}\"}}", me.pid),
    );
    assert_eq!(open_session(home, &s).map(|o| o.pid), Some(me.pid));
}

/// Claude Code on macOS writes `procStart` as `ps -o lstart` prints it: a live process so
/// named holds its conversation open, on either build; one started an hour apart does not.
#[test]
fn a_sessions_file_in_the_macos_form_holds_the_conversation_open() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let me = this_process().expect("this process");
    let s = sid("4f0e1c2a-mac");
    let text = lstart(me.pid);
    assert!(text.len() >= 20, "ps printed {text:?}");
    write(
        home,
        "9.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"{s}\", \"procStart\": \"{text}\", \"kind\": \"interactive\"}}",
            me.pid
        ),
    );
    assert_eq!(
        open_session(home, &s).map(|o| o.pid),
        Some(me.pid),
        "procStart {text:?} names this process"
    );
    let at = hooks_platform::process::parse_lstart(&text).unwrap() - 3600;
    let hour_off = hooks_platform::process::lstart_of(at).unwrap();
    write(
        home,
        "9.json",
        &format!(
            "{{\"pid\": {}, \"sessionId\": \"{s}\", \"procStart\": \"{hour_off}\"}}",
            me.pid
        ),
    );
    assert_eq!(
        open_session(home, &s),
        None,
        "a reused pid: the process named started an hour before this one"
    );
}

fn lease(run: &str, owner: Option<ProcessRef>, host: &str) -> RunLease {
    let now = OffsetDateTime::from_unix_timestamp(1_796_199_477).unwrap();
    RunLease {
        run_id: run.into(),
        hook_id: HookId::parse("post-task").unwrap(),
        owner: "vm:1:2".into(),
        host: host.into(),
        owner_process: owner,
        child: None,
        started_at: now,
        expires_at: now + time::Duration::seconds(90),
    }
}

#[tokio::test]
async fn the_run_lease_is_a_test_and_set_with_the_stamp_and_judged_by_its_processes() {
    let d = tempfile::tempdir().unwrap();
    let meta =
        MetaStore::new(hooks_core::testing::InMemorySessions::new(), d.path()).with_host("here");
    let s = sid("leased");
    let me = this_process().unwrap();
    let mine = lease("a#1", Some(me), "here");
    let now = mine.started_at;
    assert_eq!(meta.begin_run(&s, &mine, now).await.unwrap(), BeginRun::Won);
    let facts = meta.facts(&s).await.unwrap();
    assert_eq!(facts.state.stamps.len(), 1, "stamped with the lease");
    assert_eq!(facts.lease.as_ref().map(|l| l.holder), Some(Holder::Alive));
    let other = RunLease {
        hook_id: HookId::parse("other").unwrap(),
        ..lease("b#1", None, "here")
    };
    assert!(
        matches!(meta.begin_run(&s, &other, now).await.unwrap(), BeginRun::Busy(l) if l.lease.run_id == "a#1"),
        "one run per session, whatever the hook"
    );
    assert!(
        !meta.update_lease(&s, &other).await.unwrap(),
        "not b's lease"
    );
    let with_child = RunLease {
        child: Some(me),
        ..mine.clone()
    };
    assert!(meta.update_lease(&s, &with_child).await.unwrap());
    assert_eq!(meta.leases().await.unwrap()[0].1.lease, with_child);
    meta.end_lease(&s, "b#1").await.unwrap();
    assert!(
        meta.facts(&s).await.unwrap().lease.is_some(),
        "only its run ends it"
    );
    meta.end_lease(&s, "a#1").await.unwrap();
    assert_eq!(meta.facts(&s).await.unwrap().lease, None);
    assert!(meta.leases().await.unwrap().is_empty());
    assert!(
        matches!(
            meta.begin_run(&s, &mine, now).await.unwrap(),
            BeginRun::Stamped { .. }
        ),
        "the stamp outlives the lease: never twice"
    );
    assert_eq!(
        meta.begin_run(&s, &other, now).await.unwrap(),
        BeginRun::Won
    );

    // What the holder looks like from here.
    let gone = ProcessRef {
        pid: dead_pid(),
        start: me.start,
    };
    assert!(!is_alive(&gone));
    let reused = ProcessRef {
        pid: me.pid,
        start: me.start + 1,
    };
    for (l, want) in [
        (lease("x", Some(me), "here"), Holder::Alive),
        (lease("x", Some(gone), "here"), Holder::Gone),
        (lease("x", Some(reused), "here"), Holder::Gone),
        // Its daemon died but its claude runs on (no parent-death signal, as on macOS):
        // over for the record; the next daemon ends it and records it interrupted.
        (
            RunLease {
                child: Some(me),
                ..lease("x", Some(gone), "here")
            },
            Holder::Gone,
        ),
        // A lease that names no daemon is judged by its run's process.
        (
            RunLease {
                child: Some(me),
                ..lease("x", None, "here")
            },
            Holder::Alive,
        ),
        (lease("x", Some(gone), "elsewhere"), Holder::Unknown),
    ] {
        assert_eq!(meta.judge(l.clone()).holder, want, "{l:?}");
    }
}

/// Claude Code 2.1.332's inbox is offered only for a TUI session, and only when the path
/// its file names is a socket of this user's: a regular file (or another user's socket)
/// there would be handed the follow-up's prompt. A `claude -p` run's file (measured on
/// 2.1.332: `"kind": "interactive"`, `"entrypoint": "sdk-cli"`, an inbox, `idle` as its
/// turn ends) is no TUI: no person reads what arrives there, and its inbox is gone as it
/// exits.
#[test]
fn an_open_sessions_inbox_is_its_own_socket_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let me = this_process().expect("this process");
    let start = ticks(me.pid);
    let s = sid("7c1d-inbox");
    let sock = d.path().join("7.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let plain = d.path().join("plain");
    fs::write(&plain, "").unwrap();
    let file_from = |kind: &str, entrypoint: &str, path: &Path| {
        write(
            &home,
            "7.json",
            &format!(
                "{{\"pid\": {}, \"sessionId\": \"{s}\", \"procStart\": \"{start}\", \"kind\": \"{kind}\", \"entrypoint\": \"{entrypoint}\", \"status\": \"idle\", \"messagingSocketPath\": \"{}\"}}",
                me.pid,
                path.display()
            ),
        )
    };
    let file = |kind: &str, path: &Path| file_from(kind, "cli", path);
    file("interactive", &sock);
    assert_eq!(
        open_session(&home, &s).and_then(|o| o.inbox),
        Some(sock.display().to_string())
    );
    file("interactive", &plain);
    assert_eq!(
        open_session(&home, &s).and_then(|o| o.inbox),
        None,
        "not a socket"
    );
    file("interactive", &d.path().join("gone.sock"));
    assert_eq!(
        open_session(&home, &s).and_then(|o| o.inbox),
        None,
        "nothing there"
    );
    file("sdk-cli", &sock);
    let o = open_session(&home, &s).expect("still open");
    assert_eq!(o.inbox, None, "not an interactive session");
    file_from("interactive", "sdk-cli", &sock);
    let o = open_session(&home, &s).expect("a headless run holds it open");
    assert_eq!(o.inbox, None, "a claude -p run is no TUI");
    // A person who refuses messages from other sessions: no way in (it would be dropped
    // unseen); one who holds them for approval is asked.
    file("interactive", &sock);
    for (setting, inbox) in [("refuse", None), ("hold", Some(sock.display().to_string()))] {
        fs::write(
            home.join("settings.json"),
            format!("{{\"crossSessionInbound\": \"{setting}\"}}"),
        )
        .unwrap();
        assert_eq!(
            open_session(&home, &s).and_then(|o| o.inbox),
            inbox,
            "{setting}"
        );
    }
}
