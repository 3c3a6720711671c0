//! Facts about a session, over the store's session state.

use hooks_core::ports::SessionMeta;
use hooks_core::testing::InMemorySessions;
use hooks_core::*;
use hooks_meta::MetaStore;

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

#[tokio::test]
async fn facts_find_the_transcript_under_the_claude_home() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("claude");
    let proj = home.join("projects/-w-proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("s1.jsonl"),
        "{\"type\":\"assistant\",\"cwd\":\"/w/proj\",\"isSidechain\":false,\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"DONE\"}],\"usage\":{\"input_tokens\":5}}}\n",
    )
    .unwrap();
    let meta = MetaStore::new(InMemorySessions::new(), &home);
    let f = meta.facts(&sid("s1")).await.unwrap();
    let t = f.transcript.as_ref().expect("found by its id");
    assert_eq!(
        (t.context_tokens, t.cwd.as_deref()),
        (Some(5), Some("/w/proj"))
    );
    assert_eq!(
        f.cwd(),
        Some("/w/proj"),
        "the cwd comes from the transcript when none was remembered"
    );
    assert!(meta.facts(&sid("nope")).await.unwrap().transcript.is_none());
}
