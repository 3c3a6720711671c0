//! With the real CLI (the pinned version, installed from npm on first use).

use std::time::Duration;

use hooks_core::Status;
use hooks_core::ports::RunnerError;
use hooks_core::prompt::{RunOptions, parse_prompt};
use hooks_testkit::{ClaudeEnv, MockApi, MockMode, claude_bin, wait_until};

use super::*;

fn lines(p: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_successful_resume_appends_to_the_same_conversation() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "build it SAY_DONE");
    let transcript = env.transcript(&sid).expect("transcript written");
    let before = lines(&transcript).len();
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(120));

    let o = runner
        .run(&request(
            &sid,
            &work,
            "tidy up SAY_COMPLETED",
            RunOptions::default(),
        ))
        .await
        .unwrap();
    assert_eq!(o.status, Some(Status::Ok), "{o:?}");
    assert_eq!((o.exit_code, o.completed), (Some(0), Some(true)));
    assert_eq!(
        o.session_id.as_deref(),
        Some(sid.as_str()),
        "resume keeps the session id"
    );
    assert_eq!(o.num_turns, Some(1));
    assert!(o.cost_usd.is_some_and(|c| c > 0.0));
    let u = o.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens.is_some(),
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens
        ),
        (true, Some(2000), Some(30_000))
    );
    let after = lines(&transcript);
    assert!(after.len() > before, "the transcript grew");
    assert!(
        after[before..]
            .iter()
            .any(|l| l.contains("tidy up SAY_COMPLETED")),
        "the follow-up turn is in the same file"
    );
    assert_eq!(env.transcript(&sid), Some(transcript), "no new file");

    let o2 = runner
        .run(&request(
            &sid,
            &work,
            "once more, no marker",
            RunOptions::default(),
        ))
        .await
        .unwrap();
    assert_eq!(
        (o2.status, o2.completed),
        (Some(Status::Ok), Some(false)),
        "completed only when the reply ends with COMPLETED"
    );
    assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_session_and_the_wrong_cwd_fail_with_claudes_message() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let elsewhere = env.workdir("elsewhere");
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(120));
    let unknown = "00000000-0000-4000-8000-000000000000";
    let o = runner
        .run(&request(unknown, &work, "hi", RunOptions::default()))
        .await
        .unwrap();
    assert_eq!(
        o.status,
        Some(Status::error(format!(
            "No conversation found with session ID: {unknown}"
        )))
    );
    assert_eq!(
        (o.exit_code, o.completed, o.cost_usd),
        (Some(1), None, None)
    );

    let sid = env.new_conversation(&work, "hello");
    let o = runner
        .run(&request(&sid, &elsewhere, "hi", RunOptions::default()))
        .await
        .unwrap();
    if hooks_testkit::claude_at_least("2.1.223") {
        // From 2.1.223 on, resume finds a conversation of another project too.
        assert_eq!(o.status, Some(Status::Ok), "{o:?}");
    } else {
        // Up to 2.1.222 it looks only in the current project: the app resumes in the
        // conversation's own folder for that.
        assert_eq!(
            o.status,
            Some(Status::error(format!(
                "No conversation found with session ID: {sid}"
            )))
        );
    }
    assert!(
        wait_until(5, || env.leftovers().is_empty()),
        "left running: {:?}",
        env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn max_turns_from_frontmatter_is_reached() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "hello");
    let prompt = parse_prompt(
        "---\nname: x\nmax-turns: 1\nmodel: claude-hooks-test-model\n---\nUSE_TOOL please",
    )
    .unwrap();
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(120));
    let seen_before = api.bodies().len();
    let o = runner
        .run(&request(&sid, &work, &prompt.body, prompt.options))
        .await
        .unwrap();
    assert_eq!(
        o.status,
        Some(Status::error(
            "error_max_turns: Reached maximum number of turns (1)"
        )),
        "{o:?}"
    );
    assert_eq!(o.exit_code, Some(1));
    let models: Vec<String> = api.bodies()[seen_before..]
        .iter()
        .filter_map(|b| b["model"].as_str().map(str::to_owned))
        .collect();
    assert!(
        models.iter().any(|m| m == "claude-hooks-test-model"),
        "--model from the frontmatter reached the API: {models:?}"
    );
    assert!(
        wait_until(5, || env.leftovers().is_empty()),
        "left running: {:?}",
        env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_credentials_is_an_error_not_a_success() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "hello");
    let mut cfg = runner_for(&env, &claude_bin(), Duration::from_secs(120))
        .config()
        .clone();
    cfg.env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
    cfg.env_remove.push("ANTHROPIC_API_KEY".into());
    let o = ClaudeRunner::new(cfg)
        .run(&request(&sid, &work, "hi", RunOptions::default()))
        .await
        .unwrap();
    assert_eq!(
        o.status,
        Some(Status::error("Not logged in · Please run /login")),
        "{o:?}"
    );
    assert_eq!(o.exit_code, Some(1));
    assert!(
        wait_until(5, || env.leftovers().is_empty()),
        "left running: {:?}",
        env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mock_that_never_answers_is_stopped_by_the_timeout() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "hello");
    api.set_mode(MockMode::Hang);
    let requests = api.requests();
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(4));
    let o = runner
        .run(&request(&sid, &work, "hi", RunOptions::default()))
        .await
        .unwrap();
    assert!(api.requests() > requests, "the run reached the mock");
    let status = o.status.unwrap().to_string();
    assert!(status.starts_with("error: timed out after 4s"), "{status}");
    assert!(
        wait_until(5, || env.leftovers().is_empty()),
        "left running: {:?}",
        env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flag_like_option_is_refused_before_anything_runs() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(60));
    let opts = {
        let mut o = RunOptions::default();
        o.model = Some("--dangerously-skip-permissions".into());
        o
    };
    let e = runner
        .run(&request("abc", &work, "hi", opts))
        .await
        .unwrap_err();
    assert!(matches!(e, RunnerError::Invalid(_)), "{e:?}");
    assert_eq!(api.requests(), 0, "nothing ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_past_its_budget_is_stopped_by_claude_and_said_so() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "hello");
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(120));
    // The mock's reply costs about $0.03; the cap is a hundredth of a cent.
    let opts = {
        let mut o = RunOptions::default();
        o.max_budget = hooks_core::CostCap::parse("0.0001").unwrap();
        o
    };
    let o = runner
        .run(&request(&sid, &work, "tidy up", opts))
        .await
        .unwrap();
    assert_eq!(
        o.status,
        Some(Status::error(
            "over budget: Reached maximum budget ($0.0001)"
        )),
        "{o:?}"
    );
    assert!(
        o.cost_usd.is_some_and(|c| c > 0.0001),
        "what it cost is still recorded: {o:?}"
    );
}

