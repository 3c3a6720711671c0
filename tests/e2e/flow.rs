//! A new user's path with the real `claude`: init, install, a conversation that says DONE,
//! Claude's own Stop hook queuing it, the daemon resuming it, and everything recorded.

use hooks_testkit::wait_until;

use crate::support::*;

#[test]
fn a_finished_conversation_is_followed_up_once() {
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    let init = app.ok(&["init"]);
    assert!(init.contains("seeded with post-task"), "{init}");
    assert!(app.proj.join(".claude/agents/hooks/post-task.md").exists());
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "2"]);

    // The user's conversation ends with DONE: Claude's Stop hook queues the follow-up.
    let sid = app.claude_session("build the feature SAY_DONE");
    assert_eq!(app.queued(), [("post-task".to_owned(), sid.clone())]);
    let transcript = app.env.transcript(&sid).unwrap();
    let before = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .count();

    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let fired = wait_until(60, || {
        app.runs().iter().any(|r| r["finishedAt"].is_string())
    });
    signal(&serve, libc::SIGTERM);
    let out = serve.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(fired, "the follow-up ran: {log}");
    assert!(out.status.success(), "serve exits 0 on SIGTERM: {log}");
    assert!(log.contains("firing") && log.contains("finished"), "{log}");

    // The same conversation holds the follow-up turn.
    let after: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(after.len() > before);
    assert!(
        after[before..].iter().any(|l| l.contains("tidy-up pass")),
        "the post-task prompt is in the transcript"
    );
    assert_eq!(app.env.transcript(&sid), Some(transcript));

    // Its wall time, start to finish, is at least Claude's own API time.
    let run = &app.runs()[0];
    let (took, api) = (run["tookMs"].as_i64(), run["durationMs"].as_i64());
    assert!(
        took.zip(api).is_some_and(|(t, a)| t >= a && t > 0),
        "took {took:?} ms, API time {api:?} ms: {run}"
    );

    let hook = app.hook("post-task");
    assert_eq!(hook["lastStatus"], "ok");
    assert!(
        hook["history"]
            .as_object()
            .unwrap()
            .values()
            .any(|v| v == sid.as_str())
    );
    let runs = app.runs();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    eprintln!("runs --json: {r}");
    assert_eq!(
        (
            r["status"].as_str(),
            r["exitCode"].as_i64(),
            r["completed"].as_bool()
        ),
        (Some("ok"), Some(0), Some(true))
    );
    assert!(r["costUsd"].as_f64().is_some_and(|c| c > 0.0));
    assert_eq!(r["usage"]["cacheReadInputTokens"], 30_000);
    assert!(r["numTurns"].as_u64().is_some() && r["durationMs"].as_u64().is_some());
    // What the follow-up said is kept: nobody has to resume the conversation to read it.
    let reply = r["reply"].as_str().expect("the reply is in the run record");
    assert!(reply.trim_end().ends_with("COMPLETED"), "{reply}");
    let shown = app.ok(&["session", &sid]);
    assert!(
        shown.split_once("\nreply ").is_some_and(
            |(_, r)| r.contains("MOCK REPLY") && r.contains(&format!("\n{:16}COMPLETED", ""))
        ),
        "{shown}"
    );

    // The follow-up's own Stop queued nothing, and a later tick fires nothing.
    assert!(app.pending().is_empty());
    app.ok(&["tick"]);
    assert_eq!(app.runs().len(), 1, "never twice");
    let session = app.json(&["session", &sid]);
    assert!(session["stamps"]["post-task"].is_string(), "{session}");
    assert_eq!(session["cwd"], app.proj.to_string_lossy().as_ref());
    assert!(
        wait_until(5, || app.env.leftovers().is_empty()),
        "left running: {:?}",
        app.env.leftovers()
    );
}

#[test]
fn a_conversation_over_the_context_cap_is_skipped() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    app.api.set_usage(100, 2000, 80_000);
    app.claude("big job SAY_DONE");
    assert_eq!(app.pending().len(), 1);
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(
        app.hook("post-task")["lastStatus"],
        "skipped: context 83k over the 60k cap"
    );
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "the skip is in the run log: {runs:?}");
    assert_eq!(runs[0]["status"], "skipped: context 83k over the 60k cap");
    assert!(runs[0]["costUsd"].is_null(), "nothing ran: {runs:?}");
    assert!(app.pending().is_empty());
}

