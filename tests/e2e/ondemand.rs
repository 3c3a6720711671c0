//! The daemon on demand: nobody starts `serve`; Claude Code's own hook does when it queues
//! something, and the daemon goes away once idle.

use std::io::Write;
use std::process::Stdio;

use hooks_testkit::wait_until;
use serde_json::{Value, json};

use crate::support::*;

fn daemons(app: &App) -> Vec<Value> {
    app.json(&["status"])["daemons"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn serve_log(app: &App) -> String {
    std::fs::read_to_string(app.data_dir().join("serve.log")).unwrap_or_default()
}

#[test]
fn a_finished_conversation_is_followed_up_with_no_serve_started_by_anyone() {
    followed_up_on_demand(App::real());
}

#[test]
fn on_postgres_the_hook_and_its_on_demand_daemon_use_the_store_chosen_at_install() {
    let url = hooks_testkit::pg::database();
    let app = App::real().on_store(&url);
    followed_up_on_demand(app);
}

fn followed_up_on_demand(app: App) {
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    let out = app.ok(&["install", "--idle-exit", "3"]);
    assert!(out.contains("daemon: on demand"), "{out}");
    if let Some(url) = &app.store {
        // Claude Code runs the hook without this test's environment: the choice of store
        // travels in the command it runs.
        let settings =
            std::fs::read_to_string(app.env.claude_home().join("settings.json")).unwrap();
        assert!(settings.contains(&format!("--store {url}")), "{settings}");
    }
    // Past the daemon's quiet period (5 s), so the first look finds the transcript quiet.
    app.ok(&["hooks", "update", "post-task", "--delay", "6"]);
    assert!(daemons(&app).is_empty());

    // The user's conversation ends with DONE; Claude's Stop hook queues the follow-up and
    // starts a daemon, which resumes the conversation.
    let sid = app.claude("build the feature SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ran = wait_until(60, || {
        app.runs()
            .first()
            .is_some_and(|r| r["finishedAt"].is_string())
    });
    assert!(ran, "followed up: {:?}\n{}", app.pending(), serve_log(&app));
    let runs = app.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["sessionId"], sid.as_str());
    assert_eq!(runs[0]["status"], "ok", "{}", serve_log(&app));

    // Idle with nothing pending, it goes away, and leaves nothing running.
    assert!(
        wait_until(30, || daemons(&app).is_empty()
            && app.env.leftovers().is_empty()),
        "the daemon exits once idle: {:?} {:?}",
        daemons(&app),
        app.env.leftovers()
    );
    let log = serve_log(&app);
    assert!(
        log.contains("serving")
            && log.contains("on_demand=true")
            && log.contains("idle with nothing pending"),
        "{log}"
    );
    // A finished run is said as people read it, never as Rust's `Some(true)`.
    assert!(
        log.contains("completed=yes") && !log.contains("Some("),
        "{log}"
    );
    let doctor = app.ok(&["doctor"]);
    assert!(
        doctor.contains("ok   daemon") && doctor.contains("on demand"),
        "{doctor}"
    );
}

/// A Stop event that says DONE, as Claude Code gives it to the hook.
fn stop_event(app: &App, sid: &str) -> String {
    let t = app.transcript(sid, &app.proj, 1000);
    json!({"hook_event_name": "Stop", "session_id": sid, "cwd": app.proj,
        "transcript_path": t, "last_assistant_message": "all done\nDONE"})
    .to_string()
}

