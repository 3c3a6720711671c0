//! A rollout the real Codex CLI wrote gives the facts a Claude Code transcript gives.

use hooks_testkit::codex::{CodexEnv, MockResponses};

#[test]
fn a_codex_rollout_gives_the_folder_model_context_and_last_reply() {
    let api = MockResponses::start();
    api.set_usage(4321, 1000, 77);
    let env = CodexEnv::new(&api);
    let thread = env.new_conversation("build the feature SAY_DONE");
    let rollout = env.rollout(&thread).expect("its rollout");
    let facts = hooks_meta::transcript::read_facts(&rollout).expect("facts");
    assert_eq!(
        facts.cwd.as_deref(),
        Some(env.proj.to_str().unwrap()),
        "the folder the conversation started in"
    );
    assert_eq!(facts.model.as_deref(), Some("gpt-5.5"));
    assert_eq!(facts.context_tokens, Some(4321), "the last request's input");
    assert!(
        facts
            .last_assistant_text
            .as_deref()
            .is_some_and(|t| t.starts_with("CODEX REPLY") && t.ends_with("DONE")),
        "{facts:?}"
    );
    assert!(facts.last_reply_at.is_some());
    assert!(!facts.subagent && !facts.ends_in_error);
}

/// A Codex turn refused by a plan's usage limit (measured on 0.171.0: no `Stop` hook, a
/// `task_complete` with `error.codex_error_info: "usage_limit_exceeded"`, and a
/// `token_count` whose `rate_limits` window is at 100 % with its `resets_at`): the rollout
/// ends in a rate-limit failure that resets at that very second. The person then goes on
/// in the thread: it no longer ends in the failure, and it went on after it.
#[test]
fn a_codex_rollout_at_its_usage_limit_says_when_the_limit_resets() {
    let api = MockResponses::start();
    let env = CodexEnv::new(&api);
    let reset = time::OffsetDateTime::now_utc().unix_timestamp() + 3 * 3600 + 17;
    api.set_usage_limited(Some(reset));
    let thread = env.new_conversation("build the feature");
    let rollout = env.rollout(&thread).expect("its rollout");
    let facts = hooks_meta::transcript::read_facts(&rollout).expect("facts");
    assert!(facts.ends_in_error, "{facts:?}");
    assert_eq!(facts.failed_kind.as_deref(), Some("rate_limit"));
    assert_eq!(
        facts.failed_resets_at.map(|t| t.unix_timestamp()),
        Some(reset),
        "the second the rollout records, not the minute the message shows"
    );
    let failed = facts.failed_at.expect("when it failed");
    api.set_usage_limited(None);
    env.resume(&thread, "go on");
    let after = hooks_meta::transcript::read_facts(&rollout).expect("facts");
    assert!(!after.ends_in_error, "{after:?}");
    assert!(after.went_on_after(failed), "{after:?}");
    assert_eq!(after.failed_resets_at, None);
}

/// A plain `429` (an API key's rate limit) is a rate limit that says no reset: the wait
/// is then a backoff.
#[test]
fn a_codex_rollout_refused_by_a_plain_429_is_a_rate_limit_with_no_reset() {
    let api = MockResponses::start();
    let env = CodexEnv::new(&api);
    api.set_rate_limited(true);
    let thread = env.new_conversation("build the feature");
    let facts =
        hooks_meta::transcript::read_facts(&env.rollout(&thread).expect("its rollout")).unwrap();
    assert!(facts.ends_in_error, "{facts:?}");
    assert_eq!(facts.failed_kind.as_deref(), Some("rate_limit"));
    assert_eq!(facts.failed_resets_at, None);
}