#[test]
fn a_missing_prompt_file_ends_in_the_run_log_history_and_session() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.post_task_at_once();
    let v = app.claude("work SAY_DONE");
    let session = v["session_id"].as_str().expect("a session id").to_owned();
    std::fs::remove_file(app.proj.join(".claude/agents/hooks/post-task.md")).unwrap();
    app.ok(&["tick", "--quiet-period", "0"]);
    assert!(app.pending().is_empty(), "the entry ended");
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let status = runs[0]["status"].as_str().unwrap_or_default();
    assert!(
        status.starts_with("error: prompt file") && status.contains("not found"),
        "{runs:?}"
    );
    assert_eq!(runs[0]["sessionId"], session.as_str());
    assert!(runs[0]["costUsd"].is_null());
    let table = app.ok(&["runs"]);
    assert!(table.contains("not found"), "{table}");
    let history = app.ok(&["history", "post-task"]);
    assert!(
        history.contains(&session) && history.contains("not found"),
        "{history}"
    );
    let about = app.ok(&["session", &session]);
    assert!(about.contains("not found"), "{about}");
    let summary = app.json(&["runs", "--summary"]);
    assert_eq!(
        (summary[0]["runs"].as_u64(), summary[0]["notRun"].as_u64()),
        (Some(0), Some(1)),
        "{summary}"
    );
}

#[test]
fn a_disabled_hook_queues_nothing_and_other_stops_queue_nothing() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.claude("just chatting, no marker");
    assert!(
        app.pending().is_empty(),
        "a Stop without DONE queues nothing"
    );
    app.ok(&["hooks", "disable", "post-task"]);
    app.claude("done now SAY_DONE");
    assert!(app.pending().is_empty(), "a disabled hook queues nothing");
}

/// A finished turn's Stop hook answers with a `systemMessage` the TUI shows: which hooks
/// were queued, when, how to stop them, and that no daemon runs to start them; nothing
/// when nothing was queued.
#[test]
fn the_person_is_told_what_a_finished_turn_queued() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&[
        "hooks",
        "create",
        "changelog",
        "--prompt-file",
        ".claude/agents/hooks/post-task.md",
        "--delay",
        "120",
    ]);
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(app.env.claude_home().join("settings.json")).unwrap(),
    )
    .unwrap();
    let command = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let t = app.transcript("s-told", &app.proj, 1000);
    let stop = |text: &str| {
        serde_json::json!({"hook_event_name": "Stop", "session_id": "s-told", "cwd": app.proj,
            "transcript_path": t, "last_assistant_message": text})
        .to_string()
    };

    let o = app.hook_as_claude(&command, &app.proj, &[], &stop("all done\nDONE"));
    assert!(o.status.success(), "{o:?}");
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let said = out["systemMessage"]
        .as_str()
        .expect("a systemMessage")
        .to_owned();
    assert!(
        said.contains("post-task in 10s")
            && said.contains("changelog in 2m")
            && said.contains("hooks-app pause")
            // Installed with no daemon, and none runs: the person is told what starts them.
            && said.contains("no hooks-app daemon is running now"),
        "{said}"
    );
    assert_eq!(app.pending().len(), 2);

    // Told again: both are queued already, and it says so; a turn that is not done: nothing.
    let o = app.hook_as_claude(&command, &app.proj, &[], &stop("all done\nDONE"));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let said = out["systemMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains("post-task (queued already)") && said.contains("changelog (queued already)"),
        "{o:?}"
    );
    assert_eq!(app.pending().len(), 2);
    let o = app.hook_as_claude(&command, &app.proj, &[], &stop("still working"));
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
}

/// Every DONE gets a word: a DONE in a conversation post-task followed up already is
/// answered with why nothing comes (once per conversation) and how to run it again.
#[test]
fn a_done_in_a_conversation_followed_up_already_is_answered() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.post_task_at_once();
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(app.env.claude_home().join("settings.json")).unwrap(),
    )
    .unwrap();
    let command = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let t = app.transcript("s-again", &app.proj, 1000);
    let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": "s-again",
        "cwd": app.proj, "transcript_path": t, "last_assistant_message": "done\nDONE"})
    .to_string();
    let o = app.hook_as_claude(&command, &app.proj, &[], &stop);
    assert!(o.status.success(), "{o:?}");
    app.ok(&["tick"]);
    assert_eq!(app.runs().len(), 1, "{:?}", app.runs());
    let o = app.hook_as_claude(&command, &app.proj, &[], &stop);
    assert!(o.status.success(), "{o:?}");
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let said = out["systemMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains("followed this conversation up already with post-task")
            && said.contains("hooks-app hooks run post-task --session s-again --force"),
        "{said}"
    );
    assert!(
        app.pending().is_empty(),
        "nothing queued: {:?}",
        app.pending()
    );
}