#[test]
fn two_hooks_at_once_start_at_most_one_daemon_and_it_serves_both() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--idle-exit", "2"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    let events: Vec<String> = ["d1", "d2"].iter().map(|s| stop_event(&app, s)).collect();
    let hooks: Vec<_> = events
        .iter()
        .map(|e| {
            let mut c = app
                .cmd(&["claude-hook"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(e.as_bytes()).unwrap();
            c
        })
        .collect();
    for h in hooks {
        let o = h.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // On stdout only the heads-up the TUI shows.
        let said: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            said["systemMessage"].as_str().is_some_and(
                |m| m.contains("post-task in 0s") && !m.contains("no hooks-app daemon")
            ),
            "{said}"
        );
    }
    assert!(
        wait_until(60, || app.runs().len() == 2
            && app.runs().iter().all(|r| r["finishedAt"].is_string())),
        "{:?}\n{}",
        app.runs(),
        serve_log(&app)
    );
    let owners: std::collections::BTreeSet<String> = app
        .runs()
        .iter()
        .map(|r| r["owner"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(owners.len(), 1, "one daemon ran both: {owners:?}");
    assert!(
        wait_until(30, || daemons(&app).is_empty()
            && app.env.leftovers().is_empty()),
        "{:?}",
        app.env.leftovers()
    );
    let started = serve_log(&app).matches("on_demand=true").count();
    assert!(started <= 1, "at most one served: {}", serve_log(&app));
}

#[test]
fn the_service_mode_writes_a_user_unit_and_uninstall_takes_it_away() {
    let app = App::fake();
    app.ok(&["init"]);
    let out = app.ok(&["install", "--daemon", "service"]);
    let unit = app
        .env
        .home()
        .join(".config/systemd/user/hooks-app.service");
    assert!(
        out.contains(&unit.display().to_string())
            && out.contains("systemctl --user enable --now hooks-app.service"),
        "{out}"
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(exec.starts_with(APP) && exec.ends_with(" serve"), "{exec}");
    assert!(
        exec.contains(&app.data_dir().display().to_string()),
        "{exec}"
    );
    assert!(
        text.contains("[Install]\nWantedBy=default.target"),
        "{text}"
    );
    let status = app.json(&["status"]);
    assert_eq!(status["daemonMode"], "service");
    // Not enabled (no systemd here): doctor says how.
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor.contains("FAIL daemon") && doctor.contains("systemctl --user"),
        "{doctor}"
    );

    let out = app.ok(&["uninstall", "--daemon", "service"]);
    assert!(out.contains("systemctl --user disable --now"), "{out}");
    assert!(!unit.exists());
}

/// A free port of 127.0.0.1, found by binding it and letting go.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn install_http_serves_the_page_on_demand_and_uninstall_stops_the_daemon() {
    let app = App::fake();
    app.ok(&["init"]);
    let addr = format!("127.0.0.1:{}", free_port());
    let out = app.ok(&["install", "--http", &addr, "--idle-exit", "60"]);
    assert!(out.contains(&format!("serves http://{addr}")), "{out}");
    assert!(daemons(&app).is_empty(), "nothing runs yet");

    // `open` starts the on-demand daemon where install said, and finds it.
    let login = app.ok(&["open", "--no-browser"]);
    assert!(
        login
            .trim()
            .starts_with(&format!("http://{addr}/login?token=")),
        "{login}"
    );
    let running = daemons(&app);
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["http"], format!("http://{addr}").as_str());
    assert_eq!(running[0]["mode"], "on-demand");
    let health = crate::http::call(addr.parse().unwrap(), "GET", "/api/v1/healthz", &[], None);
    assert_eq!(
        (health.status, health.json()["store"].clone()),
        (200, json!("ok"))
    );
    let status = app.json(&["status"]);
    assert_eq!(status["http"], format!("http://{addr}").as_str());

    // A second daemon on the same port: an error naming the address and who holds it,
    // and no `serving` before it.
    let second = app.run(&["serve", "--http", &addr]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("could not listen on {addr}"))
            && err.contains(&format!("daemon (pid {})", running[0]["pid"]))
            && !err.contains("serving"),
        "{err}"
    );
    assert_eq!(
        daemons(&app).len(),
        1,
        "the failed start left no registration"
    );

    // Uninstall stops it and says what it leaves.
    let out = app.ok(&["uninstall"]);
    assert!(
        out.contains(&format!(
            "stopped the on-demand daemon (pid {})",
            running[0]["pid"]
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "left: the data folder {}",
            app.data_dir().display()
        )) && out.contains("post-task.md"),
        "{out}"
    );
    assert!(daemons(&app).is_empty(), "{:?}", daemons(&app));
    assert_eq!(
        app.json(&["status"])["daemonMode"],
        "none",
        "nothing starts it again"
    );
    // Nothing advises starting a daemon by hand: the way back is install.
    let status = app.ok(&["status"]);
    assert!(
        status.contains("uninstalled") && status.contains("(mode: none)"),
        "{status}"
    );
    let doctor = String::from_utf8_lossy(&app.run(&["doctor"]).stdout).into_owned();
    for said in [&status, &doctor] {
        assert!(
            !said.contains("hooks-app serve") && said.contains("hooks-app install"),
            "{said}"
        );
    }
}

