//! Session state files: the session contract, their format and modes, pruning, and the
//! stamp's test-and-set across processes.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::sync::Arc;

use hooks_core::ports::{SessionStore, StampResult};
use hooks_core::*;
use hooks_store_json::SessionFiles;
use time::OffsetDateTime;

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_796_199_477).unwrap()
}

/// The session contract, one test a rule.
mod session_contract {
    use super::*;
    hooks_core::session_store_contract!(|| {
        let d = tempfile::tempdir().unwrap();
        let s = SessionFiles::new(d.path());
        (d, Arc::new(s) as Arc<dyn SessionStore>)
    });
}

#[test]
fn stamps_merge_and_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let files = SessionFiles::new(d.path());
    let s = sid("abc");
    files
        .remember(
            &s,
            &SessionUpdate {
                cwd: Some("/w".into()),
                transcript_path: Some("/t/abc.jsonl".into()),
                origin: Some(Origin::Cron),
            },
        )
        .unwrap();
    let a = HookId::parse("a").unwrap();
    let b = HookId::parse("b").unwrap();
    assert_eq!(files.stamp(&s, &a, t0()).unwrap(), StampResult::Won);
    assert_eq!(files.stamp(&s, &b, t0()).unwrap(), StampResult::Won);
    assert_eq!(
        files
            .stamp(&s, &a, t0() + time::Duration::hours(1))
            .unwrap(),
        StampResult::Lost { at: t0() }
    );
    // A later event cannot move the conversation's folder; the stamps stay.
    files
        .remember(
            &s,
            &SessionUpdate {
                cwd: Some("/w2".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let st = files.read(&s).unwrap();
    assert_eq!(st.stamps.len(), 2);
    assert_eq!(
        (st.cwd.as_deref(), st.transcript_path.as_deref(), st.origin),
        (Some("/w"), Some("/t/abc.jsonl"), Some(Origin::Cron))
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(files.path(&s)).unwrap()).unwrap();
    assert_eq!(v["hooks"]["a"], "2026-12-02T08:17:57+0000");
    assert_eq!(
        std::fs::metadata(files.path(&s))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(files.dir()).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn prune_removes_only_old_files_with_nothing_pending() {
    let d = tempfile::tempdir().unwrap();
    let files = SessionFiles::new(d.path());
    for s in ["old", "oldpending", "new"] {
        files
            .stamp(&sid(s), &HookId::parse("h").unwrap(), t0())
            .unwrap();
    }
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400);
    for s in ["old", "oldpending"] {
        std::fs::File::options()
            .write(true)
            .open(files.path(&sid(s)))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let keep: HashSet<SessionId> = [sid("oldpending")].into();
    let cutoff = OffsetDateTime::now_utc() - time::Duration::days(30);
    let removed = files.prune(cutoff, &keep).unwrap();
    assert_eq!(removed, [sid("old")]);
    assert_eq!(files.count(), 2);
}

#[test]
fn a_corrupt_session_file_is_an_error_not_an_empty_state() {
    let d = tempfile::tempdir().unwrap();
    let files = SessionFiles::new(d.path());
    std::fs::create_dir_all(files.dir()).unwrap();
    std::fs::write(files.path(&sid("bad")), "{\"hooks\": [").unwrap();
    let e = files
        .stamp(&sid("bad"), &HookId::parse("h").unwrap(), t0())
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.json") && e.contains("line 1"), "{e}");
    assert_eq!(
        std::fs::read_to_string(files.path(&sid("bad"))).unwrap(),
        "{\"hooks\": [",
        "left as it was"
    );
}

#[test]
fn two_processes_stamping_the_same_pairs_have_exactly_one_winner_each() {
    let d = tempfile::tempdir().unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_hooks-store-helper"))
            .args(["stamp", d.path().to_str().unwrap(), "post-task", "0", "300"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (run(), run());
    let mut wins: HashMap<String, usize> = HashMap::new();
    let mut lines = 0;
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for l in String::from_utf8(out.stdout).unwrap().lines() {
            lines += 1;
            let (s, r) = l.split_once(' ').unwrap();
            *wins.entry(s.to_owned()).or_default() += usize::from(r == "won");
        }
    }
    assert_eq!(lines, 600);
    assert_eq!(wins.len(), 300);
    let bad: Vec<_> = wins.iter().filter(|(_, n)| **n != 1).collect();
    assert!(bad.is_empty(), "pairs without exactly one winner: {bad:?}");
}
