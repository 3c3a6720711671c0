//! Several real processes on one store, and a writer killed mid-write.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};

use super::*;

/// How many temp files of the store's writers are in `dir`.
fn temp_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("hooks.json.tmp.")
        })
        .count()
}

fn helper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hooks-store-helper"))
}

fn wait_ok(children: Vec<Child>) -> Vec<String> {
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "helper failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn four_processes_enqueue_1000_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    JsonStore::open(dir.path(), now()).unwrap();
    let kids: Vec<Child> = (0..4)
        .map(|p| {
            helper()
                .args([
                    "enqueue",
                    dir.path().to_str().unwrap(),
                    &(p * 250).to_string(),
                    "250",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_ok(kids);
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let pending = store.snapshot().await.unwrap().pending;
    let mut sessions: Vec<String> = pending.iter().map(|p| p.session_id.to_string()).collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(
        (pending.len(), sessions.len()),
        (1000, 1000),
        "exactly 1,000 distinct entries"
    );
}

#[tokio::test]
async fn four_processes_claim_200_each_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let past = OffsetDateTime::now_utc() - Duration::minutes(1);
    let entries = (0..200)
        .map(|i| due_entry(&format!("c{i}"), past))
        .collect();
    store.enqueue(entries).await.unwrap();
    let kids: Vec<Child> = (0..4)
        .map(|p| {
            helper()
                .args(["claim", dir.path().to_str().unwrap(), &format!("owner{p}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs = wait_ok(kids);
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in outs.iter().flat_map(|o| o.lines()) {
        *counts.entry(line.to_owned()).or_default() += 1;
    }
    assert_eq!(counts.len(), 200, "every entry was claimed");
    assert!(
        counts.values().all(|&n| n == 1),
        "no entry was claimed twice: {counts:?}"
    );
    let per_owner: Vec<usize> = outs.iter().map(|o| o.lines().count()).collect();
    eprintln!("claims per process: {per_owner:?}");
    assert!(store.snapshot().await.unwrap().pending.is_empty());
}

#[tokio::test]
async fn a_writer_killed_before_the_rename_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    JsonStore::open(dir.path(), now()).unwrap();
    let path = dir.path().join(STORE_FILE);
    let before = fs::read(&path).unwrap();
    let out = helper()
        .args(["create", dir.path().to_str().unwrap(), "Never Lands"])
        .env("HOOKS_FAILPOINT", "after-temp-write")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the helper died at the failpoint");
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the store file is the old one, intact"
    );
    let strays = temp_files(dir.path());
    assert_eq!(strays, 1, "the dead writer left its temp file");
    let store = JsonStore::open(dir.path(), now()).unwrap();
    assert_eq!(
        store.snapshot().await.unwrap().hooks.len(),
        2,
        "the old file loads"
    );
    assert_eq!(
        store.clean_up().unwrap(),
        1,
        "clean_up removes the dead writer's temp file"
    );
    let left = temp_files(dir.path());
    assert_eq!(left, 0, "and it is gone");
}

#[tokio::test]
async fn a_write_that_fails_midway_leaves_the_previous_file_and_no_temp() {
    // A file-size limit makes the temp-file write fail (EFBIG) the way a full disk does
    // (ENOSPC); SIGXFSZ is ignored so the process sees the error instead of dying.
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let big = (0..300)
        .map(|i| due_entry(&format!("big{i}"), now()))
        .collect();
    store.enqueue(big).await.unwrap();
    let path = dir.path().join(STORE_FILE);
    let before = fs::read(&path).unwrap();
    let limit = format!("--fsize={}", before.len() / 2);
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec prlimit \"$0\" \"$@\"", &limit])
        .arg(env!("CARGO_BIN_EXE_hooks-store-helper"))
        .args(["create", dir.path().to_str().unwrap(), "Too Big To Write"])
        .output()
        .expect("prlimit runs");
    assert!(!out.status.success(), "the write must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not write") && err.contains(STORE_FILE),
        "a clear error: {err}"
    );
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the previous file is intact"
    );
    let temps = temp_files(dir.path());
    assert_eq!(temps, 0, "the failed writer removed its temp file");
    assert_eq!(store.snapshot().await.unwrap().pending.len(), 300);
}
