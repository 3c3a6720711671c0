//! The Codex runner against the real Codex CLI (the pinned release) and a loopback mock of
//! the Responses API: a conversation is resumed, the same thread, and its turn recorded.

use std::time::Duration;

use hooks_core::ports::{RunRequest, Runner, RunnerError};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::{HookId, SessionId, Status};
use hooks_runner_codex::{CodexConfig, CodexRunner, rollout_of};
use hooks_testkit::codex::{CodexEnv, MockResponses, codex_bin};

fn runner(env: &CodexEnv) -> CodexRunner {
    CodexRunner::new(CodexConfig {
        program: codex_bin(),
        timeout: Duration::from_secs(60),
        codex_home: Some(env.codex_home()),
        env: env.vars(),
        ..CodexConfig::default()
    })
}

fn request(env: &CodexEnv, thread: &str, body: &str, options: RunOptions) -> RunRequest {
    RunRequest::new(
        HookId::parse("post-task").unwrap(),
        SessionId::parse(thread).unwrap(),
        env.proj.to_string_lossy().into_owned(),
        Prompt::new(body.to_owned(), options),
    )
}

#[tokio::test]
async fn a_conversation_is_resumed_in_the_same_thread_and_its_turn_recorded() {
    let api = MockResponses::start();
    let env = CodexEnv::new(&api);
    let thread = env.new_conversation("build the feature SAY_DONE");
    let rollout = env.rollout(&thread).expect("the thread's rollout");
    let lines_before = std::fs::read_to_string(&rollout).unwrap().lines().count();
    let r = runner(&env);
    let run = r
        .start(&request(
            &env,
            &thread,
            "tidy up, then SAY_COMPLETED",
            RunOptions::default(),
        ))
        .await
        .expect("started");
    assert!(run.process().is_some(), "the run's process is named");
    let o = run.wait().await;
    assert_eq!(o.status, Some(Status::Ok), "{o:?}");
    assert_eq!(o.completed, Some(true), "{o:?}");
    assert_eq!(
        o.session_id.as_deref(),
        Some(thread.as_str()),
        "the same thread"
    );
    assert!(
        o.result_text
            .as_deref()
            .is_some_and(|t| t.ends_with("COMPLETED")),
        "{o:?}"
    );
    let u = o.usage.expect("usage");
    // The mock reports 1000 input (200 cached) and 50 output tokens a request: the turn's
    // own, not the thread's so far.
    assert_eq!(
        (u.input_tokens, u.cache_read_input_tokens, u.output_tokens),
        (Some(800), Some(200), Some(50)),
        "{u:?}"
    );
    assert!(
        api.saw("tidy up, then SAY_COMPLETED"),
        "the prompt reached the model"
    );
    // The rollout grew; no other thread was made.
    assert_eq!(
        rollout_of(&env.codex_home(), &thread),
        Some(rollout.clone())
    );
    assert!(std::fs::read_to_string(&rollout).unwrap().lines().count() > lines_before);
}

#[tokio::test]
async fn a_rate_limit_is_reported_as_a_429_and_options_codex_lacks_are_refused() {
    let api = MockResponses::start();
    let env = CodexEnv::new(&api);
    let thread = env.new_conversation("build SAY_DONE");
    api.set_rate_limited(true);
    let r = runner(&env);
    let o = r
        .start(&request(&env, &thread, "go on", RunOptions::default()))
        .await
        .expect("started")
        .wait()
        .await;
    assert_eq!(o.api_error_status, Some(429), "{o:?}");
    assert!(o.status.as_ref().is_some_and(|s| !s.is_ok()), "{o:?}");
    // A tool list Codex cannot take: refused before anything starts, naming the field.
    let tools = {
        let mut o = RunOptions::default();
        o.allowed_tools = vec!["Read".into()];
        o
    };
    match r.start(&request(&env, &thread, "go on", tools)).await {
        Err(RunnerError::Invalid(e)) => assert_eq!(e.field, "allowedTools"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an option Codex lacks was taken"),
    }
}
