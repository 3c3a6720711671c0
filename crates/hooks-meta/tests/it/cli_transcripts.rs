//! Transcripts the pinned Claude Code CLI writes itself, against the project's own mock API,
//! read back: a conversation resumed and forked, a subagent's, an API error at the end.
//! The mock's usage figures are known, so the context tokens are too.

use std::path::{Path, PathBuf};

use hooks_meta::read_facts;
use hooks_testkit::{ClaudeEnv, MockApi};

/// input + cache creation + cache read of the mock's default usage.
const CONTEXT: u64 = 100 + 2000 + 30_000;

struct Cli {
    // Dropped after the env: the mock must outlive the CLI processes.
    env: ClaudeEnv,
    api: MockApi,
    proj: PathBuf,
}

fn cli() -> Cli {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let proj = env.workdir("proj");
    Cli { env, api, proj }
}

impl Cli {
    /// `claude -p` with `args`; its JSON result, asserting it exited with `code`.
    #[track_caller]
    fn run(&self, code: i32, args: &[&str]) -> serde_json::Value {
        let (got, v, err) = self.env.run(&self.proj, args);
        assert_eq!(got, code, "claude {args:?}: {v} {err}");
        v
    }
    fn transcript(&self, session: &str) -> PathBuf {
        self.env
            .transcript(session)
            .unwrap_or_else(|| panic!("no transcript of {session}"))
    }
}

fn canonical(p: &str) -> PathBuf {
    Path::new(p).canonicalize().unwrap()
}

#[test]
fn a_resumed_conversation_keeps_its_file_and_a_fork_gets_its_own() {
    let c = cli();
    let sid = c.env.new_conversation(&c.proj, "build it SAY_DONE");
    let path = c.transcript(&sid);
    let f = read_facts(&path).unwrap();
    assert!(!f.subagent);
    assert_eq!(f.context_tokens, Some(CONTEXT));
    assert!(
        f.last_assistant_text
            .as_deref()
            .is_some_and(|t| t.ends_with("\nDONE")),
        "{f:?}"
    );
    assert_eq!(
        canonical(f.cwd.as_deref().unwrap()),
        c.proj.canonicalize().unwrap()
    );

    // Resumed: the same file grows, and its last message is the new one.
    c.api.set_usage(7, 0, 40_000);
    let v = c.run(0, &["--resume", &sid, "--", "one more thing"]);
    assert_eq!(v["session_id"], sid.as_str());
    assert_eq!(c.transcript(&sid), path);
    let resumed = read_facts(&path).unwrap();
    assert_eq!(resumed.context_tokens, Some(40_007));
    assert!(
        resumed
            .last_assistant_text
            .as_deref()
            .is_some_and(|t| !t.ends_with("DONE")),
        "{resumed:?}"
    );

    // Forked: a new id and a file of its own that starts as a copy; the original is as it was.
    c.api.set_usage(1, 2, 3);
    let v = c.run(
        0,
        &[
            "--resume",
            &sid,
            "--fork-session",
            "--",
            "a side quest SAY_DONE",
        ],
    );
    let fork = v["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, sid);
    let fork_path = c.transcript(&fork);
    assert_ne!(fork_path, path);
    let forked = read_facts(&fork_path).unwrap();
    assert_eq!(forked.context_tokens, Some(6));
    assert!(!forked.subagent);
    assert!(
        forked
            .last_assistant_text
            .as_deref()
            .is_some_and(|t| t.ends_with("\nDONE"))
    );
    assert_eq!(read_facts(&path).unwrap().context_tokens, Some(40_007));
}

#[test]
fn a_subagents_transcript_is_known_as_one_by_its_path_and_its_lines() {
    let c = cli();
    c.api.set_final_line(Some("DONE"));
    let sid = c
        .env
        .new_conversation(&c.proj, "look around with a helper SPAWN_AGENT");
    let main = c.transcript(&sid);
    let subagents = main.with_extension("").join("subagents");
    let files: Vec<PathBuf> = std::fs::read_dir(&subagents)
        .unwrap_or_else(|e| panic!("{}: {e}", subagents.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one subagent transcript: {files:?}");
    let sub = read_facts(&files[0]).unwrap();
    assert!(sub.subagent, "{sub:?}");
    assert_eq!(sub.context_tokens, Some(CONTEXT));

    // The rule holds without the path: the same lines under a plain name.
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain.jsonl");
    std::fs::copy(&files[0], &plain).unwrap();
    assert!(read_facts(&plain).unwrap().subagent);

    // The conversation that started it is not one, and its last message is its own.
    let m = read_facts(&main).unwrap();
    assert!(!m.subagent, "{m:?}");
    assert!(
        m.last_assistant_text
            .as_deref()
            .is_some_and(|t| t.ends_with("\nDONE")),
        "{m:?}"
    );
}

#[test]
fn an_api_error_at_the_end_is_not_the_last_message() {
    let c = cli();
    let sid = c.env.new_conversation(&c.proj, "build it SAY_DONE");
    let path = c.transcript(&sid);
    let before = std::fs::read_to_string(&path).unwrap().lines().count();
    let v = c.run(1, &["--resume", &sid, "--", "API_ERROR please"]);
    assert_eq!(v["is_error"], true, "{v}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .skip(before)
            .any(|l| l.contains("\"isApiErrorMessage\":true")),
        "the CLI wrote its synthetic error message"
    );
    let f = read_facts(&path).unwrap();
    assert_eq!(f.context_tokens, Some(CONTEXT), "{f:?}");
    assert!(
        f.last_assistant_text
            .as_deref()
            .is_some_and(|t| t.ends_with("\nDONE")),
        "{f:?}"
    );
}
