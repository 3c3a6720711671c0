//! Conversations stopped by a usage limit or an overload, with the real `claude` against a
//! mock that refuses as Anthropic's API does: Claude Code's `StopFailure` hook queues the
//! `continue-after-limit` hook for when the limit resets, and a follow-up that itself hits
//! a limit goes back to the queue instead of ending as an error.

use hooks_testkit::{Limit, wait_until};
use serde_json::Value;

use crate::support::*;

/// `claude -p` in the project, whatever it exits with: a refused turn exits 1.
fn claude_turn(app: &App, prompt: &str) -> Value {
    app.env.run(&app.proj, &["--", prompt]).1
}

/// `claude -p` in the project, refused: its StopFailure hook queues the follow-up. Claude
/// Code 2.1.332 ends a StopFailure hook still running about 1.5 s after the refusal, when
/// `-p` exits (measured: a hook sleeping 2 s never finishes; 2.1.197 lets it); on a loaded
/// machine hooks-app's entry was sometimes ended before it had queued anything. When
/// nothing is queued a few seconds later, the event Claude Code fired is handed to the
/// installed hook command again, as Claude Code runs it, so the test is of what follows.
fn refused_turn(app: &App, prompt: &str) -> Value {
    let turn = claude_turn(app, prompt);
    if wait_until(5, || !app.pending().is_empty()) {
        return turn;
    }
    let sid = turn["session_id"].as_str().expect("a session").to_owned();
    let transcript = std::fs::read_dir(app.env.claude_home().join("projects"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join(format!("{sid}.jsonl")))
        .find(|p| p.is_file())
        .expect("the conversation's transcript");
    let input = serde_json::json!({"hook_event_name": "StopFailure", "session_id": sid,
        "transcript_path": transcript, "cwd": app.proj, "error": "rate_limit",
        "last_assistant_message": turn["result"]});
    eprintln!("the StopFailure hook was ended before it queued anything: its event again");
    let o = app.hook_as_claude(&app.hook_command(""), &app.proj, &[], &input.to_string());
    assert!(o.status.success(), "{o:?}");
    turn
}

/// Installs the hook with post-task due a second after a conversation says DONE, and has
/// one do so; returns its session id (its post-task follow-up is queued).
fn finished_conversation(app: &App) -> String {
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&[
        "hooks",
        "update",
        "post-task",
        "--delay",
        "1",
        "--max-context-k",
        "0",
    ]);
    app.api.set_final_line(Some("COMPLETED"));
    app.claude("build the feature SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits until the one queued entry is due (its backoff is a second or two), then has a
/// `tick` decide it.
fn tick_once_due(app: &App) {
    let due = wait_until(10, || {
        app.pending()
            .first()
            .and_then(|p| p["dueAt"].as_str().and_then(hooks_core::stamp::parse))
            .is_some_and(|d| d <= time::OffsetDateTime::now_utc())
    });
    assert!(due, "{:?}", app.pending());
    app.ok(&["tick", "--quiet-period", "0"]);
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[test]
fn a_conversation_stopped_by_a_usage_limit_is_continued_once_after_the_reset() {
    let app = App::real();
    app.env.as_subscriber();
    app.env.set_var("TZ", "UTC");
    let init = app.ok(&["init"]);
    assert!(init.contains("continue-after-limit"), "{init}");
    assert!(
        std::fs::read_to_string(
            app.proj
                .join(".claude/agents/hooks/continue-after-limit.md")
        )
        .unwrap()
        .contains("Carry on with the task")
    );
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    let settings = std::fs::read_to_string(app.env.claude_home().join("settings.json")).unwrap();
    assert!(settings.contains("\"StopFailure\""), "{settings}");
    app.ok(&["hooks", "enable", "continue-after-limit"]);

    // The subscription's five-hour limit is reached, resetting a few seconds from now.
    let reset = unix_now() + 5;
    app.api.set_limit(Some(Limit::RateLimited { reset }));
    let failed_at = hooks_core::stamp::format_exact(time::OffsetDateTime::now_utc());
    let turn = refused_turn(&app, "build the feature SAY_DONE");
    let sid = turn["session_id"].as_str().expect("a session").to_owned();
    assert_eq!(turn["api_error_status"], 429, "{turn}");
    let said = turn["result"].as_str().unwrap_or_default().to_owned();
    assert!(said.contains("resets"), "the CLI states the reset: {said}");

    // Queued for the reset the message states (to the minute, in the CLI's zone) plus the
    // 60 s margin; post-task is not queued for a turn that failed. Claude Code runs its
    // StopFailure hooks without waiting for them, so `claude -p` may exit first.
    assert!(
        wait_until(10, || !app.pending().is_empty()),
        "StopFailure queued the follow-up"
    );
    let pending = app.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let e = &pending[0];
    assert_eq!(e["hookId"], "continue-after-limit");
    assert_eq!(e["error"], "rate_limit");
    let shown =
        time::OffsetDateTime::from_unix_timestamp(reset - reset.rem_euclid(60) + 60).unwrap();
    let due = hooks_core::stamp::format(shown);
    assert_eq!(e["dueAt"], due.as_str(), "{said} → {e}");
    assert!(
        e["waiting"]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with(&format!("rate limited until {due}"))),
        "{e}"
    );
    let listed = app.ok(&["pending"]);
    assert!(listed.contains("rate limited until"), "{listed}");

    // The limit lifts; the daemon continues the same conversation once, after the reset,
    // and the continuation finishes the task (its reply ends with DONE).
    app.api.set_limit(None);
    app.api.set_final_line(Some("DONE"));
    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let ran = wait_until(120, || {
        app.runs()
            .iter()
            .any(|r| r["hookId"] == "continue-after-limit" && r["finishedAt"].is_string())
    });
    signal(&serve, libc::SIGTERM);
    let log = String::from_utf8_lossy(&serve.wait_with_output().unwrap().stderr).into_owned();
    assert!(ran, "the continuation ran: {log}");
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let started = hooks_core::stamp::parse(runs[0]["startedAt"].as_str().unwrap()).unwrap();
    assert!(
        started >= shown,
        "not before the reset and its margin: {runs:?}"
    );
    eprintln!(
        "limit run: failed at {failed_at}, reset {} (said: {said:?}), due {due}, continued at {}",
        hooks_core::stamp::format(time::OffsetDateTime::from_unix_timestamp(reset).unwrap()),
        runs[0]["startedAt"]
    );
    assert_eq!(runs[0]["status"], "ok", "{runs:?}");
    let transcript = std::fs::read_to_string(app.env.transcript(&sid).unwrap()).unwrap();
    assert!(
        transcript.contains("Carry on with the task") && transcript.contains("rate_limit"),
        "the prompt, with {{{{error}}}} filled, is in the same conversation"
    );
    // The continuation carried the person's task on: its DONE is the task's, and queues
    // post-task for the conversation (which a failed turn never queued). Nothing else:
    // continue-after-limit is not queued again.
    assert_eq!(
        app.queued(),
        [("post-task".to_owned(), sid.clone())],
        "the continuation's DONE queued post-task"
    );
    assert!(app.json(&["session", &sid])["stamps"]["continue-after-limit"].is_string());
}

/// The person carries on by hand after a limit, before and after the continuation came
/// due (no daemon looked meanwhile): the conversation went on, so it is not continued again.
#[test]
fn a_conversation_that_went_on_after_a_limit_is_not_continued_again() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    app.ok(&["hooks", "update", "continue-after-limit", "--delay", "2"]);

    // An API key's 429 states no reset: due after the hook's delay.
    app.api.set_limit(Some(Limit::RateLimited {
        reset: unix_now() + 3600,
    }));
    let turn = refused_turn(&app, "build the feature");
    let sid = turn["session_id"].as_str().expect("a session").to_owned();
    assert_eq!(turn["api_error_status"], 429, "{turn}");
    // StopFailure hooks run without Claude Code waiting for them.
    assert!(
        wait_until(10, || app.pending().len() == 1),
        "{:?}",
        app.pending()
    );

    // "go on", typed by the person with `-p`, answered.
    app.api.set_limit(None);
    let (code, v, err) = app.env.run(&app.proj, &["--resume", &sid, "--", "go on"]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["session_id"], sid.as_str());
    // Past its due time, the daemon looks: a recorded skip, no run.
    tick_once_due(&app);
    assert_eq!(
        app.last_status("continue-after-limit"),
        "skipped: the conversation went on after the failure"
    );
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "one record, the skip: {runs:?}");
    assert!(
        runs[0]["costUsd"].is_null() && runs[0]["exitCode"].is_null(),
        "{runs:?}"
    );
    assert!(app.pending().is_empty(), "{:?}", app.pending());
    let transcript = std::fs::read_to_string(app.env.transcript(&sid).unwrap()).unwrap();
    assert!(
        !transcript.contains("Carry on with the task"),
        "the prompt never went in"
    );
}

