//! The everyday commands, as a user runs them one after another.

use serde_json::Value;

use crate::support::*;

#[test]
fn hooks_history_status_and_prune() {
    let app = App::fake();
    app.ok(&["init"]);
    let again = app.ok(&["init"]);
    assert!(
        again.contains("store already there") && again.contains("prompt already there"),
        "init is idempotent: {again}"
    );

    let id = app.ok(&[
        "hooks",
        "create",
        "Release Notes",
        "--prompt-file",
        ".claude/agents/hooks/notes.md",
        "--delay",
        "0",
        "--max-context-k",
        "100",
    ]);
    assert_eq!(id.trim(), "release-notes");
    // The same name again is a mistake (two hooks firing and paid for on every DONE)...
    let again = app.run(&[
        "hooks",
        "create",
        "release notes!",
        "--prompt-file",
        ".claude/agents/hooks/notes.md",
    ]);
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("name: a hook release-notes") && err.contains("hooks update release-notes"),
        "{err}"
    );
    assert_eq!(app.json(&["hooks", "list"]).as_array().unwrap().len(), 3);
    // ...unless asked for.
    let id2 = app.ok(&[
        "hooks",
        "create",
        "release notes!",
        "--prompt-file",
        ".claude/agents/hooks/notes.md",
        "--another",
    ]);
    assert_eq!(id2.trim(), "release-notes-2");
    std::fs::write(
        app.proj.join(".claude/agents/hooks/notes.md"),
        "---\nname: notes\n---\nWrite the notes, then COMPLETED.\n",
    )
    .unwrap();
    let list = app.json(&["hooks", "list"]);
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "continue-after-limit",
            "post-task",
            "release-notes",
            "release-notes-2"
        ]
    );
    let h = app.hook("release-notes");
    assert_eq!(
        (
            h["delaySeconds"].as_u64(),
            h["maxContextK"].as_u64(),
            h["skipCron"].as_bool()
        ),
        (Some(0), Some(100), Some(true))
    );
    let table = app.ok(&["hooks", "list"]);
    assert!(
        table.lines().next().unwrap().starts_with("ID") && table.contains("release-notes"),
        "{table}"
    );

    app.ok(&[
        "hooks",
        "update",
        "release-notes",
        "--include-cron",
        "--name",
        "Notes",
    ]);
    let h = app.hook("release-notes");
    assert_eq!(
        (h["skipCron"].as_bool(), h["name"].as_str()),
        (Some(false), Some("Notes"))
    );
    let deleted = app.ok(&["hooks", "delete", "release-notes-2"]);
    assert!(deleted.contains("deleted"), "{deleted}");

    // One follow-up through tick, then the history, the runs and the status.
    app.ok(&["hooks", "disable", "post-task"]);
    let t = app.transcript("tour-1", &app.proj, 10);
    let queued = app.json(&[
        "notify",
        "--session",
        "tour-1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    let outcomes: Vec<(&str, &str)> = queued
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["hookId"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [("post-task", "skipped"), ("release-notes", "queued")]
    );
    let status = app.json(&["status"]);
    assert_eq!(
        (
            status["pending"].as_u64(),
            status["due"].as_u64(),
            status["daemonRunning"].as_bool()
        ),
        (Some(1), Some(1), Some(false))
    );
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(app.fake_log(), ["tour-1 release-notes"]);
    let history = app.json(&["history", "release-notes"]);
    assert_eq!(history.as_array().unwrap().len(), 1);
    assert_eq!(history[0]["sessionId"], "tour-1");
    let runs = app.json(&["runs", "--hook", "release-notes", "--limit", "5"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1));
    assert_eq!(runs[0]["costUsd"], 0.01);
    let status = app.json(&["status"]);
    assert_eq!(status["pending"].as_u64(), Some(0));
    assert!(
        status["costUsd30d"]
            .as_f64()
            .is_some_and(|c| (c - 0.01).abs() < 1e-9),
        "{status}"
    );
    let text = app.ok(&["status"]);
    assert!(
        text.contains("daemon        not running") && text.contains("tour-1"),
        "{text}"
    );

    // prune keeps recent session files and removes old ones with nothing pending.
    let sessions = app.data_dir().join("sessions");
    let file = sessions.join("tour-1.json");
    assert!(file.exists());
    let out = app.ok(&["prune", "--older-than", "30"]);
    assert!(out.contains("removed 0 sessions"), "{out}");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let out = app.ok(&["prune", "--older-than", "30"]);
    assert!(out.contains("removed 1 session "), "{out}");
    assert!(!file.exists());
    let s: Value = app.json(&["session", "tour-1"]);
    assert!(
        s["stamps"].as_object().unwrap().is_empty(),
        "the stamp went with its file: {s}"
    );
}

#[test]
fn completions_load_in_bash_and_the_man_page_lists_every_command() {
    let app = App::fake();
    let bash = app.ok(&["completions", "bash"]);
    assert!(
        bash.contains("hooks-app") && bash.contains("serve"),
        "{bash}"
    );
    // Loaded into a real bash, it registers itself and completes the subcommands.
    let script = app.env.dir.path().join("hooks-app.bash");
    std::fs::write(&script, &bash).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p hooks-app && COMP_WORDS=(hooks-app ser) COMP_CWORD=1 && _hooks__app hooks-app ser hooks-app && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.lines().any(|l| l == "serve"), "{said}");
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        assert!(!app.ok(&["completions", shell]).is_empty(), "{shell}");
    }
    let bad = app.run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let page = app.ok(&["man"]);
    assert!(page.contains(".TH hooks-app 1"), "{page}");
    for sub in ["serve", "install", "doctor", "completions"] {
        assert!(page.contains(sub), "the page lists {sub}");
    }
}

