//! Cost caps with the real `claude`: a follow-up estimated over its hook's cap is skipped
//! before anything reaches the API; one under it runs with the cap passed to Claude as its
//! budget; one that grows past it is stopped by Claude and recorded as such.

use crate::support::*;

/// A `claude` that writes its arguments, one a line, to `args.log`, then is the real one.
fn logging_claude(app: &App) -> std::path::PathBuf {
    let path = app.env.dir.path().join("claude-logging-args");
    hooks_testkit::write_script(
        &path,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{log}'\nexec '{real}' \"$@\"\n",
            log = app.env.dir.path().join("args.log").display(),
            real = app.claude.display(),
        ),
    );
    path
}

fn args_log(app: &App) -> Vec<String> {
    std::fs::read_to_string(app.env.dir.path().join("args.log"))
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Whether a follow-up was started (`doctor` also runs `claude --version`).
fn resumed(app: &App) -> bool {
    args_log(app).iter().any(|a| a == "--resume")
}

/// A user with the post-task hook due at once, no context cap, and `cap` as its cost cap
/// (`0`: none); follow-ups run a `claude` that logs its arguments.
fn capped_app(cap: &str) -> App {
    let mut app = App::real();
    // One model on every pinned Claude Code (2.1.197 defaults to claude-opus-4-8, 2.1.332
    // to claude-opus-5-5), so the figures below hold on both.
    app.env.set_var("ANTHROPIC_MODEL", "claude-opus-4-8");
    app.claude = logging_claude(&app);
    app.ok(&["init"]);
    app.ok(&["install", "--daemon", "none"]);
    app.post_task_at_once();
    app.ok(&["hooks", "update", "post-task", "--max-cost-usd", cap]);
    app
}

/// A conversation that says DONE with 82.1k of context: re-read as cache writes at
/// claude-opus-4-8's $6.25 a million, about $0.51. Returns its session id.
fn big_conversation(app: &App) -> String {
    app.api.set_usage(100, 2000, 80_000);
    app.claude("big job SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_follow_up_estimated_over_its_cap_is_skipped_before_any_request() {
    let app = capped_app("0.10");
    let sid = big_conversation(&app);
    let session = app.json(&["session", &sid]);
    let e = &session["estimates"][0];
    assert_eq!(e["hookId"], "post-task", "{session}");
    assert!(
        e["estimatedCostUsd"].as_f64().is_some_and(|c| c > 0.5),
        "{e}"
    );
    assert!(
        e["skippedBecause"]
            .as_str()
            .is_some_and(|w| w.ends_with("over the $0.10 cap")),
        "{e}"
    );
    let text = app.ok(&["session", &sid]);
    assert!(
        text.contains("a follow-up now would cost about $0.5")
            && text.contains("on claude-opus-4-8: 83k context re-read as cache writes"),
        "{text}"
    );

    let before = app.api.requests();
    app.ok(&["tick", "--quiet-period", "0"]);
    let status = app.last_status("post-task");
    assert!(
        status.starts_with("skipped: estimated $0.5") && status.ends_with("over the $0.10 cap"),
        "{status}"
    );
    assert_eq!(app.api.requests(), before, "no request reached the API");
    assert!(!resumed(&app), "no follow-up was started");
    let runs = app.runs();
    assert!(
        runs.len() == 1 && runs[0]["status"] == status.as_str() && runs[0]["costUsd"].is_null(),
        "the skip is logged, at no cost: {runs:?}"
    );
    assert!(app.pending().is_empty());
}

#[test]
fn a_follow_up_under_its_cap_runs_with_the_cap_as_claude_s_budget() {
    let app = capped_app("2.5");
    let sid = app.claude("small job SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.ok(&["tick", "--quiet-period", "0"]);
    let args = args_log(&app);
    let at = args.iter().position(|a| a == "--max-budget-usd");
    assert_eq!(
        at.and_then(|i| args.get(i + 1)).map(String::as_str),
        Some("2.5"),
        "{args:?}"
    );
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    let (estimated, actual) = (
        r["estimatedCostUsd"].as_f64().expect("an estimate"),
        r["costUsd"].as_f64().expect("a cost"),
    );
    eprintln!("estimate ${estimated:.4}, actual ${actual:.4}");
    assert!(estimated > 0.0 && actual > 0.0);
    let table = app.ok(&["runs"]);
    assert!(table.contains("ESTIMATED"), "{table}");
}

#[test]
fn a_run_that_grows_past_its_cap_is_stopped_by_claude_and_recorded_so() {
    let app = capped_app("0.05");
    // A small conversation: the estimate is under the cap (about $0.04)...
    app.api.set_usage(100, 2000, 1_000);
    app.claude("small job SAY_DONE");
    // ...but the follow-up's own turn reads far more: about $0.21.
    app.api.set_usage(100, 30_000, 40_000);
    app.ok(&["tick", "--quiet-period", "0"]);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(
        r["status"], "error: over budget: Reached maximum budget ($0.05)",
        "{r}"
    );
    assert!(
        r["estimatedCostUsd"].as_f64().is_some_and(|e| e <= 0.05),
        "{r}"
    );
    assert!(r["costUsd"].as_f64().is_some_and(|c| c > 0.05), "{r}");
    assert_eq!(
        app.hook("post-task")["lastStatus"],
        "error: over budget: Reached maximum budget ($0.05)"
    );
}

#[test]
fn prices_json_changes_the_estimate_and_a_bad_one_is_refused_everywhere() {
    let app = capped_app("0.10");
    let sid = big_conversation(&app);
    // The user's own, cheaper price for the model: now under the cap.
    let prices = app.data_dir().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"models": {"claude-opus-4-8": {"input": 0.5, "output": 2.5}}}"#,
    )
    .unwrap();
    let e = &app.json(&["session", &sid])["estimates"][0];
    assert!(
        e["estimatedCostUsd"].as_f64().is_some_and(|c| c < 0.10),
        "{e}"
    );
    assert!(e["skippedBecause"].is_null(), "{e}");
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor
            .lines()
            .any(|l| l.starts_with("ok   prices") && l.ends_with("prices.json")),
        "{doctor}"
    );

    // A bad file: every command that prices says where and why, and nothing runs.
    std::fs::write(
        &prices,
        "{\n  \"models\": {\"claude-opus-4-8\": {\"input\": -1, \"output\": 2.5}}\n}\n",
    )
    .unwrap();
    for args in [&["doctor"][..], &["tick"], &["session", &sid]] {
        let o = app.run(args);
        let err =
            String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("prices.json") && err.contains("line 2") && err.contains("0 or more"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(app.pending().len(), 1, "the entry still waits");
    assert!(!resumed(&app), "nothing ran");
}

#[test]
fn the_daily_budget_stops_the_third_of_three_runs_until_the_next_day() {
    let app = capped_app("0");
    // Our estimate is made nothing (the price is ours to set), so what stops the third
    // run is what the first two cost by Claude Code's own figures: $0.0283 each.
    std::fs::write(
        app.data_dir().join("prices.json"),
        r#"{"models": {"claude-opus-4-8": {"input": 0, "output": 0}}}"#,
    )
    .unwrap();
    let set = app.ok(&["budget", "set", "--daily-usd", "0.05", "--time-zone", "UTC"]);
    assert!(
        set.contains("$0.00 spent today") && set.contains("of $0.05 a day"),
        "{set}"
    );
    let mut sessions = Vec::new();
    for n in 1..=3 {
        let sid = app.claude(&format!("job {n} SAY_DONE"))["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        app.ok(&["tick", "--quiet-period", "0"]);
        sessions.push(sid);
    }
    let runs = app.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    let ran: Vec<&str> = runs
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ran, [sessions[0].as_str(), sessions[1].as_str()]);

    let pending = app.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let reason = pending[0]["waiting"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("daily budget: $0.0566 spent today of $0.05")
            && reason.contains("waits for the next day"),
        "{reason}"
    );
    let tomorrow = time::OffsetDateTime::now_utc().date().next_day().unwrap();
    assert_eq!(
        pending[0]["dueAt"].as_str(),
        Some(format!("{tomorrow}T00:00:00+0000").as_str()),
        "due at the next midnight in the budget's zone"
    );
    let session = app.ok(&["session", &sessions[2]]);
    assert!(session.contains("waiting: daily budget"), "{session}");
    let status = app.json(&["status"]);
    assert!(
        status["budget"]["spentTodayUsd"]
            .as_f64()
            .is_some_and(|s| s > 0.05),
        "{status}"
    );

    // The spend, summed: by hook, and by model.
    let by_hook = app.json(&["runs", "--summary", "--by", "hook"]);
    let row = &by_hook[0];
    assert_eq!(
        (row["key"].as_str(), row["runs"].as_u64()),
        (Some("post-task"), Some(2))
    );
    let spent: f64 = runs.iter().map(|r| r["costUsd"].as_f64().unwrap()).sum();
    assert!(
        (row["costUsd"].as_f64().unwrap() - spent).abs() < 1e-9,
        "{row}"
    );
    assert_eq!(row["tokens"]["cacheRead"], 60_000);
    let by_model = app.json(&["runs", "--summary", "--by", "model"]);
    assert_eq!(by_model[0]["key"], "claude-opus-4-8", "{by_model}");
    let table = app.ok(&["runs", "--summary", "--by", "day", "--since", "2026-01-01"]);
    assert!(
        table.contains(&time::OffsetDateTime::now_utc().date().to_string()),
        "{table}"
    );

    // A bigger budget wakes what waited for the old one: the third one goes.
    let set = app.ok(&["budget", "set", "--daily-usd", "1", "--time-zone", "UTC"]);
    assert!(
        set.contains("1 follow-up(s) that waited for the budget are due again"),
        "{set}"
    );
    app.ok(&["tick", "--quiet-period", "0"]);
    let runs = app.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[2]["sessionId"], sessions[2].as_str());
    assert!(app.pending().is_empty());
}

#[test]
fn prices_lists_the_table_and_where_each_price_comes_from() {
    let app = App::fake();
    app.ok(&["init"]);
    let v = app.json(&["prices"]);
    let model = |id: &str| {
        v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {v}"))
    };
    // Claude Code 2.1.332's default model, at its catalogue's price.
    let opus = model("claude-opus-5-5");
    assert_eq!(
        (
            opus["input"].as_f64(),
            opus["output"].as_f64(),
            opus["cacheRead"].as_f64()
        ),
        (Some(4.0), Some(20.0), Some(0.2))
    );
    assert_eq!(opus["source"], "built in");
    assert_eq!(v["aliases"]["opus"], "claude-opus-5-5");
    assert_eq!(v["taken"], "2026-12-05");
    // The newest Sol of Codex 0.171.0's catalogue, at OpenAI's price, its cache reads at
    // a twentieth of its input price.
    let sol = model("gpt-6.2-sol");
    assert_eq!(
        (
            sol["input"].as_f64(),
            sol["output"].as_f64(),
            sol["cacheRead"].as_f64()
        ),
        (Some(2.0), Some(10.0), Some(0.1))
    );
    std::fs::write(
        app.data_dir().join("prices.json"),
        r#"{"models": {"my-gateway-model": {"input": 2, "output": 8}}}"#,
    )
    .unwrap();
    let v = app.json(&["prices"]);
    let mine = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "my-gateway-model")
        .cloned()
        .unwrap();
    assert_eq!(mine["source"], "prices.json");
    let text = app.ok(&["prices"]);
    assert!(
        text.contains("claude-opus-5-5") && text.contains("opus → claude-opus-5-5"),
        "{text}"
    );
    // doctor says which Claude Code it found, and whether it is a tested one.
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor.contains("tested range") || doctor.contains("tested,") || doctor.contains("tested:"),
        "{doctor}"
    );
}

