//! Conformance with outside material: the real third-party transcripts in the shared folder
//! beside the project (`$HOOKS_SHARED` or `../shared`, `fixtures/claude-transcripts/`), read
//! in place, against the expected values in its README. Run by `cargo xtask conformance`;
//! needs the `conformance` feature.

use std::path::PathBuf;

use hooks_meta::read_facts;
use serde_json::Value;

fn fixtures() -> PathBuf {
    let shared = std::env::var_os("HOOKS_SHARED").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    let p = shared.join("fixtures/claude-transcripts");
    assert!(
        p.is_dir(),
        "the real transcript fixtures are missing: expected {} (the shared folder beside the project, or set HOOKS_SHARED). \
         These tests cannot run without it.",
        p.display()
    );
    p
}

/// An independent, forward reading of the expected last assistant message's text: all text
/// blocks of the lines sharing the `message.id` of the line with `uuid`.
fn text_of_message_with_uuid(path: &PathBuf, uuid: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let target = lines
        .iter()
        .find(|l| l["uuid"] == uuid)
        .expect("the README's uuid is in the file");
    let id = &target["message"]["id"];
    let mut out = Vec::new();
    for l in lines
        .iter()
        .filter(|l| l["type"] == "assistant" && &l["message"]["id"] == id)
    {
        if let Some(blocks) = l["message"]["content"].as_array() {
            for b in blocks.iter().filter(|b| b["type"] == "text") {
                out.push(b["text"].as_str().unwrap().to_owned());
            }
        }
    }
    out.join("\n")
}

/// The folder the conversation started in: the `cwd` of the first line that has one, read
/// whole (on purpose: an independent reading).
fn first_cwd(path: &PathBuf) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["cwd"].as_str().map(str::to_owned))
}

#[test]
fn every_real_transcript_gives_its_expected_values() {
    let root = fixtures();
    let cases: [(&str, bool, u64, &str); 7] = [
        (
            "claude-code-log/projects/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl",
            false,
            23_954,
            "0a357e46-372d-4bd1-a896-bb9a7218ec78",
        ),
        (
            "claude-code-log/projects/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl",
            true,
            42_774,
            "250d2994-c612-418e-98a9-0c26c9c0d4ba",
        ),
        (
            "claude-code-log/projects/-src-experiments-claude_p/94604a7b-062f-4369-bdf0-da948381c3e5.jsonl",
            false,
            19_994,
            "a17a6cc6-ca38-4afc-b946-6ec5412139c9",
        ),
        (
            "claude-code-log/projects/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
            false,
            28_320,
            "8cb01e66-3ee6-4912-9e07-bd0d98771d4d",
        ),
        (
            "claude-code-log/projects/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl",
            true,
            28_742,
            "5f9c6c21-735f-41b8-8fcd-ad2dbd8936fe",
        ),
        (
            "claude-code-log/projects/-Users-dain-workspace-danieldemmel-me-next/agent-3ea04571.jsonl",
            true,
            1_366,
            "c4ef0c68-577f-4252-bd4f-2ff9f1224999",
        ),
        (
            "claude-code-viewer/projects/sample-project/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
            false,
            17_437,
            "549b3502-6e30-4fa5-869f-c998df26c3f0",
        ),
    ];
    for (rel, sidechain, tokens, uuid) in cases {
        let path = root.join(rel);
        let f = read_facts(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(f.subagent, sidechain, "{rel}: subagent");
        assert_eq!(f.context_tokens, Some(tokens), "{rel}: context tokens");
        assert_eq!(
            f.last_assistant_text.as_deref(),
            Some(text_of_message_with_uuid(&path, uuid).as_str()),
            "{rel}: last text"
        );
        assert_eq!(f.cwd, first_cwd(&path), "{rel}: cwd");
        assert!(f.last_change.is_some());
    }
}

#[test]
fn the_subagent_rule_holds_without_the_path() {
    // The legacy subagent file, copied under a main-session-like name: its lines still say
    // isSidechain, so it is still a subagent's.
    let root = fixtures();
    let src = root.join(
        "claude-code-log/projects/-Users-dain-workspace-danieldemmel-me-next/agent-3ea04571.jsonl",
    );
    let dir = tempfile::tempdir().unwrap();
    let dst = dir
        .path()
        .join("3ea04571-0000-0000-0000-000000000000.jsonl");
    std::fs::copy(src, &dst).unwrap();
    let f = read_facts(&dst).unwrap();
    assert!(f.subagent);
    assert_eq!(f.context_tokens, Some(1_366));
}