#[test]
fn mistakes_get_answers_that_help_and_first_steps_agree() {
    let app = App::fake();
    // Before anything: doctor's fix is the first step, not a daemon.
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor.contains("hooks-app init && hooks-app install")
            && !doctor.contains("fix: hooks-app serve"),
        "{doctor}"
    );
    let help = app.ok(&["--help"]);
    assert!(
        help.contains("Start with: hooks-app init && hooks-app install")
            && !help.contains("&& hooks-app serve"),
        "{help}"
    );
    app.ok(&["init"]);
    for args in [
        &["hooks", "show", "post_task"][..],
        &["history", "post_tsk"],
        &["runs", "--hook", "post-tusk"],
    ] {
        let o = app.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("(did you mean post-task?)"), "{args:?}: {err}");
    }
    let o = app.run(&["hooks", "show", "zzzzzzzzzzzz"]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("(the hooks are: continue-after-limit, post-task)"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Sessions: a unique prefix of 8 or more is enough; an unknown one is exit 1, naming
    // where it looked.
    for sid in [
        "ad18d5d3-1111-4222-8333-444455556666",
        "ad18ffff-1111-4222-8333-444455556666",
    ] {
        app.transcript(sid, &app.proj, 1000);
    }
    app.ok(&[
        "notify",
        "--session",
        "ad18d5d3-1111-4222-8333-444455556666",
    ]);
    app.ok(&[
        "notify",
        "--session",
        "ad18ffff-1111-4222-8333-444455556666",
    ]);
    let about = app.json(&["session", "ad18d5d3"]);
    assert_eq!(about["sessionId"], "ad18d5d3-1111-4222-8333-444455556666");
    let runs = app.run(&["runs", "--session", "ad18d5d3"]);
    assert_eq!(runs.status.code(), Some(0));
    for (asked, code, says) in [
        ("ad18", 1, "a prefix needs 8 characters or more"),
        ("ad18f", 1, "a prefix needs 8 characters or more"),
        (
            "not-a-session",
            1,
            "no conversation not-a-session: not found in",
        ),
        ("a/b", 2, "sessionId"),
    ] {
        let o = app.run(&["session", asked]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{asked}: {err}");
        assert!(err.contains(says), "{asked}: {err}");
        assert!(o.stdout.is_empty(), "{asked}: no screen of unknowns");
    }
    let o = app.run(&["session", "not-a-session"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("transcripts under") && err.contains("the run log"),
        "{err}"
    );

    // Creating a hook: where prompt files live, and an absolute path to one is taken.
    let o = app.run(&["hooks", "create", "Tidy"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--prompt-file is required") && err.contains(".claude/agents/hooks/"),
        "{err}"
    );
    let abs = app.proj.join(".claude/agents/hooks/tidy.md");
    std::fs::write(&abs, "Tidy.\n").unwrap();
    let id = app.ok(&[
        "hooks",
        "create",
        "Tidy",
        "--prompt-file",
        abs.to_str().unwrap(),
    ]);
    assert_eq!(
        app.hook(id.trim())["promptFile"],
        ".claude/agents/hooks/tidy.md"
    );
    let far = format!("{}/somewhere/else/entirely/prompt.md", app.proj.display());
    let o = app.run(&["hooks", "create", "Far", "--prompt-file", &far]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&far),
        "the message names the whole path: {err}"
    );
}

#[test]
fn read_only_commands_on_a_missing_data_folder_create_nothing() {
    let app = App::fake();
    let typo = app.env.dir.path().join("typo");
    let dir = typo.to_str().unwrap();
    for args in [
        &["hooks", "list"][..],
        &["hooks", "show", "post-task"],
        &["pending"],
        &["history", "post-task"],
        &["runs"],
        &["session", "s1"],
        &["status"],
    ] {
        let mut a = vec!["--data-dir", dir];
        a.extend_from_slice(args);
        let o = app.run(&a);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("no hooks-app data in {dir} (run hooks-app init)")),
            "{args:?}: {err}"
        );
        assert!(!typo.exists(), "{args:?} created {dir}");
    }
    let _ = app.run(&["--data-dir", dir, "doctor"]);
    assert!(!typo.exists(), "doctor created {dir}");
}

#[test]
fn pause_holds_every_daemon_still_and_unpause_lets_what_waited_run_once() {
    use hooks_testkit::wait_until;
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let out = app.ok(&["pause"]);
    assert!(
        out.contains("paused: nothing starts until `hooks-app unpause`"),
        "{out}"
    );
    // Two daemons on one store: neither starts anything while paused.
    let a = app.spawn(&["serve", "--quiet-period", "0"]);
    let b = app.spawn(&["serve", "--quiet-period", "0"]);
    for s in ["p-1", "p-2"] {
        let t = app.transcript(s, &app.proj, 1000);
        app.ok(&[
            "notify",
            "--session",
            s,
            "--transcript",
            t.to_str().unwrap(),
        ]);
    }
    assert!(
        wait_until(30, || {
            let p = app.pending();
            p.len() == 2
                && p.iter().all(|e| {
                    e["waiting"]["reason"]
                        .as_str()
                        .is_some_and(|r| r.starts_with("paused until `hooks-app unpause`"))
                })
        }),
        "both wait on the pause: {:?}",
        app.pending()
    );
    assert!(
        app.fake_log().is_empty(),
        "nothing started: {:?}",
        app.fake_log()
    );
    let status = app.json(&["status"]);
    assert_eq!(status["pause"]["paused"], true, "{status}");
    assert!(
        app.ok(&["status"])
            .contains("paused        until `hooks-app unpause`")
    );
    assert_eq!(
        app.json(&["pending"])[0]["retries"],
        0,
        "a pause uses up no retry"
    );

    let out = app.ok(&["unpause"]);
    assert!(out.contains("unpaused; 2 waiting"), "{out}");
    assert!(
        wait_until(30, || app.fake_log().len() == 2 && app.pending().is_empty()),
        "what waited ran: {:?} {:?}",
        app.fake_log(),
        app.pending()
    );
    let mut ran = app.fake_log();
    ran.sort();
    assert_eq!(ran, ["p-1 post-task", "p-2 post-task"], "each once");
    for d in [a, b] {
        signal(&d, libc::SIGTERM);
        assert!(d.wait_with_output().unwrap().status.success());
    }
    // A pause for a while ends by itself; bad lengths change nothing.
    let o = app.run(&["pause", "--for", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("for: must be a length of time"));
    assert_eq!(app.json(&["status"])["pause"]["paused"], false);
    let p = app.json(&["pause", "--for", "2h"]);
    assert!(p["until"].is_string(), "{p}");
    assert_eq!(app.json(&["unpause"])["paused"], false);
}

#[test]
fn hooks_run_follows_up_now_once_unless_forced_and_says_what_became_of_it() {
    let app = App::fake();
    app.ok(&["init"]);
    let serve = app.spawn(&["serve", "--quiet-period", "0"]);
    // `hooks run` waits for a daemon it can see: once this one has registered.
    assert!(hooks_testkit::wait_until(30, || {
        app.json(&["status"])["daemons"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
    }));
    // A conversation hooks-app has not seen: its transcript is enough.
    app.transcript("run-now-1", &app.proj, 1000);
    let out = app.ok(&["hooks", "run", "post-task", "--session", "run-now-1"]);
    assert!(
        out.contains("post-task on run-now-1: ok, cost $0.01"),
        "{out}"
    );
    assert_eq!(app.fake_log(), ["run-now-1 post-task"]);
    let again = app.ok(&["hooks", "run", "post-task", "--session", "run-now-"]);
    assert!(
        again.contains("run-now-1: skipped: already ran")
            && again.contains("--force runs it again"),
        "a prefix of 8 names it; once only: {again}"
    );
    let forced = app.json(&[
        "hooks",
        "run",
        "post-task",
        "--session",
        "run-now-1",
        "--force",
    ]);
    assert_eq!(forced["status"], "ok", "{forced}");
    assert_eq!(app.fake_log().len(), 2, "--force ran it again");
    for (args, code, says) in [
        (
            &["hooks", "run", "post_task", "--session", "run-now-1"][..],
            2,
            "did you mean post-task?",
        ),
        (
            &["hooks", "run", "post-task", "--session", "nobody-at-all"],
            1,
            "no conversation nobody-at-all",
        ),
    ] {
        let o = app.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    signal(&serve, libc::SIGTERM);
    assert!(serve.wait_with_output().unwrap().status.success());
}

/// A loopback listener that answers 200 to every request and hands over each body.
fn listener() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/alerts/secret-topic", l.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut r = BufReader::new(c);
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
        }
    });
    (url, rx)
}

