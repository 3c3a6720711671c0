//! The app on PostgreSQL, against a real server: the concurrency and crash tests of the JSON
//! store, two hosts on one database, copying between stores, and a daemon woken by
//! LISTEN/NOTIFY or by polling.

use std::collections::HashMap;
use std::thread;

use hooks_testkit::wait_until;
use serde_json::Value;

use crate::reliability::*;
use crate::support::*;

#[test]
fn postgres_four_processes_notify_1000_sessions_and_lose_none() {
    notify_1000_from_4_processes(&App::fake_pg());
}

#[test]
fn postgres_four_concurrent_ticks_run_each_of_200_sessions_exactly_once() {
    ticks_4_over_200(&App::fake_pg());
}

#[test]
fn postgres_kill_9_of_serve_during_a_run_loses_nothing_and_repeats_nothing() {
    kill_9_mid_run(&App::fake_pg());
}

fn sessions_run(app: &App) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in app.fake_log() {
        *counts
            .entry(line.split(' ').next().unwrap().to_owned())
            .or_default() += 1;
    }
    counts
}

#[test]
fn two_hosts_on_one_database_each_fire_their_own_entries_once() {
    let url = hooks_testkit::pg::database();
    let a = App::fake().on_store(&url).for_host("host-a");
    let b = App::fake().on_store(&url).for_host("host-b");
    // Each host is set up on its own machine: its prompt file, its Claude home.
    a.ok(&["init"]);
    b.ok(&["init"]);
    a.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    let queue = |app: &App, prefix: &str| queue_sessions(app, prefix, 30);
    let (of_a, of_b) = (queue(&a, "a"), queue(&b, "b"));
    assert_eq!(a.pending().len(), 60, "one queue for both hosts");
    // Both hosts' daemons at once, twice over: each claims only its own host's entries.
    thread::scope(|s| {
        for app in [&a, &b, &a, &b] {
            s.spawn(move || {
                let o = app.run(&["tick", "--quiet-period", "0", "--concurrency", "4"]);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            });
        }
    });
    let (ran_a, ran_b) = (sessions_run(&a), sessions_run(&b));
    assert_eq!(ran_a.len(), 30, "host a ran its 30: {ran_a:?}");
    assert!(
        of_a.iter().all(|s| ran_a.get(s) == Some(&1)),
        "each once: {ran_a:?}"
    );
    assert_eq!(ran_b.len(), 30, "host b ran its 30: {ran_b:?}");
    assert!(
        of_b.iter().all(|s| ran_b.get(s) == Some(&1)),
        "each once: {ran_b:?}"
    );
    assert!(a.pending().is_empty());
    assert_eq!(a.runs().len(), 60, "one run log for both");
    // A daemon with --any-host fires what a host with no daemon queued.
    let c = App::fake().on_store(&url).for_host("host-c");
    let of_c = queue(&c, "c");
    a.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(a.pending().len(), 30, "host a leaves host c's entries");
    let o = a.run(&[
        "--any-host",
        "tick",
        "--quiet-period",
        "0",
        "--concurrency",
        "4",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(a.pending().is_empty(), "--any-host took them");
    let ran_a = sessions_run(&a);
    assert!(of_c.iter().all(|s| ran_a.get(s) == Some(&1)), "{ran_a:?}");
}

/// Everything a store shows through the CLI, for comparing two stores.
fn contents(app: &App) -> Value {
    let mut pending = app.json(&["pending"]);
    for p in pending.as_array_mut().unwrap() {
        // Where a copy puts an entry is the copier's host; the rest must be equal.
        p.as_object_mut().unwrap().remove("host");
    }
    let mut budget = app.json(&["budget", "show"]);
    // Today's spend and the day depend on when it is asked; the budget itself must match.
    for k in ["spentTodayUsd", "today", "remainingUsd"] {
        budget.as_object_mut().map(|b| b.remove(k));
    }
    let sessions: Vec<Value> = ["t0", "t1", "t2"]
        .iter()
        .map(|s| {
            // A store that never saw the session knows nothing of it (exit 1).
            let o = app.run(&["session", s, "--json"]);
            match o.status.code() {
                Some(0) => serde_json::from_slice::<Value>(&o.stdout).unwrap()["stamps"].clone(),
                _ => Value::Null,
            }
        })
        .collect();
    serde_json::json!({
        "hooks": app.json(&["hooks", "list"]),
        "pending": pending,
        "runs": app.json(&["runs"]),
        "budget": budget,
        "sessions": sessions,
    })
}

#[test]
fn store_copy_json_to_postgres_to_json_gives_back_the_same_store_and_is_idempotent() {
    let src = App::fake();
    let sessions = queue_due(&src, 3);
    src.ok(&[
        "hooks",
        "create",
        "Changelog",
        "--prompt-file",
        ".claude/agents/hooks/changelog.md",
        "--delay",
        "600",
    ]);
    // All three run (stamps, history, run log); a second hook stays queued for one.
    src.ok(&["tick", "--quiet-period", "0"]);
    src.ok(&["budget", "set", "--daily-usd", "4.5", "--time-zone", "UTC"]);
    src.ok(&["notify", "--session", &sessions[0]]);
    let json_dir = src.data_dir();
    let json = format!("json:{}", json_dir.display());
    let url = hooks_testkit::pg::database();
    let out = src.ok(&["store", "copy", "--from", &json, "--to", &url]);
    assert!(out.starts_with("copied 3 hooks, "), "{out}");
    let pg = App::fake().on_store(&url);
    let before = contents(&src);
    assert_eq!(before["runs"].as_array().map(Vec::len), Some(3), "{before}");
    assert!(
        before["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["post-task"].is_string()),
        "every session stamped: {before}"
    );
    assert_eq!(
        before["pending"].as_array().map(Vec::len),
        Some(1),
        "{before}"
    );
    assert_eq!(contents(&pg), before, "PostgreSQL holds what the file held");
    let again = src.ok(&["store", "copy", "--from", &json, "--to", &url]);
    assert!(
        again.contains("0 queued entries, 3 sessions (0 new stamps), 0 runs"),
        "a second copy adds nothing: {again}"
    );
    assert_eq!(contents(&pg), before, "and changes nothing");

    let back = App::fake();
    let back_dir = back.data_dir();
    let out = back.ok(&[
        "store",
        "copy",
        "--from",
        &url,
        "--to",
        &format!("json:{}", back_dir.display()),
    ]);
    assert!(out.contains("copied 3 hooks"), "{out}");
    assert_eq!(
        contents(&back),
        before,
        "and back to a file, the same store"
    );

    // A target holding other data is refused, named, and left as it was.
    let other = App::fake();
    other.ok(&[
        "hooks",
        "create",
        "Mine",
        "--prompt-file",
        ".claude/agents/hooks/mine.md",
    ]);
    let other_dir = format!("json:{}", other.data_dir().display());
    let mine = contents(&other);
    let o = other.run(&["store", "copy", "--from", &url, "--to", &other_dir]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("to: must be a new store")
            && err.contains("hooks mine"),
        "{err}"
    );
    assert_eq!(contents(&other), mine, "refused changes nothing");
    other.ok(&[
        "store", "copy", "--from", &url, "--to", &other_dir, "--merge",
    ]);
    let merged = other.json(&["hooks", "list"]);
    let ids: Vec<&str> = merged
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"mine") && ids.contains(&"changelog"),
        "{ids:?}"
    );
}

#[test]
fn a_postgres_daemon_is_woken_by_another_process_queuing_listening_or_polling() {
    for poll in [false, true] {
        let app = App::fake_pg();
        app.ok(&["init"]);
        app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
        let mut args = vec!["serve", "--quiet-period", "0"];
        if poll {
            args.insert(0, "--store-poll");
        }
        let serve = app.spawn(&args);
        // The daemon is up once it has registered as serving (its lock taken).
        let t = app.transcript("w1", &app.proj, 1000);
        app.ok(&[
            "notify",
            "--session",
            "w1",
            "--transcript",
            t.to_str().unwrap(),
        ]);
        let ran = wait_until(30, || app.fake_log().len() == 1);
        signal(&serve, libc::SIGTERM);
        let out = serve.wait_with_output().unwrap();
        assert!(
            ran,
            "poll={poll}: the follow-up ran: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(app.pending().is_empty());
    }
}

#[test]
fn store_migrate_applies_the_schema_once_and_a_bad_store_url_is_named() {
    let url = hooks_testkit::pg::database();
    let app = App::fake().on_store(&url);
    let out = app.ok(&["store", "migrate"]);
    assert!(out.contains("applied migrations 1, 2, 3, 4"), "{out}");
    let out = app.ok(&["store", "migrate"]);
    assert!(
        out.contains(&format!(
            "the schema is up to date (version {})",
            hooks_store_postgres::SCHEMA_VERSION
        )),
        "{out}"
    );
    // A database an earlier version made (schema 1) is brought up to date.
    let psql = hooks_testkit::pg::programs()
        .map(std::path::Path::to_path_buf)
        .or_else(hooks_testkit::pg::bin_dir)
        .expect("PostgreSQL's programs")
        .join("psql");
    let sql = |q: &str| {
        let o = std::process::Command::new(&psql)
            .args([
                url.as_str(),
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
            ])
            .arg(q)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    sql(
        "DROP TABLE pause; ALTER TABLE hooks DROP COLUMN max_lateness_s; \
         ALTER TABLE hooks DROP COLUMN errors; ALTER TABLE pending DROP COLUMN error; \
         ALTER TABLE runs DROP COLUMN delivered; ALTER TABLE hooks DROP COLUMN deliver; \
         ALTER TABLE hooks DROP COLUMN agent; ALTER TABLE pending DROP COLUMN waiting_kind; \
         ALTER TABLE pending DROP COLUMN attempts; ALTER TABLE pending DROP COLUMN not_taken; \
         ALTER TABLE hooks DROP COLUMN repeat; \
         DELETE FROM hooks WHERE id = 'continue-after-limit'; \
         DELETE FROM hooks_app_schema WHERE version >= 2;",
    );
    // Entries as that version kept them: a limit's attempts in `retries`, waits as words.
    sql(
        "INSERT INTO pending (hook_id, session_id, host, due_at, retries, waiting_reason, \
         waiting_since, waiting_open) VALUES \
         ('post-task', 'limited', 'h', now(), 2, \
          'rate limited: overloaded, tries again at 2026-12-01T00:00:40+0000 (attempt 3 of 5)', now(), false), \
         ('post-task', 'untaken', 'h', now(), 0, \
          'not taken by the open conversation (no inbox); resumed once it is closed', now(), true), \
         ('post-task', 'looked', 'h', now(), 3, \
          'transcript not found yet: tries again at 2026-12-01T00:00:40+0000 (retry 3 of 10)', now(), false);",
    );
    let out = app.ok(&["store", "migrate"]);
    assert!(
        out.contains("applied migrations 2, 3, 4, 5, 6, 7, 8, 9"),
        "{out}"
    );
    assert_eq!(
        sql(
            "SELECT session_id, waiting_kind, retries, attempts, not_taken FROM pending \
             ORDER BY session_id"
        ),
        "limited|limit|0|2|0\nlooked|not-ready|3|0|0\nuntaken|not-taken|0|0|1\n",
        "each wait gets its kind, and a limit's attempts their own count"
    );
    sql("DELETE FROM pending;");
    // It gets the second seed, off.
    assert_eq!(app.hook("continue-after-limit")["enabled"], false);
    // A hook of before follows a conversation up once, as it did.
    assert_eq!(app.hook("post-task")["repeat"], Value::Null);
    assert_eq!(
        app.json(&["pause", "--for", "1m"])["paused"],
        true,
        "and pauses work"
    );
    let bad = App::fake().on_store("mysql://x");
    let o = bad.run(&["hooks", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("store: must be json:DIR"));
}

#[test]
fn a_pause_on_postgres_holds_for_every_host() {
    let url = hooks_testkit::pg::database();
    let a = App::fake().on_store(&url).for_host("host-a");
    let b = App::fake().on_store(&url).for_host("host-b");
    a.ok(&["init"]);
    b.ok(&["init"]);
    let p = a.json(&["pause", "--for", "1h"]);
    assert!(p["until"].is_string(), "{p}");
    let seen = b.json(&["status"]);
    assert_eq!(
        seen["pause"]["paused"], true,
        "host b sees host a's pause: {seen}"
    );
    assert_eq!(seen["pause"]["until"], p["until"]);
    b.post_task_at_once();
    // A hook's lateness limit is kept by the database too.
    a.ok(&["hooks", "update", "post-task", "--max-lateness", "7200"]);
    assert_eq!(b.hook("post-task")["maxLatenessSeconds"], 7200);
    let t = b.transcript("pg-p1", &b.proj, 1000);
    b.ok(&[
        "notify",
        "--session",
        "pg-p1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    b.ok(&["tick", "--quiet-period", "0"]);
    assert!(b.fake_log().is_empty(), "nothing started on host b");
    let waiting = b.pending()[0]["waiting"]["reason"].clone();
    assert!(
        waiting
            .as_str()
            .is_some_and(|r| r.starts_with("paused until ")),
        "{waiting}"
    );
    assert_eq!(b.json(&["unpause"])["woken"], 1);
    assert_eq!(a.json(&["status"])["pause"]["paused"], false);
    b.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(b.fake_log(), ["pg-p1 post-task"]);
}
