//! Bad input of every kind: a clear error naming the field and the rule, and nothing
//! changed.

use std::io::Write;
use std::process::Stdio;

use crate::support::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn refused(app: &App, args: &[&str], code: i32, needle: &str) {
    let before = std::fs::read(app.store_file()).unwrap();
    let o = app.run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(needle),
        "{args:?}: {err:?} should mention {needle:?}"
    );
    assert_eq!(
        std::fs::read(app.store_file()).unwrap(),
        before,
        "{args:?} changed the store"
    );
}

/// `notify` refuses what cannot be a conversation instead of queuing it to be retried
/// for ten minutes with the reason only in the daemon's log.
#[test]
fn notify_refuses_what_cannot_be_a_conversation() {
    let app = App::fake();
    app.ok(&["init"]);
    let t = app.transcript("0a1b2c3d-known-conversation", &app.proj, 1000);
    let dir = app.proj.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["notify", "--session", "abc"],
            "session: no conversation abc",
        ),
        (
            vec!["notify", "--session", "ffffffff-unknown"],
            "name its transcript with --transcript",
        ),
        (
            vec![
                "notify",
                "--session",
                "0a1b2c3d-known-conversation",
                "--cwd",
                "nothere",
            ],
            "cwd: must be an existing folder",
        ),
        (
            vec!["notify", "--session", "s1", "--transcript", "/nope.jsonl"],
            "transcript: must be a conversation's transcript file",
        ),
        (
            vec!["notify", "--session", "s1", "--transcript", dir],
            "transcript: must be",
        ),
    ] {
        refused(&app, &args, 2, needle);
    }
    assert!(app.pending().is_empty());
    // A unique prefix of 8 or more names the known conversation, whole.
    let out = app.ok(&["notify", "--session", "0a1b2c3d", "--cwd", dir]);
    assert!(out.contains("post-task: queued"), "{out}");
    assert_eq!(app.pending()[0]["sessionId"], "0a1b2c3d-known-conversation");
    // A transcript named by hand is taken as the conversation's.
    let out = app.ok(&[
        "notify",
        "--session",
        "s-named",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    assert!(out.contains("post-task: queued"), "{out}");
}

#[test]
fn invalid_values_are_refused_with_the_field_and_rule() {
    let app = App::fake();
    app.ok(&["init"]);
    // Every one is bad input: exit 2, the field and the rule named, nothing changed.
    let cases: [(&[&str], &str); 17] = [
        (
            &["notify", "--session", "../../etc/passwd"][..],
            "sessionId: must be 1 to 128",
        ),
        (
            &["notify", "--session=-rf"][..],
            "sessionId: must be 1 to 128 of A-Z a-z 0-9 _ - and not start with -",
        ),
        (
            &["notify", "--session", "ok", "--event", "commit"][..],
            "event: must be conversation-done",
        ),
        (
            &["notify", "--session", "ok", "--origin", "robot"][..],
            "origin",
        ),
        (
            &[
                "hooks",
                "create",
                "X",
                "--prompt-file",
                ".claude/agents/hooks/../../x.md",
            ][..],
            "promptFile: must not contain '..'",
        ),
        (
            &["hooks", "create", "X", "--prompt-file", "notes/x.md"][..],
            "promptFile: must be a file directly in .claude/agents/hooks/",
        ),
        (
            &[
                "hooks",
                "create",
                "X",
                "--prompt-file",
                ".claude/agents/hooks/x.txt",
            ][..],
            "promptFile: must be a .md file",
        ),
        (
            &[
                "hooks",
                "create",
                "X",
                "--prompt-file",
                ".claude/agents/hooks/x.md",
                "--delay",
                "86401",
            ][..],
            "delaySeconds: must be a whole number from 0 to 86400",
        ),
        (
            &[
                "hooks",
                "create",
                "X",
                "--prompt-file",
                ".claude/agents/hooks/x.md",
                "--max-context-k",
                "-5",
            ][..],
            "maxContextK",
        ),
        (
            &["hooks", "update", "post-task", "--delay", "soon"][..],
            "delaySeconds",
        ),
        (
            &["hooks", "show", "no-such-hook"][..],
            "no hook with id no-such-hook",
        ),
        (&["hooks", "delete", "bad id"][..], "id: must be"),
        (&["runs", "--session", "a/b"][..], "sessionId"),
        // The API's rule for `limit`, word for word.
        (
            &["runs", "--limit", "0"][..],
            "must be a whole number from 1 to 100000 (got \"0\")",
        ),
        (&["session", "x y"][..], "sessionId"),
        (&["hooks", "update", "post-task"][..], "nothing to change"),
        (&["no-such-command"][..], "unrecognized subcommand"),
    ];
    for (args, needle) in cases {
        refused(&app, args, 2, needle);
    }
}

fn hook_call(app: &App, input: &[u8]) -> std::process::Output {
    hook_call_with(app, &[], &[], input)
}

/// Runs `claude-hook` with extra arguments and variables, writing `input` to its stdin.
fn hook_call_with(
    app: &App,
    args: &[&str],
    env: &[(&str, &str)],
    input: &[u8],
) -> std::process::Output {
    let mut c = app
        .cmd(&[&["claude-hook"], args].concat())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let _ = stdin.write_all(input);
    drop(stdin);
    c.wait_with_output().unwrap()
}

#[test]
fn claude_hook_never_exits_2_and_changes_nothing_on_bad_input() {
    let app = App::fake();
    app.ok(&["init"]);
    let before = std::fs::read(app.store_file()).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json".to_vec(), "not a Claude Code hook input"),
        (b"{\"hook_event_name\": \"Stop\"}".to_vec(), "not a Claude Code hook input"),
        (br#"{"hook_event_name":"Stop","session_id":"../x","last_assistant_message":"ok\nDONE"}"#.to_vec(), "sessionId"),
        ([b"{\"pad\":\"".as_slice(), &vec![b'x'; 1_100_000], b"\"}"].concat(), "over 1048576 bytes"),
    ];
    for (input, needle) in cases {
        let o = hook_call(&app, &input);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "one line: {err:?}");
        assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        assert!(
            o.stdout.is_empty(),
            "nothing on stdout, which Claude would read as a decision"
        );
    }
    assert_eq!(std::fs::read(app.store_file()).unwrap(), before);
    let o = app.cmd(&["claude-hook", "--bogus"]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "a malformed hook call is exit 1, not 2"
    );
}