/// A limit on a conversation's very first turn leaves no reply to name a model; with a
/// daily budget set the continuation needs an estimate, and takes the model from Claude
/// Code's settings as the CLI would, instead of being skipped for good.
#[test]
fn a_limit_on_the_first_turn_with_a_budget_is_priced_on_the_settings_model() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    app.ok(&["hooks", "update", "continue-after-limit", "--delay", "1"]);
    app.ok(&["budget", "set", "--daily-usd", "5", "--time-zone", "UTC"]);
    let settings = app.env.claude_home().join("settings.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    v["model"] = "sonnet".into();
    std::fs::write(&settings, v.to_string()).unwrap();

    app.api.set_limit(Some(Limit::RateLimited {
        reset: unix_now() + 3600,
    }));
    let turn = refused_turn(&app, "build the feature");
    assert_eq!(turn["api_error_status"], 429, "{turn}");
    let sid = turn["session_id"].as_str().unwrap().to_owned();
    let about = app.json(&["session", &sid]);
    assert!(about["model"].is_null(), "no reply names a model: {about}");
    let estimate = about["estimates"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["hookId"] == "continue-after-limit"))
        .cloned()
        .unwrap_or_default();
    assert!(
        estimate["model"]
            .as_str()
            .is_some_and(|m| m.contains("sonnet")),
        "priced on the settings' model: {about}"
    );

    app.api.set_limit(None);
    tick_once_due(&app);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "ok", "{runs:?}");
    assert!(
        runs[0]["model"]
            .as_str()
            .is_some_and(|m| m.contains("sonnet")),
        "{runs:?}"
    );
}

