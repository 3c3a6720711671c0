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
    assert_eq!(
        o.status,
        Some(Status::error(format!(
            "No conversation found with session ID: {sid}"
        )))
    );
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
    let opts = RunOptions {
        model: Some("--dangerously-skip-permissions".into()),
        ..RunOptions::default()
    };
    let e = runner
        .run(&request("abc", &work, "hi", opts))
        .await
        .unwrap_err();
    assert!(matches!(e, RunnerError::Invalid(_)), "{e:?}");
    assert_eq!(api.requests(), 0, "nothing ran");
}
