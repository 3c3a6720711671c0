//! A second agent through the same core: a conversation in OpenAI's real Codex CLI (the
//! pinned release, against a loopback mock of the Responses API) ends `DONE`; Codex's Stop
//! hook runs hooks-app's hook entry point, which queues the follow-up; the Codex runner
//! resumes that same thread with `codex exec resume`, once, and the run is recorded with
//! its tokens and the model read from the rollout.

use hooks_testkit::codex::{CodexEnv, MockResponses, codex_bin};
use hooks_testkit::wait_until;

use crate::support::*;

/// A user of both agents: a mock Responses API whose replies end `COMPLETED`, a scratch
/// Codex home, and hooks-app initialised with post-task due at once; every hooks-app
/// process sees Codex's folder and key.
fn codex_user() -> (MockResponses, CodexEnv, App) {
    let api = MockResponses::start();
    api.set_final_line(Some("COMPLETED"));
    let cx = CodexEnv::new(&api);
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    for (k, v) in cx.vars() {
        if k != "HOME" {
            app.env.set_var(&k, &v);
        }
    }
    (api, cx, app)
}

/// Codex's hooks.json with one entry for `event`, calling hooks-app as `install` writes it.
fn hooks_json(cx: &CodexEnv, app: &App, event: &str) {
    std::fs::write(
        cx.codex_home().join("hooks.json"),
        serde_json::json!({"hooks": {event: [{"hooks": [
            {"type": "command", "command": app.hook_command(""), "timeout": 10}
        ]}]}})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn a_codex_conversation_ending_done_is_followed_up_once_by_resuming_it() {
    let (_api, cx, app) = codex_user();
    // Codex's Stop hook calls hooks-app as install writes it for Claude Code.
    hooks_json(&cx, &app, "Stop");
    // The person's conversation; the hook trusted for this run (a person trusts it once in
    // Codex's TUI).
    let thread = cx.new_conversation_running_hooks("build the feature SAY_DONE");
    let pending = app.pending();
    assert_eq!(
        pending.len(),
        1,
        "the Stop hook queued post-task: {pending:?}"
    );
    assert_eq!(pending[0]["sessionId"], thread.as_str());
    let codex = codex_bin();
    let codex = codex.to_str().unwrap();
    // The default runner resumes each conversation with its own agent's CLI: this one
    // with codex, never claude (the fake claude here would log a call).
    app.ok(&["--codex-bin", codex, "tick", "--quiet-period", "0"]);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert!(app.fake_log().is_empty(), "claude was not asked");
    assert_eq!(r["completed"], true, "{r}");
    assert_eq!(r["sessionId"], thread.as_str(), "{r}");
    assert_eq!(
        r["model"], "gpt-5.5",
        "the model read from the rollout: {r}"
    );
    assert_eq!(app.json(&["session", &thread])["agent"], "codex");
    assert_eq!(r["usage"]["outputTokens"], 50, "the turn's own tokens: {r}");
    assert_eq!(r["usage"]["cacheReadInputTokens"], 200, "{r}");
    // Codex reports no cost: the run is priced from its tokens at OpenAI's gpt-5.5 price
    // ($5 in, $0.50 cached, $30 out a million).
    let n = |k: &str| r["usage"][k].as_f64().unwrap_or(0.0);
    let want =
        (n("inputTokens") * 5.0 + n("cacheReadInputTokens") * 0.5 + n("outputTokens") * 30.0) / 1e6;
    let got = r["costUsd"]
        .as_f64()
        .unwrap_or_else(|| panic!("a cost: {r}"));
    assert!((got - want).abs() < 1e-9, "{got} vs {want}: {r}");
    // The same thread, resumed with the hook's prompt: its rollout holds the follow-up.
    let rollout = std::fs::read_to_string(cx.rollout(&thread).expect("the rollout")).unwrap();
    assert!(
        rollout.contains("tidy-up pass"),
        "the follow-up's prompt is in the thread"
    );
    // Once per hook and session: the follow-up's own Stop and a second tick run nothing.
    // The default runner resumes each conversation with its own agent's CLI: this one
    // with codex, never claude (the fake claude here would log a call).
    app.ok(&["--codex-bin", codex, "tick", "--quiet-period", "0"]);
    assert_eq!(app.runs().len(), 1, "{:?}", app.runs());
    assert!(app.pending().is_empty(), "{:?}", app.pending());
}

/// A Codex thread a person has open in Codex's TUI is never resumed beside it: the entry
/// waits while the TUI holds the thread; the person quits, Codex's SessionEnd hook (the
/// entry `install --agent codex` adds) wakes it at once, and it runs once.
#[test]
fn a_codex_thread_open_in_its_tui_is_not_resumed_until_it_is_closed() {
    let (_api, cx, app) = codex_user();
    let thread = cx.new_conversation("build the feature SAY_DONE");
    // The SessionEnd entry, as install writes it (trusted for this TUI's run below).
    hooks_json(&cx, &app, "SessionEnd");
    let rollout = cx.rollout(&thread).expect("the rollout");
    app.ok(&[
        "notify",
        "--session",
        &thread,
        "--transcript",
        rollout.to_str().unwrap(),
    ]);
    // The person opens the thread in Codex's TUI.
    let mut vars = cx.vars();
    vars.push(("TERM".into(), "xterm-256color".into()));
    let tui = hooks_testkit::Tui::start_program(
        &codex_bin(),
        &[
            "--no-daemon",
            "--dangerously-bypass-hook-trust",
            "resume",
            &thread,
        ],
        &vars,
        &cx.proj,
    );
    let ready = "Ask Codex to do anything";
    assert!(tui.wait_for(60, ready), "{}", tui.screen());
    // Codex takes the thread's writer lock a moment after its prompt shows.
    assert!(
        hooks_testkit::wait_until(30, || app
            .ok(&["session", &thread])
            .contains("open in codex")),
        "the thread is seen open: {}\nlocks: {:?}\n{}",
        app.ok(&["session", &thread]),
        std::fs::read_dir(cx.codex_home().join("thread-writer-locks"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()),
        tui.screen()
    );
    let codex = codex_bin();
    let codex = codex.to_str().unwrap();
    app.ok(&[
        "--runner",
        "codex",
        "--codex-bin",
        codex,
        "tick",
        "--quiet-period",
        "0",
    ]);
    assert!(
        app.runs().is_empty(),
        "not resumed beside the TUI: {:?}",
        app.runs()
    );
    let reason = app.pending()[0]["waiting"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reason.starts_with("conversation open in codex"), "{reason}");
    // The person quits: Codex's SessionEnd wakes the entry, with no look of hooks-app's.
    assert!(tui.quit_with("/quit", 30), "{}", tui.screen());
    assert!(
        hooks_testkit::wait_until(30, || app.pending()[0]["waiting"].is_null()),
        "woken by SessionEnd: {:?}",
        app.pending()
    );
    // The next tick runs it, once, in the same thread.
    assert!(
        hooks_testkit::wait_until(30, || {
            app.ok(&[
                "--runner",
                "codex",
                "--codex-bin",
                codex,
                "tick",
                "--quiet-period",
                "0",
            ]);
            !app.runs().is_empty()
        }),
        "{:?}",
        app.pending()
    );
    let r = &app.runs()[0];
    assert_eq!(
        (r["status"].as_str(), r["sessionId"].as_str()),
        (Some("ok"), Some(thread.as_str())),
        "{r}"
    );
}

/// `install --agent codex` puts hooks-app's Stop and SessionEnd entries into Codex's own
/// hooks.json beside what the person has there, `doctor` says Codex must trust them until
/// a person did (in Codex's TUI), the installed entry queues a Codex conversation's `DONE`,
/// and `uninstall --agent codex` gives the file back byte for byte.
#[test]
fn install_for_codex_edits_its_hooks_json_in_place_and_uninstall_gives_it_back() {
    let (_api, cx, app) = codex_user();
    // The person's own hooks.json, in their own style.
    let file = cx.codex_home().join("hooks.json");
    let mine = "{\n    \"hooks\": {\n        \"PreToolUse\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"true\" } ] } ]\n    }\n}\n";
    std::fs::write(&file, mine).unwrap();
    app.ok(&["install", "--agent", "codex", "--daemon", "none"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for ev in ["Stop", "SessionEnd"] {
        assert!(
            v["hooks"][ev][0]["hooks"][0]["command"]
                .as_str()
                .is_some_and(|c| c.contains("claude-hook")),
            "{ev}: {text}"
        );
    }
    assert!(
        v["hooks"].get("StopFailure").is_none(),
        "Codex has no such event"
    );
    assert!(
        text.starts_with(&mine[..20]),
        "the person's lines stay: {text}"
    );
    let o = app.ok(&["install", "--agent", "codex", "--daemon", "none"]);
    assert!(o.contains("nothing to change"), "{o}");
    // Not trusted yet: doctor says what to do.
    let doctor = String::from_utf8_lossy(&app.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("FAIL codex hook trusted") && doctor.contains("Trust all and continue"),
        "{doctor}"
    );
    // The person trusts it once in Codex's TUI.
    let mut vars = cx.vars();
    vars.push(("TERM".into(), "xterm-256color".into()));
    let tui = hooks_testkit::Tui::start_program(&codex_bin(), &["--no-daemon"], &vars, &cx.proj);
    assert!(
        tui.wait_for(60, "Trust all and continue"),
        "{}",
        tui.screen()
    );
    assert!(
        tui.answer(
            "Trust all and continue",
            "2",
            "Ask Codex to do anything",
            60
        ),
        "{}",
        tui.screen()
    );
    let codex = codex_bin();
    let doctor = String::from_utf8_lossy(
        &app.run(&["--codex-bin", codex.to_str().unwrap(), "doctor"])
            .stdout,
    )
    .into_owned();
    assert!(doctor.contains("ok   codex hook trusted"), "{doctor}");
    assert!(
        doctor.contains("(codex-cli 0.171.0)"),
        "the program Codex conversations are resumed with: {doctor}"
    );
    assert!(tui.quit_with("/quit", 30), "{}", tui.screen());
    // The trusted entry runs on a Codex conversation's DONE and queues its follow-up.
    let thread = cx.new_conversation("build the feature SAY_DONE");
    let pending = app.pending();
    assert!(
        pending.iter().any(|p| p["sessionId"] == thread.as_str()),
        "queued by Codex's Stop hook: {pending:?}"
    );
    // Uninstall takes out exactly what install put in.
    app.ok(&["uninstall", "--agent", "codex", "--daemon", "none"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), mine);
    // A file install created is removed again.
    std::fs::remove_file(&file).unwrap();
    app.ok(&["install", "--agent", "codex", "--daemon", "none"]);
    assert!(file.exists());
    app.ok(&["uninstall", "--agent", "codex", "--daemon", "none"]);
    assert!(!file.exists(), "install created it; uninstall removed it");
    // Codex has one hooks.json: another scope is refused, naming the field.
    let o = app.run(&["install", "--agent", "codex", "--scope", "project"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("scope:"));
}

/// A hook for one agent follows up that agent's conversations only, and `pending` and
/// `runs` say whose conversation each is: post-task for Claude Code, a copy of it for
/// Codex; a real Codex conversation and a Claude Code one each end `DONE`.
#[test]
fn a_hook_for_one_agent_follows_up_only_that_agents_conversations() {
    let (_api, cx, app) = codex_user();
    app.ok(&["hooks", "update", "post-task", "--agent", "claude"]);
    let codex_hook = app.ok(&[
        "hooks",
        "create",
        "Codex tidy",
        "--prompt-file",
        ".claude/agents/hooks/post-task.md",
        "--delay",
        "0",
        "--agent",
        "codex",
    ]);
    let codex_hook = codex_hook.trim();
    assert_eq!(app.hook(codex_hook)["agent"], "codex");
    assert_eq!(app.hook("post-task")["agent"], "claude");
    hooks_json(&cx, &app, "Stop");
    let thread = cx.new_conversation_running_hooks("build the feature SAY_DONE");
    // A Claude Code conversation ends too, through the same entry point.
    let t = app.transcript("claude-conv", &app.proj, 1000);
    let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": "claude-conv",
        "cwd": app.proj, "transcript_path": t, "last_assistant_message": "all done\nDONE"});
    let o = app.hook_as_claude(&app.hook_command(""), &app.proj, &[], &stop.to_string());
    assert!(o.status.success(), "{o:?}");
    let mut pending: Vec<(String, String, String)> = app
        .pending()
        .iter()
        .map(|p| {
            (
                p["hookId"].as_str().unwrap_or("").to_owned(),
                p["sessionId"].as_str().unwrap_or("").to_owned(),
                p["agent"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    pending.sort();
    let mut want = vec![
        (codex_hook.to_owned(), thread.clone(), "codex".to_owned()),
        (
            "post-task".to_owned(),
            "claude-conv".to_owned(),
            "claude".to_owned(),
        ),
    ];
    want.sort();
    assert_eq!(
        pending, want,
        "each hook queued for its own agent's conversation"
    );
    let text = app.ok(&["pending"]);
    assert!(text.contains("AGENT") && text.contains("codex"), "{text}");
    let codex = codex_bin();
    app.ok(&[
        "--codex-bin",
        codex.to_str().unwrap(),
        "tick",
        "--quiet-period",
        "0",
    ]);
    let runs = app.runs();
    let of = |s: &str| {
        runs.iter()
            .find(|r| r["sessionId"] == s)
            .unwrap_or_else(|| panic!("a run of {s}: {runs:?}"))
            .clone()
    };
    assert_eq!(
        of(&thread)["agent"],
        "codex",
        "{}",
        app.ok(&["session", &thread, "--json"])
    );
    assert_eq!(of(&thread)["hookId"], codex_hook);
    assert_eq!(of(&thread)["status"], "ok", "{runs:?}");
    assert_eq!(of("claude-conv")["agent"], "claude");
    assert_eq!(of("claude-conv")["hookId"], "post-task");
}

/// A hook for Codex conversations only whose prompt file sets a run option Codex has no
/// flag for is refused when it is made, naming the option, and nothing is written; for
/// every agent it is made, with a note.
#[test]
fn a_codex_hook_whose_prompt_codex_cannot_run_is_refused_when_it_is_made() {
    let app = App::fake();
    app.ok(&["init"]);
    let dir = app.proj.join(".claude/agents/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("review.md"),
        "---\nname: review\npermission-mode: acceptEdits\n---\nReview the change.\n",
    )
    .unwrap();
    let create = |agent: &str| {
        app.run(&[
            "hooks",
            "create",
            "Review",
            "--prompt-file",
            ".claude/agents/hooks/review.md",
            "--agent",
            agent,
        ])
    };
    let o = create("codex");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("agent") && err.contains("permissionMode") && err.contains("Codex"),
        "the error names the field and the option: {err}"
    );
    let ids: Vec<String> = app
        .json(&["hooks", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !ids.contains(&"review".to_owned()),
        "nothing written: {ids:?}"
    );
    // Nor may an existing Codex hook be pointed at it.
    app.ok(&["hooks", "update", "post-task", "--agent", "codex"]);
    let o = app.run(&[
        "hooks",
        "update",
        "post-task",
        "--prompt-file",
        ".claude/agents/hooks/review.md",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        app.hook("post-task")["promptFile"],
        ".claude/agents/hooks/post-task.md"
    );
    // Nor is a project's prompt file of that name approved for it.
    let repo = app.env.workdir("repo");
    let repo_prompts = repo.join(".claude/agents/hooks");
    std::fs::create_dir_all(&repo_prompts).unwrap();
    std::fs::write(
        repo_prompts.join("post-task.md"),
        "---\nname: post-task\nmax-turns: 3\n---\nTidy up.\n",
    )
    .unwrap();
    let o = app.run(&["trust", repo.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("maxTurns") && err.contains("nothing was approved"),
        "{err}"
    );
    assert!(
        !app.ok(&["trust", "--list"]).contains("post-task.md"),
        "nothing approved"
    );
    // For every agent it is made, and the note says what Codex will refuse.
    let o = create("all");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("note:") && err.contains("permissionMode"),
        "{err}"
    );
    // An agent name is checked like every field.
    let o = app.run(&["hooks", "update", "post-task", "--agent", "Codex CLI"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("agent"), "{err}");
}

/// A person who keeps Codex's hooks in `config.toml` gets hooks-app's entries there, not in
/// a second hooks.json (Codex warns when one layer has both): a dry run shows only the
/// block, the real Codex runs the entry, and uninstall takes exactly that block out, the
/// file coming back byte for byte, or with what Codex wrote since (its trust record) kept.
#[test]
fn install_for_codex_adds_to_config_toml_where_the_person_keeps_hooks() {
    let (_api, cx, app) = codex_user();
    let cfg = cx.codex_home().join("config.toml");
    let read = || std::fs::read_to_string(&cfg).unwrap();
    let mut mine = read();
    mine.push_str(
        "\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"true\"\n",
    );
    std::fs::write(&cfg, &mine).unwrap();
    let install = ["install", "--agent", "codex", "--daemon", "none"];
    let dry = app.ok(&[&install[..], &["--dry-run"]].concat());
    assert!(
        dry.contains("would add to") && dry.contains("[[hooks.Stop]]") && !dry.contains("base_url"),
        "only the block is shown: {dry}"
    );
    assert_eq!(read(), mine, "a dry run writes nothing");
    app.ok(&install);
    assert!(
        !cx.codex_home().join("hooks.json").exists(),
        "no second layer of hooks"
    );
    let text = read();
    assert!(
        text.starts_with(&mine) && text.contains("claude-hook"),
        "{text}"
    );
    let o = app.ok(&install);
    assert!(o.contains("nothing to change"), "{o}");
    app.ok(&["uninstall", "--agent", "codex", "--daemon", "none"]);
    assert_eq!(read(), mine, "byte for byte");
    // Installed again, the real Codex runs the entry on a conversation's DONE.
    app.ok(&install);
    let thread = cx.new_conversation_running_hooks("build the feature SAY_DONE");
    assert!(
        app.pending()
            .iter()
            .any(|p| p["sessionId"] == thread.as_str()),
        "queued by the Stop entry in config.toml: {:?}",
        app.pending()
    );
    // Codex records a person's trust in the same file, by the entry's place (group, then
    // handler; seen with 0.171.0): the person's own Stop hook trusted is not ours.
    let codex = codex_bin();
    let doctor = || {
        String::from_utf8_lossy(
            &app.run(&["--codex-bin", codex.to_str().unwrap(), "doctor"])
                .stdout,
        )
        .into_owned()
    };
    let trust = |group: u32| {
        format!(
            "\n[hooks.state.\"{}:stop:{group}:0\"]\ntrusted_hash = \"sha256:00\"\n",
            cfg.display()
        )
    };
    std::fs::write(&cfg, format!("{}{}", read(), trust(0))).unwrap();
    assert!(doctor().contains("FAIL codex hook trusted"), "{}", doctor());
    std::fs::write(&cfg, format!("{}{}", read(), trust(1))).unwrap();
    assert!(doctor().contains("ok   codex hook trusted"), "{}", doctor());
    // Uninstall leaves what Codex wrote since.
    app.ok(&["uninstall", "--agent", "codex", "--daemon", "none"]);
    assert_eq!(read(), format!("{mine}{}{}", trust(0), trust(1)));
}

/// Codex's hooks.json with an entry for each of `events`, calling hooks-app as `install`
/// writes them.
fn hooks_json_for(cx: &CodexEnv, app: &App, events: &[&str]) {
    let entry = serde_json::json!([{"hooks": [
        {"type": "command", "command": app.hook_command(""), "timeout": 10}
    ]}]);
    let hooks: serde_json::Map<String, serde_json::Value> = events
        .iter()
        .map(|e| ((*e).to_owned(), entry.clone()))
        .collect();
    std::fs::write(
        cx.codex_home().join("hooks.json"),
        serde_json::json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Codex at its usage limit (it has no StopFailure, and runs no Stop hook for the refused
/// turn): its SessionEnd hook reads the failure from the rollout and queues
/// `continue-after-limit`, due at the reset the rollout records, to the second, plus the
/// margin. Once the limit has reset, the same thread is resumed once; a thread the person
/// went on in themselves is skipped, never continued on top; and a continuation that meets
/// the limit again goes back to the queue until the new reset.
#[test]
fn a_codex_conversation_stopped_by_its_usage_limit_is_continued_once_after_the_reset() {
    let (api, cx, app) = codex_user();
    hooks_json_for(&cx, &app, &["Stop", "SessionEnd"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    app.ok(&["hooks", "update", "continue-after-limit", "--delay", "0"]);
    let codex = codex_bin();
    let codex = codex.to_str().unwrap();
    let tick = || app.ok(&["--codex-bin", codex, "tick", "--quiet-period", "0"]);
    let entry_of = |thread: &str| app.pending().into_iter().find(|p| p["sessionId"] == thread);
    // Due times are kept to the second, rounded up: the clock passes the entry's first.
    let until_due = |thread: &str| {
        let p = entry_of(thread).unwrap_or_else(|| panic!("queued: {:?}", app.pending()));
        let due = hooks_core::stamp::parse(p["dueAt"].as_str().unwrap()).unwrap();
        assert!(
            wait_until(5, || time::OffsetDateTime::now_utc() >= due),
            "due within seconds: {p}"
        );
    };

    // A limit that resets in three hours: queued for then.
    let reset = unix_now() + 3 * 3600 + 17;
    api.set_usage_limited(Some(reset));
    let later = cx.new_conversation_running_hooks("build the feature");
    let p = entry_of(&later).unwrap_or_else(|| panic!("queued: {:?}", app.pending()));
    assert_eq!(p["hookId"], "continue-after-limit", "{p}");
    assert_eq!(p["error"], "rate_limit", "{p}");
    let due = hooks_core::stamp::parse(p["dueAt"].as_str().unwrap()).unwrap();
    assert_eq!(
        due.unix_timestamp(),
        reset + 60,
        "the reset from the rollout, to the second, plus the margin: {p}"
    );
    tick();
    assert!(
        app.runs().is_empty(),
        "nothing before the reset: {:?}",
        app.runs()
    );

    // A limit whose reset has passed by the time the conversation ends (the person closed
    // the TUI long after): continued at once, in the same thread, once.
    api.set_usage_limited(Some(unix_now() - 120));
    let now_due = cx.new_conversation_running_hooks("build the feature");
    until_due(&now_due);
    api.set_usage_limited(None);
    tick();
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["sessionId"], now_due.as_str(), "{runs:?}");
    assert_eq!(runs[0]["hookId"], "continue-after-limit");
    assert_eq!(runs[0]["status"], "ok", "{runs:?}");
    let rollout = std::fs::read_to_string(cx.rollout(&now_due).unwrap()).unwrap();
    assert!(
        rollout.contains("Carry on with the task"),
        "in the same thread"
    );
    tick();
    assert_eq!(app.runs().len(), 1, "once: {:?}", app.runs());
    assert!(entry_of(&now_due).is_none(), "{:?}", app.pending());

    // The person went on in the thread before the continuation came: skipped.
    api.set_usage_limited(Some(unix_now() - 120));
    let went_on = cx.new_conversation_running_hooks("build the feature");
    until_due(&went_on);
    api.set_usage_limited(None);
    cx.resume(&went_on, "try again");
    let asked = api.requests();
    tick();
    assert_eq!(api.requests(), asked, "no turn on top of the person's");
    let r = app
        .runs()
        .into_iter()
        .find(|r| r["sessionId"] == went_on.as_str())
        .expect("recorded");
    assert!(
        r["status"]
            .as_str()
            .is_some_and(|w| w.starts_with("skipped") && w.contains("went on after the failure")),
        "{r}"
    );

    // The continuation itself meets the limit again: back in the queue until the new
    // reset, read from the rollout.
    api.set_usage_limited(Some(unix_now() - 120));
    let again = cx.new_conversation_running_hooks("build the feature");
    until_due(&again);
    let reset2 = unix_now() + 2 * 3600 + 29;
    api.set_usage_limited(Some(reset2));
    tick();
    let p = entry_of(&again).unwrap_or_else(|| panic!("requeued: {:?}", app.pending()));
    let due = hooks_core::stamp::parse(p["dueAt"].as_str().unwrap()).unwrap();
    assert_eq!(due.unix_timestamp(), reset2 + 60, "{p}");
    assert!(
        p["waiting"]["reason"]
            .as_str()
            .is_some_and(|w| w.starts_with("rate limited until")),
        "{p}"
    );
    let r = app
        .runs()
        .into_iter()
        .find(|r| r["sessionId"] == again.as_str())
        .expect("the attempt is recorded");
    assert!(
        r["status"]
            .as_str()
            .is_some_and(|w| w.starts_with("requeued")),
        "{r}"
    );
}