#[test]
fn claude_hook_handles_each_event_as_specified() {
    let app = App::fake();
    app.ok(&["init"]);
    let cwd = app.proj.to_str().unwrap();
    let ev = |name: &str, sid: &str, msg: &str| {
        serde_json::json!({"hook_event_name": name, "session_id": sid, "cwd": cwd,
        "transcript_path": format!("/nowhere/{sid}.jsonl"), "last_assistant_message": msg, "stop_hook_active": false}).to_string()
    };
    for (input, queued) in [
        (ev("Stop", "s-not-done", "still working"), false),
        (ev("Stop", "s-done-inline", "I am DONE"), false),
        (ev("SubagentStop", "s-sub", "x\nDONE"), false),
        (ev("SessionEnd", "s-end", ""), false),
        (ev("Notification", "s-other", "DONE"), false),
        (ev("Stop", "s-done", "all finished\n\nDONE\n"), true),
    ] {
        let before = app.pending().len();
        let o = hook_call(&app, input.as_bytes());
        assert_eq!(o.status.code(), Some(0), "{input}: {}", stderr(&o));
        assert_eq!(app.pending().len(), before + usize::from(queued), "{input}");
    }
    let pending: Vec<String> = app
        .pending()
        .iter()
        .map(|p| p["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(pending, ["s-done"]);
    // SessionEnd counts on the entry installed with that trigger, and only when the
    // transcript's last assistant message ends with the marker (the event has no text);
    // cron origin is honoured.
    let transcript = |sid: &str, text: &str| {
        let p = app.proj.join(format!("{sid}.jsonl"));
        let line = serde_json::json!({"type": "assistant", "cwd": cwd,
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": text}]}});
        std::fs::write(&p, format!("{line}\n")).unwrap();
        p.to_string_lossy().into_owned()
    };
    let end = |sid: &str, text: &str| {
        let t = transcript(sid, text);
        ev("SessionEnd", sid, "").replace(&format!("/nowhere/{sid}.jsonl"), &t)
    };
    for sid in ["s-end-not-done", "s-headless-end"] {
        let input = end(sid, "still going");
        let o = hook_call_with(&app, &["--on", "session-end"], &[], input.as_bytes());
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        app.pending().len(),
        1,
        "a SessionEnd without DONE queues nothing"
    );
    let input = end("s-cron-end", "all done\nDONE");
    let o = hook_call_with(
        &app,
        &["--on", "session-end"],
        &[("HOOKS_APP_ORIGIN", "cron")],
        input.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let input = end("s-end-done", "all done\nDONE");
    let o = hook_call_with(&app, &["--on", "session-end"], &[], input.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(app.pending().len(), 2, "a SessionEnd after DONE queues");
    let input = end("s-end-plain", "all done\nDONE");
    let o = hook_call(&app, input.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        app.pending().len(),
        2,
        "without the trigger, a SessionEnd only wakes"
    );
    let o = hook_call(
        &app,
        ev("Stop", "s-agent", "x\nDONE")
            .replace("\"cwd\"", "\"agent_id\":\"a1\",\"cwd\"")
            .as_bytes(),
    );
    assert!(o.status.success());
    let pending: Vec<String> = app
        .pending()
        .iter()
        .map(|p| p["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        pending,
        ["s-done", "s-end-done"],
        "cron session and subagent skipped by the seeded hook's rules"
    );
    let s = app.json(&["session", "s-cron-end"]);
    assert_eq!(
        (s["origin"].as_str(), s["cwd"].as_str()),
        (Some("cron"), Some(cwd)),
        "remembered even when skipped"
    );
    // The variable a follow-up run carries, with no follow-up running on the session (a
    // repository's settings exported it): no proof, the DONE is the conversation's own.
    let input = ev("Stop", "s-follow", "x\nDONE");
    let o = hook_call_with(
        &app,
        &[],
        &[("HOOKS_APP_FOLLOW_UP", "post-task")],
        input.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        app.pending().iter().any(|p| p["sessionId"] == "s-follow"),
        "{:?}",
        app.pending()
    );
}

#[test]
fn a_flag_like_prompt_option_is_an_error_and_nothing_runs() {
    let app = App::fake();
    app.ok(&["init"]);
    std::fs::write(
        app.proj.join(".claude/agents/hooks/post-task.md"),
        "---\nname: post-task\nmodel: --dangerously-skip-permissions\n---\nTidy up.\n",
    )
    .unwrap();
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    let t = app.transcript("s1", &app.proj, 10);
    app.ok(&[
        "notify",
        "--session",
        "s1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    app.ok(&["tick", "--quiet-period", "0"]);
    let status = app.last_status("post-task");
    assert!(
        status.starts_with("error: prompt file")
            && status.contains("model: must not start with '-'"),
        "{status}"
    );
    assert!(app.fake_log().is_empty(), "claude was never started");
}

#[test]
fn a_corrupt_store_is_refused_and_kept() {
    let app = App::fake();
    app.ok(&["init"]);
    std::fs::write(app.store_file(), "{\"hooks\": {\n  oops").unwrap();
    let o = app.run(&["notify", "--session", "s1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2, column 3"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(app.store_file()).unwrap(),
        "{\"hooks\": {\n  oops"
    );
    let d = app.run(&["doctor"]);
    let out = String::from_utf8_lossy(&d.stdout);
    assert!(
        out.contains("FAIL store readable") && out.contains("hooks.json.bak"),
        "{out}"
    );
}

#[test]
fn a_stop_without_the_message_field_reads_the_transcript() {
    // Claude Code before 2.1.47 sent no last_assistant_message: the transcript decides.
    let app = App::fake();
    app.ok(&["init"]);
    let done = app.transcript("old-done", &app.proj, 10);
    let not_done = app.env.claude_home().join("projects/-proj/old-open.jsonl");
    std::fs::write(
        &not_done,
        "{\"type\":\"assistant\",\"isSidechain\":false,\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"still going\"}]}}\n",
    )
    .unwrap();
    for (sid, path) in [("old-done", &done), ("old-open", &not_done)] {
        let input = serde_json::json!({"hook_event_name": "Stop", "session_id": sid, "cwd": "/tmp",
            "transcript_path": path, "stop_hook_active": false})
        .to_string();
        let o = hook_call(&app, input.as_bytes());
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let pending: Vec<String> = app
        .pending()
        .iter()
        .map(|p| p["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(pending, ["old-done"]);
}

#[test]
fn the_done_marker_can_be_changed() {
    let app = App::fake();
    app.ok(&["init"]);
    let ev = |sid: &str, msg: &str| {
        serde_json::json!({"hook_event_name": "Stop", "session_id": sid, "cwd": "/tmp", "last_assistant_message": msg}).to_string()
    };
    let marker = ["--done-marker", "ALL FINISHED"];
    assert!(
        hook_call_with(&app, &marker, &[], ev("m-done", "x\nDONE").as_bytes())
            .status
            .success()
    );
    assert!(
        hook_call_with(
            &app,
            &marker,
            &[],
            ev("m-finished", "x\n ALL FINISHED ").as_bytes()
        )
        .status
        .success()
    );
    // A hook reads its marker from its command line only: the variable may be a
    // repository's (a project's settings `env` reaches every hook).
    assert!(
        hook_call_with(
            &app,
            &[],
            &[("HOOKS_DONE_MARKER", "ALL FINISHED")],
            ev("m-by-variable", "x\nALL FINISHED").as_bytes()
        )
        .status
        .success()
    );
    let pending: Vec<String> = app
        .pending()
        .iter()
        .map(|p| p["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(pending, ["m-finished"], "only the configured marker counts");
    // install carries a non-default marker into the hook command.
    let o = app
        .cmd(&["install", "--done-marker", "ALL FINISHED"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let settings: serde_json::Value = serde_json::from_slice(
        &std::fs::read(app.env.claude_home().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        app.hook_command("")
            .replace(" claude-hook", " --done-marker 'ALL FINISHED' claude-hook")
    );
    refused(
        &app,
        &["notify", "--session", "s", "--done-marker", " "],
        2,
        "doneMarker: must be one line",
    );
}

#[test]
fn output_piped_into_head_ends_quietly() {
    // `hooks-app … | head` ends as Unix tools do when the reader goes: by SIGPIPE, without
    // a panic's message on stderr.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' completions bash 2>'{err}' | head -c 1 >/dev/null; cat '{err}'",
            crate::support::APP,
            err = std::env::temp_dir()
                .join(format!("hooks-pipe-{}.err", std::process::id()))
                .display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stdout);
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

/// A mistyped subcommand gets a "did you mean"; `hooks delete` takes several ids and
/// deletes none when one of them names no hook.
#[test]
fn typos_are_suggested_and_a_delete_of_several_is_all_or_nothing() {
    let app = App::fake();
    app.ok(&["init"]);
    for (typo, meant) in [(&["pendign"][..], "pending"), (&["hooks", "shwo"], "show")] {
        let o = app.run(typo);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(&format!("'{meant}'")), "{}", stderr(&o));
    }
    refused(
        &app,
        &["hooks", "delete", "post-task", "no-such-hook"],
        2,
        "no hook with id no-such-hook",
    );
    assert_eq!(app.json(&["hooks", "list"]).as_array().unwrap().len(), 2);
    let out = app.ok(&["hooks", "delete", "post-task", "continue-after-limit"]);
    assert!(
        out.contains("post-task deleted") && out.contains("continue-after-limit deleted"),
        "{out}"
    );
    assert!(app.json(&["hooks", "list"]).as_array().unwrap().is_empty());
}

/// A length of time is written one way everywhere: `90`, `90s`, `5m`, `2h`, `1d`.
#[test]
fn lengths_of_time_take_the_same_forms_everywhere() {
    let app = App::fake();
    app.ok(&["init"]);
    for (typed, secs) in [
        ("30s", 30),
        ("2m", 120),
        ("1h30m", 5400),
        ("1d", 86_400),
        ("45", 45),
    ] {
        app.ok(&["hooks", "update", "post-task", "--delay", typed]);
        assert_eq!(app.hook("post-task")["delaySeconds"], secs, "{typed}");
    }
    refused(
        &app,
        &["hooks", "update", "post-task", "--delay", "2d"],
        2,
        "delaySeconds: must be",
    );
    refused(
        &app,
        &["hooks", "update", "post-task", "--delay", "-5"],
        2,
        "delaySeconds: must be",
    );
    // `pause --for` takes a bare number of seconds too. Run where `$USER` is not set (a
    // service, a cron job), the pause still names the account, not "someone".
    let o = app
        .cmd(&["pause", "--for", "90"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let p = app.json(&["status"])["pause"].clone();
    let me = hooks_platform::account::name_of(hooks_platform::account::uid());
    assert!(
        p["by"]
            .as_str()
            .is_some_and(|by| by.starts_with(&format!("{me}@"))),
        "{p}"
    );
    let (since, until) = (
        hooks_core::stamp::parse(p["since"].as_str().unwrap()).unwrap(),
        hooks_core::stamp::parse(p["until"].as_str().unwrap()).unwrap(),
    );
    assert_eq!((until - since).whole_seconds(), 90, "{p}");
}