/// The price table checked against an oracle nobody here wrote: Claude Code computes
/// `total_cost_usd` itself. For each model the CLI under test knows (and its aliases, as it
/// resolves them), named in a prompt's frontmatter, the table applied to the usage the CLI
/// reports must give Claude Code's own figure to within 1 %. The usage is chosen so that
/// each of input, cache writes, cache reads and output is well over 1 % of the total, and
/// the prompt stays under 100k tokens (above that, claude-haiku-5-5 costs five times more).
///
/// The table follows the newest pinned CLI. 2.1.197 priced claude-sonnet-5 at $3/$15 (now
/// $2/$10) and resolved opus, sonnet and haiku to claude-opus-4-8, claude-sonnet-5 and
/// claude-haiku-4-5: on 2.1.197 those are checked against the prices 2.1.197 used. 2.1.332
/// reports the conversation's running total (every resume adds to it), so there a run's
/// cost is the step between two totals (the CLI is started by hand here, to read them);
/// and it runs a retired claude-opus-4-1 as claude-opus-5-5.
#[tokio::test(flavor = "multi_thread")]
async fn the_price_table_gives_claude_code_s_own_cost_for_every_family() {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("proj");
    let sid = env.new_conversation(&work, "hello");
    let runner = runner_for(&env, &claude_bin(), Duration::from_secs(120));
    // Under 200k in all: over a model's window the CLI would compact first (a second,
    // billed request).
    api.set_usage(10_000, 30_000, 50_000);
    api.set_output_tokens(2_000);
    let table = hooks_core::cost::PriceTable::builtin();
    let newest = hooks_testkit::claude_at_least("2.1.332");
    let standard = hooks_core::cost::Price::standard;
    // (model, the price that CLI uses when it is not the table's).
    let models: Vec<(&str, Option<hooks_core::cost::Price>)> = if newest {
        [
            "claude-opus-5-5",
            "claude-opus-5",
            "claude-opus-4-8",
            "claude-opus-4-5-20251101",
            "claude-sonnet-5-5",
            "claude-sonnet-5",
            "claude-sonnet-4-6",
            "claude-sonnet-4-5-20250929",
            "claude-haiku-5-5",
            "claude-haiku-4-5-20251001",
            "claude-3-5-haiku-20241022",
            "claude-fable-5-2",
            "claude-fable-5-1",
            "claude-mythos-5",
            "opus",
            "sonnet",
            "haiku",
            "fable",
        ]
        .into_iter()
        .map(|m| (m, None))
        .chain([(
            "claude-opus-4-1-20250805",
            table.lookup("claude-opus-5-5").map(|(_, p)| p),
        )])
        .collect()
    } else {
        vec![
            ("claude-opus-4-8", None),
            ("claude-opus-4-5-20251101", None),
            ("claude-sonnet-5", Some(standard(3.0, 15.0))),
            ("claude-sonnet-4-5-20250929", None),
            ("claude-sonnet-4-20250514", None),
            ("claude-haiku-4-5-20251001", None),
            ("claude-3-5-haiku-20241022", None),
            ("claude-mythos-5", None),
            ("opus", Some(standard(5.0, 25.0))),
            ("sonnet", Some(standard(3.0, 15.0))),
            ("haiku", Some(standard(1.0, 5.0))),
        ]
    };
    let _ = runner;
    let mut checked = Vec::new();
    // Where the CLI reports running totals, a first resume sets the total so far.
    let mut total = if newest {
        resume_by_hand(
            &env,
            &request(&sid, &work, "warm up", RunOptions::default()),
        )
        .0
    } else {
        0.0
    };
    for (model, then) in models {
        let prompt = parse_prompt(&format!("---\nname: x\nmodel: {model}\n---\ntidy up")).unwrap();
        let (reported, usage) =
            resume_by_hand(&env, &request(&sid, &work, &prompt.body, prompt.options));
        assert_eq!(usage.output_tokens, Some(2_000), "{model}");
        let theirs = if newest {
            reported - std::mem::replace(&mut total, reported)
        } else {
            reported
        };
        let (id, price) = table
            .lookup(model)
            .unwrap_or_else(|| panic!("no price for {model}"));
        let ours = then.unwrap_or(price).cost(&usage);
        assert!(
            (ours - theirs).abs() <= theirs * 0.01,
            "{model} ({id}{}): ours ${ours:.6}, Claude Code's ${theirs:.6}",
            if then.is_some() {
                ", as this CLI prices it"
            } else {
                ""
            }
        );
        checked.push(format!("{model} ({id}): ${theirs:.4}"));
    }
    eprintln!("oracle: {}", checked.join("; "));
}

/// Resumes as the runner does (its arguments, the prompt on stdin), and reads what Claude
/// Code itself reports: `total_cost_usd` and the run's `usage`.
fn resume_by_hand(
    env: &ClaudeEnv,
    req: &hooks_core::ports::RunRequest,
) -> (f64, hooks_core::Usage) {
    use std::io::Write;
    let mut cmd = std::process::Command::new(claude_bin());
    env.apply(&mut cmd);
    cmd.args(hooks_runner_claude::command_args(req, None))
        .current_dir(&req.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("claude");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.prompt.body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["is_error"], false, "{v}");
    let n = |k: &str| v["usage"][k].as_u64();
    (v["total_cost_usd"].as_f64().expect("total_cost_usd"), {
        let mut o = hooks_core::Usage::default();
        o.input_tokens = n("input_tokens");
        o.cache_creation_input_tokens = n("cache_creation_input_tokens");
        o.cache_read_input_tokens = n("cache_read_input_tokens");
        o.output_tokens = n("output_tokens");
        o
    })
}