/// Nothing fires after `uninstall` unless the user asks: what is queued stays, paused,
/// until `install` takes it up again (starting the daemon), or is dropped on request,
/// each entry ending as a logged skip.
#[test]
fn uninstall_keeps_the_queue_paused_or_drops_it_and_install_takes_it_up() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--idle-exit", "2"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    let queue = |sid: &str| {
        let t = app.transcript(sid, &app.proj, 1000);
        app.ok(&[
            "notify",
            "--session",
            sid,
            "--transcript",
            t.to_str().unwrap(),
        ]);
    };
    queue("u-kept");

    let out = app.ok(&["uninstall"]);
    assert!(
        out.contains("1 follow-up (1 due now) stay queued, paused so that none fires"),
        "{out}"
    );
    // A daemon run by hand fires nothing meanwhile.
    app.ok(&["tick", "--quiet-period", "0"]);
    assert!(app.runs().is_empty(), "{:?}", app.runs());
    let p = app.pending();
    assert!(
        p[0]["waiting"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("by hooks-app uninstall")),
        "{p:?}"
    );

    // Installed again: the pause uninstall set is lifted and a daemon takes the queue.
    let out = app.ok(&["install", "--idle-exit", "2"]);
    assert!(
        out.contains("follow-ups resume") && out.contains("started the daemon: 1 follow-up"),
        "{out}"
    );
    assert!(
        wait_until(60, || app.runs().iter().any(|r| r["status"] == "ok")),
        "{:?} {:?}",
        app.runs(),
        app.pending()
    );
    assert_eq!(app.json(&["status"])["pause"]["paused"], false);

    // A pause the person set is theirs: install leaves it.
    app.ok(&["pause"]);
    app.ok(&["install", "--idle-exit", "2"]);
    assert_eq!(app.json(&["status"])["pause"]["paused"], true);
    app.ok(&["unpause"]);

    // One entry dropped by hand; then the rest at uninstall, on request.
    app.ok(&["hooks", "update", "post-task", "--delay", "3600"]);
    queue("u-one");
    queue("u-two");
    let out = app.ok(&["pending", "drop", "post-task", "u-one"]);
    assert!(out.contains("post-task on u-one: dropped"), "{out}");
    let again = app.run(&["pending", "drop", "post-task", "u-one"]);
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("no follow-up of post-task is queued"));
    let out = app.ok(&["uninstall", "--drop-queue"]);
    assert!(out.contains("dropped 1 queued follow-up(s)"), "{out}");
    assert!(app.pending().is_empty());
    let skipped: Vec<String> = app
        .runs()
        .iter()
        .filter(|r| r["sessionId"] == "u-one" || r["sessionId"] == "u-two")
        .map(|r| r["status"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        skipped,
        ["skipped: dropped by hand", "skipped: dropped at uninstall"],
        "every dropped entry leaves a record"
    );
    assert_eq!(
        app.json(&["status"])["pause"]["paused"],
        false,
        "nothing left to pause"
    );
    assert!(
        wait_until(30, || daemons(&app).is_empty()),
        "the on-demand daemon is gone: {:?}",
        daemons(&app)
    );
}

/// A re-install that changes what the daemon runs with reaches the daemon that is running:
/// `install --http ADDR` while an on-demand daemon waits on a queued follow-up restarts
/// it, saying so, and the page is served at once; the queue is untouched.
#[test]
fn install_http_reaches_the_on_demand_daemon_that_is_running() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--idle-exit", "60"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "3600"]);
    let mut hook = app
        .cmd(&["claude-hook"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(stop_event(&app, "s-reinstall").as_bytes())
        .unwrap();
    assert!(hook.wait_with_output().unwrap().status.success());
    assert!(
        wait_until(30, || daemons(&app).len() == 1),
        "the hook started a daemon: {}",
        serve_log(&app)
    );
    let first = daemons(&app)[0]["pid"].clone();
    assert!(daemons(&app)[0]["http"].is_null());
    let addr = format!("127.0.0.1:{}", free_port());
    let out = app.ok(&["install", "--http", &addr, "--idle-exit", "60"]);
    assert!(
        out.contains(&format!(
            "restarted the on-demand daemon (pid {first} stopped)"
        )),
        "{out}"
    );
    assert!(
        wait_until(60, || daemons(&app)
            .first()
            .is_some_and(|d| d["http"] == format!("http://{addr}").as_str())),
        "the new daemon serves the page: {:?}\n{}",
        daemons(&app),
        serve_log(&app)
    );
    assert_ne!(daemons(&app)[0]["pid"], first);
    let login = app.ok(&["open", "--no-browser"]);
    assert!(
        login
            .trim()
            .starts_with(&format!("http://{addr}/login?token=")),
        "{login}"
    );
    assert_eq!(app.pending().len(), 1, "the queue is as it was");
    // The same install again changes nothing, and restarts nothing.
    let again = app.ok(&["install", "--http", &addr, "--idle-exit", "60"]);
    assert!(!again.contains("restarted"), "{again}");
    let out = app.ok(&["uninstall"]);
    assert!(out.contains("stopped the on-demand daemon"), "{out}");
    assert!(wait_until(30, || daemons(&app).is_empty()));
}

#[test]
fn restart_replaces_the_running_on_demand_daemon_and_starts_one_where_none_runs() {
    let app = App::fake();
    app.ok(&["init"]);
    // Not set up yet: there is nothing to restart, and it says what sets it up.
    let o = app.run(&["restart"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("hooks-app install"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    app.ok(&["install", "--idle-exit", "60"]);
    let out = app.ok(&["restart"]);
    assert!(out.contains("no daemon was running: started one"), "{out}");
    assert!(
        wait_until(30, || daemons(&app).len() == 1),
        "{}",
        serve_log(&app)
    );
    let first = daemons(&app)[0]["pid"].clone();
    let out = app.ok(&["restart"]);
    assert!(
        out.contains(&format!(
            "restarted the on-demand daemon (pid {first} stopped)"
        )),
        "{out}"
    );
    assert!(
        wait_until(30, || daemons(&app)
            .first()
            .is_some_and(|d| d["pid"] != first)),
        "a new daemon: {:?}\n{}",
        daemons(&app),
        serve_log(&app)
    );
    assert_eq!(daemons(&app).len(), 1, "one daemon, the new one");
    app.ok(&["uninstall"]);
    assert!(wait_until(30, || daemons(&app).is_empty()));
}