#[test]
fn a_model_the_table_lacks_is_priced_from_two_of_its_runs() {
    let mut app = App::fake();
    // A claude whose runs report, as Claude Code does, their usage and what it cost at
    // $2 input and $8 output a million (cache writes 1.25×, reads 0.1×), each run another
    // mix of tokens.
    let count = app.env.dir.path().join("count");
    let script = app.env.dir.path().join("claude-priced");
    hooks_testkit::write_script(
        &script,
        &format!(
            r#"#!/bin/sh
c='{count}'; n=$(cat "$c" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$c"
cat > /dev/null
i=$((100*n)); w=$((20000/n)); r=$((50000*n)); o=$((500*n*n))
cost=$(awk -v i=$i -v w=$w -v r=$r -v o=$o 'BEGIN{{printf "%.9f", (i*2 + w*2.5 + r*0.2 + o*8)/1e6}}')
printf '{{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"total_cost_usd":%s,"session_id":"%s","usage":{{"input_tokens":%s,"cache_creation_input_tokens":%s,"cache_read_input_tokens":%s,"output_tokens":%s}}}}\n' "$cost" "$3" $i $w $r $o
"#,
            count = count.display()
        ),
    );
    app.claude = script;
    app.ok(&["init"]);
    app.post_task_at_once();
    let queue = |session: &str| {
        // The transcript's model is claude-x, which no table prices.
        let t = app.transcript(session, &app.proj, 1000);
        app.ok(&[
            "notify",
            "--session",
            session,
            "--cwd",
            app.proj.to_str().unwrap(),
            "--transcript",
            t.to_str().unwrap(),
        ]);
    };
    for s in ["s-learn-1", "s-learn-2"] {
        queue(s);
        app.ok(&["tick", "--quiet-period", "0"]);
    }
    assert_eq!(app.runs().len(), 2);
    let v = app.json(&["prices"]);
    let learned = &v["learned"][0];
    assert_eq!(learned["model"], "claude-x", "{v}");
    assert_eq!(
        (
            learned["input"].as_f64(),
            learned["output"].as_f64(),
            learned["runs"].as_u64()
        ),
        (Some(2.0), Some(8.0), Some(2)),
        "{v}"
    );
    assert!(app.ok(&["prices"]).contains("learned from 2 runs"));

    // A capped follow-up of that model is now estimated, and runs.
    app.ok(&["hooks", "update", "post-task", "--max-cost-usd", "5"]);
    queue("s-learn-3");
    let session = app.json(&["session", "s-learn-3"]);
    let e = &session["estimates"][0];
    assert!(
        e["text"].as_str().is_some_and(|t| t
            .contains("priced from what the agent reported for 2 of its runs ($2/$8 a million)")),
        "{e}"
    );
    assert!(e["skippedBecause"].is_null(), "{e}");
    app.ok(&["tick", "--quiet-period", "0"]);
    assert_eq!(app.last_status("post-task"), "ok");
    assert_eq!(app.runs().len(), 3);
}
