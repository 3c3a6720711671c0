//! Follow-ups at a time (`after`, `every`) through the built binary: the agent scheduling
//! its own check-back from its Bash tool in the real `claude`, a series, and bad input.

use crate::support::*;

/// The agent runs `hooks-app after` from its Bash tool without naming a conversation: the
/// follow-up goes into the conversation that ran it (found from Claude Code's own session
/// file, never the agent's words), fires at its time by resuming that conversation, and
/// never again.
#[test]
fn an_agent_s_check_back_goes_into_its_own_conversation_and_runs_once() {
    let app = App::real();
    app.ok(&["init"]);
    let after = format!(
        "cd / && {APP} --data-dir {} --claude-home {} after 0s 'SAY_COMPLETED check the deploy'",
        hooks_platform::shell_quote(&app.data_dir().to_string_lossy()),
        hooks_platform::shell_quote(&app.env.claude_home().to_string_lossy())
    );
    // Run from `/`, where no conversation is: only the calling one can be found.
    let (code, v, err) = app.env.run(
        &app.proj,
        &[
            "--allowedTools",
            "Bash",
            "--",
            &format!("RUN_BASH[[{after}]]"),
        ],
    );
    assert_eq!(code, 0, "{v} {err}");
    let sid = v["session_id"].as_str().expect("session_id").to_owned();
    let reply = v["result"].as_str().unwrap_or_default();
    assert!(
        reply.contains("the conversation that ran this command"),
        "the agent is told where it went: {reply}"
    );
    let queued = app.queued();
    assert_eq!(queued.len(), 1, "{queued:?}");
    let (hook, session) = &queued[0];
    assert!(hook.starts_with("after-"), "{hook}");
    assert_eq!(session, &sid);

    app.ok(&["tick", "--quiet-period", "0"]);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["hookId"], hook.as_str());
    assert_eq!(runs[0]["sessionId"], sid.as_str());
    assert_eq!(runs[0]["status"], "ok", "{runs:?}");
    let transcript = std::fs::read_to_string(app.env.transcript(&sid).unwrap()).unwrap();
    assert!(transcript.contains("check the deploy"), "resumed in place");
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(app.runs().len(), 1, "once");
    assert!(app.queued().is_empty());
}

