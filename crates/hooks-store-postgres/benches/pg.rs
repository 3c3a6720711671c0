//! PostgreSQL store figures, on a private durable server (fsync on) on loopback; prints one
//! JSON object for `cargo xtask bench` (`--quick` does less):
//!
//! - enqueue (the hook's own `enqueue_event`) and claim + complete per second at 1,000,
//!   100,000 and 1,000,000 pending (quick: 1,000 and 100,000);
//! - with `HOOKS_APP_BIN` set: `claude-hook` as a whole process (connect, enqueue, exit), and
//!   the lateness of an entry queued by another process, as another host would, with the
//!   daemon listening (LISTEN/NOTIFY) and polling, and listening with a busy queue.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hooks_core::ports::*;
use hooks_core::*;
use hooks_store_postgres::{PgOptions, PgStore};
use time::OffsetDateTime;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn psql(url: &str, sql: &str) {
    let bin = hooks_testkit::pg::programs()
        .map(|b| b.join("psql"))
        .unwrap_or_else(|| PathBuf::from("psql"));
    let out = Command::new(bin)
        .arg(url)
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn request(session: &str, now: OffsetDateTime) -> EnqueueRequest {
    EnqueueRequest::new(
        SessionId::parse(session).expect("session id"),
        Event::ConversationDone,
        now,
    )
}

/// Operations per second at `pending` entries queued (not due), each op on its own.
fn ops_at(pending: usize, ops: usize) -> String {
    let url = hooks_testkit::pg::database();
    let store = PgStore::open(PgOptions::new(&url, "bench")).expect("open");
    // The queue is filled in the database itself: due tomorrow, so claims pass them over.
    psql(
        &url,
        &format!(
            "INSERT INTO pending (hook_id, session_id, host, due_at, queued_at) \
             SELECT 'post-task', 'fill-' || g, 'bench', now() + interval '1 day', now() \
             FROM generate_series(1, {pending}) g; ANALYZE pending"
        ),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t = Instant::now();
    for i in 0..ops {
        let d = rt
            .block_on(store.enqueue_event(&request(&format!("e{i}"), OffsetDateTime::now_utc())))
            .expect("enqueue");
        assert!(matches!(
            d[0].1,
            hooks_core::decide::EnqueueDecision::Queue { .. }
        ));
    }
    let enqueue = t.elapsed().as_secs_f64() / ops as f64;
    let t = Instant::now();
    let mut done = 0;
    while done < ops {
        let now = OffsetDateTime::now_utc() + time::Duration::seconds(30);
        let got = rt
            .block_on(store.claim_due(now, "bench-owner", time::Duration::seconds(90), 1))
            .expect("claim");
        let e = got.first().expect("a due entry");
        rt.block_on(store.complete(&e.key(), "bench-owner", None))
            .expect("complete");
        done += 1;
    }
    let claim = t.elapsed().as_secs_f64() / ops as f64;
    format!(
        "{{\"pending\":{pending},\"enqueuePerSec\":{:.1},\"enqueueMsPerOp\":{:.3},\"claimCompletePerSec\":{:.1},\"claimCompleteMsPerOp\":{:.3}}}",
        1.0 / enqueue,
        enqueue * 1000.0,
        1.0 / claim,
        claim * 1000.0
    )
}

fn app(bin: &Path, url: &str, host: &str, data: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("HOOKS_STORE", url)
        .env("HOOKS_HOST_ID", host)
        .arg("--data-dir")
        .arg(data)
        .env_remove("HOOKS_APP_FOLLOW_UP");
    c
}

/// `claude-hook` on the hook's path: start, connect, enqueue, exit.
fn claude_hook(bin: &Path, runs: usize) -> (f64, f64) {
    let url = hooks_testkit::pg::database();
    let dir = tempfile::tempdir().expect("temp");
    let ok = app(bin, &url, "bench", dir.path())
        .arg("init")
        .stdout(Stdio::null())
        .status()
        .expect("init");
    assert!(ok.success());
    let mut times = Vec::new();
    for i in 0..runs {
        let input = format!(
            "{{\"hook_event_name\":\"Stop\",\"session_id\":\"bench-{i}\",\"cwd\":\"/tmp\",\"transcript_path\":\"/tmp/bench-{i}.jsonl\",\"last_assistant_message\":\"all done\\nDONE\",\"stop_hook_active\":false}}"
        );
        let t = Instant::now();
        let mut c = app(bin, &url, "bench", dir.path())
            .arg("claude-hook")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("claude-hook");
        c.stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = c.wait_with_output().expect("wait");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (
        percentile(&mut times.clone(), 0.5),
        percentile(&mut times, 0.99),
    )
}

/// Lateness (start − due) of entries queued one by one by other processes, each as on
/// another machine (its own data folder), for a daemon on host `a`.
fn lateness(bin: &Path, n: usize, poll: bool, queued: usize) -> (f64, f64) {
    let url = hooks_testkit::pg::database();
    let dir = tempfile::tempdir().expect("temp");
    let (daemon_dir, other_dir, work) = (
        dir.path().join("daemon"),
        dir.path().join("other"),
        dir.path().join("work"),
    );
    std::fs::create_dir_all(&work).expect("work");
    let log = dir.path().join("starts.log");
    let fake = dir.path().join("fake-claude");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$3 $(date +%s.%N)\" >> '{}'\necho '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"COMPLETED\"}}'\n", log.display()),
    )
    .expect("fake");
    Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .expect("chmod");
    let run = |data: &Path, args: &[&str]| -> String {
        let o = app(bin, &url, "a", data)
            .arg("--workspace")
            .arg(&work)
            .arg("--claude-bin")
            .arg(&fake)
            .args(args)
            .output()
            .expect("hooks-app");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    run(&daemon_dir, &["init"]);
    run(
        &daemon_dir,
        &["hooks", "update", "post-task", "--delay", "0"],
    );
    if queued > 0 {
        // Other hosts' entries and entries not due yet: what a busy shared queue holds.
        psql(
            &url,
            &format!(
                "INSERT INTO pending (hook_id, session_id, host, due_at, queued_at) \
                 SELECT 'post-task', 'busy-' || g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'other' END, \
                 now() + interval '1 day', now() FROM generate_series(1, {queued}) g; ANALYZE pending"
            ),
        );
    }
    let mut serve = app(bin, &url, "a", &daemon_dir);
    serve
        .arg("--workspace")
        .arg(&work)
        .arg("--claude-bin")
        .arg(&fake);
    if poll {
        serve.arg("--store-poll");
    }
    let mut serve = serve
        .args(["serve", "--quiet-period", "0", "--concurrency", "4"])
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut queued: HashMap<String, f64> = HashMap::new();
    let unix = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    for i in 0..n {
        let sid = format!("late-{i}");
        let transcript = work.join(format!("{sid}.jsonl"));
        std::fs::write(
            &transcript,
            format!("{{\"type\":\"user\",\"cwd\":\"{}\"}}\n", work.display()),
        )
        .expect("transcript");
        run(
            &other_dir,
            &[
                "notify",
                "--session",
                &sid,
                "--cwd",
                &work.to_string_lossy(),
                "--transcript",
                &transcript.to_string_lossy(),
            ],
        );
        // Due at once: it is due from the moment `notify` returns (it cannot start before).
        queued.insert(sid, unix());
        // Spread the arrivals over time rather than in one burst.
        std::thread::sleep(Duration::from_millis(113));
    }
    let end = Instant::now() + Duration::from_secs(60);
    let mut starts: HashMap<String, f64> = HashMap::new();
    while Instant::now() < end && starts.len() < n {
        starts = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (s, t) = l.split_once(' ')?;
                Some((s.to_owned(), t.parse().ok()?))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(starts.len(), n, "every follow-up started");
    let mut late: Vec<f64> = queued
        .iter()
        .filter_map(|(s, q)| Some(((starts.get(s)? - q) * 1000.0).max(0.0)))
        .collect();
    (
        percentile(&mut late.clone(), 0.5),
        percentile(&mut late, 0.99),
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // SAFETY: set before any thread of this process starts (the server is started later).
    unsafe { std::env::set_var(hooks_testkit::pg::DURABLE_VAR, "1") };
    let sizes: &[usize] = if quick {
        &[1_000, 100_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    };
    let ops = if quick { 50 } else { 300 };
    let rows: Vec<String> = sizes.iter().map(|&n| ops_at(n, ops)).collect();
    let mut extra = String::new();
    if let Some(bin) = std::env::var_os("HOOKS_APP_BIN").map(PathBuf::from) {
        let (p50, p99) = claude_hook(&bin, if quick { 20 } else { 100 });
        let n = if quick { 10 } else { 60 };
        let (l50, l99) = lateness(&bin, n, false, 0);
        let (p_l50, p_l99) = lateness(&bin, n, true, 0);
        let busy = if quick { 10_000 } else { 100_000 };
        let (b50, b99) = lateness(&bin, n, false, busy);
        extra = format!(
            ",\"claudeHook\":{{\"p50Ms\":{p50:.2},\"p99Ms\":{p99:.2}}},\"lateness\":{{\"listenP50Ms\":{l50:.1},\"listenP99Ms\":{l99:.1},\"pollP50Ms\":{p_l50:.1},\"pollP99Ms\":{p_l99:.1},\"busyPending\":{busy},\"busyListenP50Ms\":{b50:.1},\"busyListenP99Ms\":{b99:.1},\"samples\":{n}}}"
        );
    }
    println!("{{\"postgres\":[{}]{extra}}}", rows.join(","));
}