#[test]
fn a_follow_up_overloaded_twice_goes_back_to_the_queue_and_then_runs() {
    let app = App::real();
    app.env.set_var("CLAUDE_CODE_MAX_RETRIES", "0");
    let sid = finished_conversation(&app);
    assert_eq!(app.pending().len(), 1);
    // The next two requests are refused as overloaded (529), then answered.
    app.api.set_limit(Some(Limit::Overloaded { times: 2 }));
    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let done = wait_until(120, || {
        app.runs()
            .iter()
            .any(|r| r["finishedAt"].is_string() && r["status"] == "ok")
    });
    signal(&serve, libc::SIGTERM);
    let log = String::from_utf8_lossy(&serve.wait_with_output().unwrap().stderr).into_owned();
    assert!(done, "it ran in the end: {log}");
    assert!(log.contains("back in the queue"), "{log}");
    let runs = app.runs();
    let statuses: Vec<&str> = runs
        .iter()
        .map(|r| r["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        statuses.len(),
        3,
        "every attempt is in the run log: {runs:?}"
    );
    assert!(
        statuses[..2]
            .iter()
            .all(|s| s.starts_with("requeued: overloaded, back in the queue, due ")),
        "{statuses:?}"
    );
    assert!(
        runs[..2]
            .iter()
            .all(|r| r["reply"].as_str().is_some_and(|t| t.contains("529"))),
        "{runs:?}"
    );
    assert_eq!(statuses[2], "ok");
    // Backing off: the second attempt waited twice the delay after the first.
    let at = |i: usize| hooks_core::stamp::parse(runs[i]["startedAt"].as_str().unwrap()).unwrap();
    assert!(at(1) - at(0) >= time::Duration::seconds(2), "{runs:?}");
    let hook = app.hook("post-task");
    assert_eq!(hook["lastStatus"], "ok");
    assert_eq!(
        hook["history"]
            .as_object()
            .unwrap()
            .values()
            .filter(|v| *v == sid.as_str())
            .count(),
        1,
        "one follow-up, tried three times: {hook}"
    );
    assert!(app.pending().is_empty());
}

#[test]
fn a_follow_up_that_hits_a_usage_limit_waits_for_the_reset_and_then_runs() {
    let app = App::real();
    app.env.as_subscriber();
    app.env.set_var("TZ", "UTC");
    let sid = finished_conversation(&app);
    // The follow-up itself meets the subscription's limit, resetting in a few seconds.
    let reset = unix_now() + 5;
    app.api.set_limit(Some(Limit::RateLimited { reset }));
    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let back = wait_until(60, || {
        app.pending().first().is_some_and(|p| {
            p["waiting"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("rate limited until"))
        })
    });
    assert!(
        back,
        "back in the queue: {:?} {:?}",
        app.pending(),
        app.runs()
    );
    let due = hooks_core::stamp::format(
        time::OffsetDateTime::from_unix_timestamp(reset - reset.rem_euclid(60) + 60).unwrap(),
    );
    assert_eq!(
        app.pending()[0]["dueAt"],
        due.as_str(),
        "the reset it stated, and the margin"
    );
    assert_eq!(
        app.json(&["session", &sid])["stamps"]["post-task"],
        Value::Null
    );
    app.api.set_limit(None);
    let ran = wait_until(120, || app.runs().iter().any(|r| r["status"] == "ok"));
    signal(&serve, libc::SIGTERM);
    let log = String::from_utf8_lossy(&serve.wait_with_output().unwrap().stderr).into_owned();
    assert!(ran, "it ran after the reset: {log}");
    let runs = app.runs();
    assert_eq!(runs.len(), 2, "the attempt and the run: {runs:?}");
    assert_eq!(
        runs[0]["status"],
        format!("requeued: rate limited, back in the queue, due {due} (attempt 2 of 5)").as_str(),
        "not shown as a failure: {runs:?}"
    );
    assert!(
        runs[0]["reply"]
            .as_str()
            .is_some_and(|r| r.contains("resets")),
        "what the CLI said is kept: {runs:?}"
    );
    let started = hooks_core::stamp::parse(runs[1]["startedAt"].as_str().unwrap()).unwrap();
    assert!(hooks_core::stamp::format(started) >= due, "{runs:?}");
    assert_eq!(app.last_status("post-task"), "ok");
    assert!(app.pending().is_empty());
}

#[test]
fn doctor_says_when_an_older_install_lacks_the_stop_failure_entry() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    // As an install from before the failure event left it: no StopFailure entry.
    let path = app.env.claude_home().join("settings.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["hooks"]
        .as_object_mut()
        .unwrap()
        .shift_remove("StopFailure");
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let said = String::from_utf8_lossy(&app.run(&["doctor"]).stdout).into_owned();
    assert!(
        said.contains("no StopFailure entry") && said.contains("hooks-app install (again"),
        "{said}"
    );
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    let said = String::from_utf8_lossy(&app.run(&["doctor"]).stdout).into_owned();
    assert!(
        said.contains("StopFailure installed for continue-after-limit"),
        "{said}"
    );
}