/// `every` queues its occurrences one interval apart into the conversation named; each
/// is a queued entry `pending` lists and `pending drop` cancels; what breaks a rule is
/// refused naming the field, and changes nothing.
#[test]
fn a_series_is_listed_cancellable_and_bad_input_changes_nothing() {
    let app = App::real();
    app.ok(&["init"]);
    let sid = app.claude_session("hello");
    let v = app.json(&[
        "every",
        "2h",
        "look at CI",
        "--session",
        &sid[..8],
        "--times",
        "3",
    ]);
    assert_eq!(v["sessionId"], sid.as_str());
    let ups = v["followUps"].as_array().unwrap();
    assert_eq!(ups.len(), 3);
    let due: Vec<time::OffsetDateTime> = ups
        .iter()
        .map(|u| hooks_core::stamp::parse(u["dueAt"].as_str().unwrap()).unwrap())
        .collect();
    assert!(
        due.windows(2)
            .all(|w| w[1] - w[0] == time::Duration::hours(2)),
        "{due:?}"
    );
    let queued = app.queued();
    assert_eq!(queued.len(), 3);
    let first = ups[0]["hookId"].as_str().unwrap();
    app.ok(&["pending", "drop", first, &sid]);
    assert_eq!(app.queued().len(), 2);
    assert!(
        !app.ok(&["hooks", "list"]).contains(first),
        "follow-ups at a time are not listed among the hooks"
    );

    // `send` with a key, twice: one follow-up, due now.
    let sent = app.json(&["send", &sid[..8], "the deploy is done", "--key", "d-1"]);
    assert_eq!(
        (sent["sent"].as_bool(), sent["hookId"].as_str()),
        (Some(true), Some("send-d-1"))
    );
    let again = app.json(&["send", &sid, "the deploy is done", "--key", "D-1"]);
    assert_eq!(again["sent"], false, "{again}");
    assert_eq!(
        app.queued().iter().filter(|(h, _)| h == "send-d-1").count(),
        1
    );

    let store = std::fs::read(app.store_file()).unwrap();
    for (args, field) in [
        (&["after", "2y", "x", "--session", &sid][..], "after"),
        (&["after", "400d", "x", "--session", &sid], "after"),
        (&["after", "5m", "  ", "--session", &sid], "prompt"),
        (
            &["every", "30s", "x", "--session", &sid, "--times", "2"],
            "every",
        ),
        (
            &["every", "1h", "x", "--session", &sid, "--times", "500"],
            "times",
        ),
        (
            &["every", "1h", "x", "--session", &sid, "--until", "30m"],
            "until",
        ),
        (
            &["after", "5m", "x", "--session", "nonesuch-conversation"],
            "session",
        ),
    ] {
        let o = app.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{field}:")),
            "{args:?} names {field}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(app.store_file()).unwrap(),
        store,
        "nothing changed"
    );
    let o = app.run(&[
        "hooks",
        "create",
        "mine",
        "--event",
        "scheduled",
        "--prompt-file",
        ".claude/agents/hooks/post-task.md",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The MCP server `install --mcp` adds to Claude Code's user configuration, byte for byte
/// (and `uninstall --mcp` takes out, giving the file back as it was), which the real
/// `claude` then starts: its three tools are offered to the model; the model's call of
/// `schedule_follow_up` queues a follow-up into the very conversation that called it (the
/// server's parent process's session file says which, never an argument), within the
/// person's limits; the follow-up resumes that conversation once; another conversation
/// cannot cancel it.
#[test]
fn the_agent_schedules_its_own_follow_up_through_the_mcp_server() {
    let app = App::real();
    app.ok(&["init"]);
    // Claude Code's user configuration, in the `CLAUDE_CONFIG_DIR` the scratch user sets.
    let config = app.env.claude_home().join(".claude.json");
    // As a person's would be, in a style of its own.
    std::fs::write(
        &config,
        "{\r\n\t\"theme\": \"dark\" ,\r\n\t\"numStartups\": 3\r\n}",
    )
    .unwrap();
    let before = std::fs::read(&config).unwrap();
    app.ok(&["install", "--mcp"]);
    let with: serde_json::Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    assert_eq!(with["mcpServers"]["hooks-app"]["command"], APP, "{with}");
    app.ok(&["uninstall", "--mcp"]);
    assert_eq!(std::fs::read(&config).unwrap(), before, "byte for byte");
    app.ok(&["install", "--mcp"]);
    let run = |prompt: &str| {
        let (code, v, err) = app.env.run(
            &app.proj,
            &[
                "--allowedTools",
                "mcp__hooks-app__schedule_follow_up,mcp__hooks-app__list_follow_ups,mcp__hooks-app__cancel_follow_up",
                "--",
                prompt,
            ],
        );
        assert_eq!(code, 0, "{v} {err}");
        v
    };
    let v = run(
        r#"CALL_TOOL[[mcp__hooks-app__schedule_follow_up {"prompt": "SAY_COMPLETED is CI green?", "after": "0s"}]]"#,
    );
    let sid = v["session_id"].as_str().unwrap().to_owned();
    // The first request, before any call: Claude Code offers MCP tools by name (as
    // deferred tools, fetched with its tool search), so each name is in it.
    let first = app.api.bodies()[0].to_string();
    for tool in hooks_mcp::TOOLS {
        assert!(
            first.contains(&format!("mcp__hooks-app__{tool}")),
            "{tool} is offered to the model"
        );
    }
    let queued = app.queued();
    assert_eq!(queued.len(), 1, "{queued:?}: {v}");
    assert_eq!(queued[0].1, sid, "into the calling conversation");
    assert!(
        v["result"]
            .as_str()
            .unwrap_or_default()
            .contains(&queued[0].0),
        "the agent reads back its id: {v}"
    );

    // Each `claude -p` is a conversation of its own. Beyond the person's limit of ten
    // queued at once in one: refused, nothing queued.
    let v2 = run(
        r#"CALL_TOOL[[mcp__hooks-app__schedule_follow_up {"prompt": "again", "after": "1h", "every": "1h", "times": 11}]]"#,
    );
    assert!(
        v2["result"]
            .as_str()
            .unwrap_or_default()
            .contains("10 at once are allowed"),
        "{v2}"
    );
    let v3 = run(
        r#"CALL_TOOL[[mcp__hooks-app__schedule_follow_up {"prompt": "later", "after": "30d"}]]"#,
    );
    assert!(
        v3["result"]
            .as_str()
            .unwrap_or_default()
            .contains("7d ahead"),
        "{v3}"
    );
    let v4 = run(
        r#"CALL_TOOL[[mcp__hooks-app__cancel_follow_up {"id": "QUEUED"}]]"#
            .replace("QUEUED", &queued[0].0)
            .as_str(),
    );
    assert!(
        v4["result"]
            .as_str()
            .unwrap_or_default()
            .contains("no follow-up"),
        "another conversation cannot cancel it: {v4}"
    );
    assert_eq!(app.queued().len(), 1);

    app.ok(&["tick", "--quiet-period", "0"]);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["sessionId"], sid.as_str());
    assert_eq!(runs[0]["status"], "ok");
    let transcript = std::fs::read_to_string(app.env.transcript(&sid).unwrap()).unwrap();
    assert!(transcript.contains("is CI green?"));
}