#[test]
fn a_conversation_still_being_written_waits_for_quiet_not_fired() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    app.claude("work SAY_DONE");
    app.ok(&["tick", "--quiet-period", "3600"]);
    let p = app.pending();
    assert_eq!(p.len(), 1);
    // It waits until the transcript has been quiet that long, using up no retry, and
    // `pending` says why.
    assert_eq!(p[0]["retries"], 0, "{p:?}");
    let table = app.ok(&["pending"]);
    assert!(
        table.contains("conversation still being written to: waits until it has been quiet for 1h"),
        "{table}"
    );
    assert!(app.runs().is_empty());
    assert!(app.json(&["hooks", "show", "post-task"])["lastStatus"].is_null());
}

#[test]
fn a_subagent_conversation_is_skipped() {
    let app = App::real();
    app.ok(&["init"]);
    // A legacy subagent transcript (agent-*.jsonl beside the session files, before Claude
    // Code moved them to <session>/subagents/), written from the documented format.
    let dir = app.env.claude_home().join("projects/-legacy");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |kind: &str, uuid: &str, content: serde_json::Value| {
        serde_json::json!({"type": kind, "uuid": uuid, "isSidechain": true, "agentId": "3ea04571",
            "sessionId": "9d0a1c2e-parent", "cwd": app.proj, "timestamp": "2025-06-01T10:00:00.000Z",
            "message": {"role": kind, "id": format!("msg_{uuid}"), "model": "claude-sonnet-4-5",
                "content": content,
                "usage": {"input_tokens": 12, "cache_creation_input_tokens": 3400, "cache_read_input_tokens": 0}}})
        .to_string()
    };
    let text = [
        line(
            "user",
            "u1",
            serde_json::json!("List the pages that lack a title."),
        ),
        line(
            "assistant",
            "a1",
            serde_json::json!([{"type": "text", "text": "Two pages lack one.\nDONE"}]),
        ),
    ]
    .join("\n");
    std::fs::write(dir.join("agent-3ea04571.jsonl"), text + "\n").unwrap();
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    // Queued without a transcript path (so the enqueue cannot tell), skipped when due. Its
    // folder is the one its transcript names (another is refused: a conversation's folder
    // does not change).
    let r = app.json(&[
        "notify",
        "--session",
        "agent-3ea04571",
        "--cwd",
        app.proj.to_str().unwrap(),
    ]);
    assert_eq!(r[0]["outcome"], "queued");
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(
        app.hook("post-task")["lastStatus"],
        "skipped: subagent conversation"
    );
    // With the path, the enqueue itself says why.
    let path = dir.join("agent-3ea04571.jsonl");
    let r = app.json(&[
        "notify",
        "--session",
        "other-1",
        "--transcript",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        (r[0]["outcome"].as_str(), r[0]["reason"].as_str()),
        (Some("skipped"), Some("subagent conversation"))
    );
}

#[test]
fn prompt_variables_reach_claude_filled_and_an_unknown_one_is_named() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.post_task_at_once();
    let prompt = app.proj.join(".claude/agents/hooks/post-task.md");
    std::fs::write(
        &prompt,
        "Follow-up {{hook_id}} of {{session_id}}, try {{attempt}}.\nYou last said: {{last_message}}\nSay COMPLETED.\n",
    )
    .unwrap();
    let sid = app.claude("build it SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(app.runs()[0]["status"], "ok", "{:?}", app.runs());
    assert!(
        app.api
            .saw(&format!("Follow-up post-task of {sid}, try 1."))
            && app.api.saw("You last said: "),
        "the filled prompt reached the API"
    );
    assert!(!app.api.saw("{{session_id}}"), "no variable left unfilled");

    // A mistyped variable: doctor names it and its line, and nothing runs.
    std::fs::write(&prompt, "Tidy up.\nThen {{sesion_id}}.\n").unwrap();
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor.contains("FAIL prompt file")
            && doctor.contains("line 2: unknown variable {{sesion_id}}"),
        "{doctor}"
    );
}

