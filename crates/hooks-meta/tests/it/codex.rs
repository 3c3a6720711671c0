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
