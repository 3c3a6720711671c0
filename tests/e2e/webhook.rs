//! `--runner webhook`: the daemon hands a follow-up to an agent backend over HTTP (a server
//! of this test's own on 127.0.0.1) and records what it answers, cost included.

use hooks_testkit::http::{answer, serve_once};

use crate::support::*;

#[test]
fn a_follow_up_goes_to_the_backend_and_its_answer_is_recorded() {
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let (url, seen) = serve_once(answer(
        "200 OK",
        r#"{"status": "ok", "completed": true, "numTurns": 2, "costUsd": 0.031,
            "usage": {"inputTokens": 5, "cacheCreationInputTokens": 1000, "cacheReadInputTokens": 0, "outputTokens": 90},
            "durationMs": 1200}"#,
    ));
    let token = app.env.dir.path().join("backend.token");
    std::fs::write(&token, "tok-123\n").unwrap();
    let webhook = [
        "--runner",
        "webhook",
        "--runner-url",
        url.as_str(),
        "--runner-token-file",
        token.to_str().unwrap(),
    ];
    let t = app.transcript("wh-1", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "wh-1",
        "--cwd",
        app.proj.to_str().unwrap(),
        "--transcript",
        t.to_str().unwrap(),
    ]);
    let doctor = String::from_utf8(app.run(&[&webhook[..], &["doctor"]].concat()).stdout).unwrap();
    assert!(
        doctor.contains(&format!(
            "ok   runner             webhook {url} (token from "
        )),
        "{doctor}"
    );
    app.ok(&[&webhook[..], &["tick", "--quiet-period", "0"]].concat());

    let s = seen.recv().unwrap();
    assert!(
        s.head
            .to_ascii_lowercase()
            .contains("authorization: bearer tok-123\r\n"),
        "{}",
        s.head
    );
    assert_eq!(s.body["hookId"], "post-task");
    assert_eq!(s.body["sessionId"], "wh-1");
    assert_eq!(s.body["cwd"], app.proj.to_str().unwrap());
    assert!(
        s.body["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("COMPLETED")),
        "the post-task prompt: {}",
        s.body
    );
    assert!(app.fake_log().is_empty(), "claude was not run");
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (
            runs[0]["status"].as_str(),
            runs[0]["costUsd"].as_f64(),
            runs[0]["completed"].as_bool()
        ),
        (Some("ok"), Some(0.031), Some(true))
    );
    assert_eq!(app.last_status("post-task"), "ok");
}

#[test]
fn a_backend_that_fails_is_recorded_as_an_error_and_bad_settings_are_refused() {
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let (url, _seen) = serve_once(answer("502 Bad Gateway", "upstream down"));
    let t = app.transcript("wh-2", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "wh-2",
        "--cwd",
        app.proj.to_str().unwrap(),
        "--transcript",
        t.to_str().unwrap(),
    ]);
    app.ok(&[
        "--runner",
        "webhook",
        "--runner-url",
        &url,
        "tick",
        "--quiet-period",
        "0",
    ]);
    assert_eq!(
        app.last_status("post-task"),
        "error: webhook answered 502 Bad Gateway: upstream down"
    );

    for (args, want) in [
        (
            &["--runner", "webhook", "tick"][..],
            "runnerUrl: --runner webhook needs --runner-url",
        ),
        (
            &["--runner", "webhook", "--runner-url", "ftp://x", "tick"][..],
            "runnerUrl: must be an http:// or https:// URL",
        ),
        (
            &[
                "--runner",
                "webhook",
                "--runner-url",
                "http://127.0.0.1:9/x",
                "--runner-token-file",
                "/nonexistent/t",
                "tick",
            ][..],
            "runnerTokenFile: could not read /nonexistent/t",
        ),
    ] {
        let o = app.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