#[test]
fn a_follow_up_found_hours_late_is_skipped_when_its_hook_says_so() {
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    app.ok(&["hooks", "update", "post-task", "--max-lateness", "3600"]);
    assert_eq!(app.hook("post-task")["maxLatenessSeconds"], 3600);
    let t = app.transcript("late-1", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "late-1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    // The machine slept: the entry has been due for five hours when a daemon looks.
    let file = app.store_file();
    let mut store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let five_hours_ago = time::OffsetDateTime::now_utc() - time::Duration::hours(5);
    store["pending"][0]["dueAt"] = serde_json::json!(hooks_core::stamp::format(five_hours_ago));
    std::fs::write(&file, serde_json::to_string_pretty(&store).unwrap()).unwrap();
    app.ok(&["tick", "--quiet-period", "0"]);
    assert!(app.fake_log().is_empty(), "a stale follow-up is not fired");
    let runs = app.runs();
    assert_eq!(
        runs[0]["status"], "skipped: 5 h late (maxLatenessSeconds 3600)",
        "{runs:?}"
    );
    let o = app.run(&["hooks", "update", "post-task", "--max-lateness", "99999999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("maxLatenessSeconds: must be"));
}

#[test]
fn a_hook_can_keep_its_follow_ups_out_of_an_open_conversation() {
    let app = App::fake();
    app.ok(&["init"]);
    // The default, auto, is not shown, as the store does not keep it.
    assert_eq!(app.hook("post-task").get("deliver"), None);
    app.ok(&["hooks", "update", "post-task", "--deliver", "closed"]);
    assert_eq!(app.hook("post-task")["deliver"], "closed");
    let shown = app.ok(&["hooks", "show", "post-task"]);
    assert!(
        shown.contains("closed (resumed after the close)"),
        "{shown}"
    );
    // Kept through other changes; a bad value names the field and changes nothing.
    app.ok(&["hooks", "update", "post-task", "--delay", "5"]);
    assert_eq!(app.hook("post-task")["deliver"], "closed");
    let o = app.run(&[
        "hooks",
        "update",
        "post-task",
        "--deliver",
        "tui",
        "--delay",
        "7",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("deliver: must be auto or closed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(app.hook("post-task")["delaySeconds"], 5);
    let made = app.ok(&[
        "hooks",
        "create",
        "changelog",
        "--prompt-file",
        ".claude/agents/hooks/changelog.md",
        "--deliver",
        "auto",
    ]);
    assert!(made.contains("changelog"), "{made}");
    assert_eq!(app.hook("changelog").get("deliver"), None);
}

/// A hook set to follow up each task (`--repeat each-task`), with the real `claude`: each
/// DONE of a turn the person asked for in one conversation is followed up, resumed in that
/// same conversation; the follow-ups' own turns (which say DONE here) queue nothing. The
/// hook that runs once says so to the second DONE, and names the setting.
#[test]
fn a_hook_set_to_follow_up_each_task_follows_up_every_task_of_one_conversation() {
    let app = App::real();
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.post_task_at_once();
    app.ok(&["hooks", "update", "post-task", "--repeat", "each-task"]);
    assert_eq!(app.hook("post-task")["repeat"], "each-task");
    // The follow-up says DONE too: were its turn taken for a task, it would never end.
    app.api.set_final_line(Some("DONE"));
    let sid = app.claude_session("build the feature SAY_DONE");
    for task in 1..=2usize {
        assert_eq!(
            app.queued(),
            [("post-task".to_owned(), sid.clone())],
            "task {task}"
        );
        app.ok(&["tick", "--quiet-period", "0"]);
        let ok = app.runs().iter().filter(|r| r["status"] == "ok").count();
        assert_eq!(ok, task, "one follow-up per task: {:?}", app.runs());
        assert!(
            app.pending().is_empty(),
            "its own DONE queued nothing: {:?}",
            app.pending()
        );
        if task == 1 {
            // The person's next task, in the same conversation.
            let v = app.env.run(
                &app.proj,
                &["--resume", &sid, "--", "and now the docs SAY_DONE"],
            );
            assert_eq!(v.0, 0, "{v:?}");
        }
    }
    let runs = app.runs();
    assert!(
        runs.iter().all(|r| r["sessionId"] == sid.as_str()),
        "{runs:?}"
    );
    // Set back to once: the next DONE is told it ran, and how to have every task.
    app.ok(&["hooks", "update", "post-task", "--repeat", "once"]);
    let said = app.ok(&[
        "notify",
        "--session",
        &sid,
        "--transcript",
        app.env.transcript(&sid).unwrap().to_str().unwrap(),
    ]);
    assert!(said.contains("already ran"), "{said}");
    let bad = app.run(&["hooks", "update", "post-task", "--repeat", "twice"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("repeat") && err.contains("once or each-task"),
        "{err}"
    );
    assert_eq!(
        app.hook("post-task")["repeat"],
        serde_json::Value::Null,
        "unchanged: once"
    );
}