#[test]
fn a_failed_follow_up_alerts_a_url_and_an_unreachable_one_changes_nothing() {
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let (url, bodies) = listener();
    let out = app.ok(&["alerts", "set", "--url", &url, "--on", "failure,skip"]);
    assert!(
        out.contains("alerts on failure, skip to http://127.0.0.1:")
            && !out.contains("secret-topic"),
        "{out}"
    );
    let shown = app.json(&["alerts", "show"]);
    assert!(
        !shown.to_string().contains("secret-topic"),
        "the URL is shown by its host: {shown}"
    );
    // A follow-up that fails: its prompt file is gone.
    std::fs::remove_file(app.proj.join(".claude/agents/hooks/post-task.md")).unwrap();
    let t = app.transcript("al-1", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "al-1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    app.ok(&["tick", "--quiet-period", "0"]);
    let body: Value = serde_json::from_str(
        &bodies
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("an alert"),
    )
    .unwrap();
    assert_eq!(
        (
            body["kind"].as_str(),
            body["hook"].as_str(),
            body["session"].as_str()
        ),
        (Some("failure"), Some("post-task"), Some("al-1")),
        "{body}"
    );
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("hooks-app: post-task on al-1: error: prompt file"),
        "ntfy and Slack show its text: {body}"
    );
    assert_eq!(body["cwd"], app.proj.to_str().unwrap());

    // An unreachable URL: logged by its host, and the follow-up is recorded as ever.
    app.ok(&["alerts", "set", "--url", "http://127.0.0.1:9/secret-path"]);
    let t = app.transcript("al-2", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "al-2",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    let o = app.run(&["tick", "--quiet-period", "0"]);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(
        log.contains("alert not delivered: could not reach http://127.0.0.1:9/…"),
        "{log}"
    );
    assert!(
        !log.contains("secret-path"),
        "never the URL's secret part: {log}"
    );
    assert!(
        app.runs().iter().any(|r| r["sessionId"] == "al-2"),
        "recorded as ever"
    );
    let o = app.run(&["alerts", "test"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("not delivered"));
    assert!(app.ok(&["alerts", "clear"]).contains("alerts cleared"));
    let o = app.run(&["alerts", "set", "--url", "ftp://x"]);
    assert_eq!(o.status.code(), Some(2));

    // `alerts set` changes what it is given and keeps the rest.
    app.ok(&[
        "alerts",
        "set",
        "--url",
        "http://127.0.0.1:9/topic",
        "--on",
        "failure,skip,budget,limit",
    ]);
    let out = app.ok(&["alerts", "set", "--desktop"]);
    assert!(
        out.contains("alerts on failure, skip, budget, limit to http://127.0.0.1:9/")
            && out.contains("and the desktop"),
        "{out}"
    );
    let out = app.ok(&["alerts", "set", "--on", "failure"]);
    assert!(
        out.contains("alerts on failure to http://127.0.0.1:9/") && out.contains("and the desktop"),
        "{out}"
    );
    let out = app.ok(&["alerts", "set", "--no-url"]);
    assert!(
        out.contains("alerts on failure to no URL and the desktop"),
        "{out}"
    );
    let o = app.run(&["alerts", "set", "--no-desktop"]);
    assert_eq!(o.status.code(), Some(2), "nothing left to alert: {o:?}");
}
