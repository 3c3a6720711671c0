//! Transcripts written by this project for the cases the real ones don't show.

use std::io::Write;
use std::path::{Path, PathBuf};

use hooks_meta::{read_facts, read_facts_counted};
use serde_json::json;

fn assistant(id: &str, text: &str, usage: (u64, u64, u64), sidechain: bool) -> String {
    json!({"type": "assistant", "uuid": format!("u-{id}-{text}"), "isSidechain": sidechain, "cwd": "/work/proj",
        "sessionId": "s", "message": {"id": id, "model": "claude-x", "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": usage.0, "cache_creation_input_tokens": usage.1, "cache_read_input_tokens": usage.2, "output_tokens": 3}}})
    .to_string()
}

fn user(text: &str) -> String {
    json!({"type": "user", "isSidechain": false, "cwd": "/work/proj", "message": {"role": "user", "content": text}}).to_string()
}

fn write(dir: &Path, name: &str, lines: &[String], tail: &str) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.write_all(tail.as_bytes()).unwrap();
    p
}

#[test]
fn a_partial_last_line_is_passed_over() {
    let d = tempfile::tempdir().unwrap();
    let full = assistant("m2", "half", (9, 9, 9), false);
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            user("hi"),
            assistant("m1", "all done\nDONE", (10, 20, 30), false),
        ],
        &full[..full.len() / 2],
    );
    let f = read_facts(&p).unwrap();
    assert_eq!(f.context_tokens, Some(60));
    assert_eq!(f.last_assistant_text.as_deref(), Some("all done\nDONE"));
}

#[test]
fn synthetic_api_errors_at_the_end_are_not_the_context() {
    let d = tempfile::tempdir().unwrap();
    let synthetic = json!({"type": "assistant", "isSidechain": false, "isApiErrorMessage": true, "error": "authentication_failed",
        "message": {"id": "x", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error"}],
        "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}).to_string();
    let model_only = json!({"type": "assistant", "isSidechain": false,
        "message": {"id": "y", "model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}],
        "usage": {"input_tokens": 0}}}).to_string();
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            assistant("m1", "real", (1000, 200, 30), false),
            synthetic,
            model_only,
            String::new(),
            "garbage {".into(),
        ],
        "",
    );
    let f = read_facts(&p).unwrap();
    assert_eq!(f.context_tokens, Some(1230));
    assert_eq!(f.last_assistant_text.as_deref(), Some("real"));
    assert!(
        f.ends_in_error,
        "the API error is the last word, not the synthetic line after it"
    );
}

fn at(line: String, stamp: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
    v["timestamp"] = json!(stamp);
    v.to_string()
}

#[test]
fn a_turn_answered_after_an_api_error_means_the_conversation_went_on() {
    let d = tempfile::tempdir().unwrap();
    let error = json!({"type": "assistant", "isSidechain": false, "isApiErrorMessage": true, "error": "rate_limit",
        "timestamp": "2026-12-04T10:00:05.120Z",
        "message": {"id": "e", "model": "<synthetic>", "content": [{"type": "text", "text": "You've hit your limit"}]}}).to_string();
    let before = at(
        assistant("m1", "first", (10, 0, 0), false),
        "2026-12-04T10:00:01.000Z",
    );
    let failed = hooks_core::stamp::parse("2026-12-04T10:00:05+0000").unwrap();

    let stopped = write(
        d.path(),
        "a.jsonl",
        &[user("go"), before.clone(), user("more"), error.clone()],
        "",
    );
    let f = read_facts(&stopped).unwrap();
    assert!(f.ends_in_error);
    assert!(!f.went_on_after(failed), "{f:?}");

    // `/exit` after the failure writes user lines, no reply: still stopped.
    let exit = json!({"type": "user", "isMeta": true, "message": {"role": "user", "content": "<command-name>/exit</command-name>"}}).to_string();
    let exited = write(
        d.path(),
        "b.jsonl",
        &[
            user("go"),
            before.clone(),
            user("more"),
            error.clone(),
            exit,
        ],
        "",
    );
    assert!(!read_facts(&exited).unwrap().went_on_after(failed));

    // "try again", answered: it went on.
    let again = at(
        assistant("m2", "done now", (20, 0, 0), false),
        "2026-12-04T10:01:00.000Z",
    );
    let went_on = write(
        d.path(),
        "c.jsonl",
        &[
            user("go"),
            before.clone(),
            user("more"),
            error.clone(),
            user("try again"),
            again,
        ],
        "",
    );
    let f = read_facts(&went_on).unwrap();
    assert!(!f.ends_in_error);
    assert!(f.went_on_after(failed), "{f:?}");

    // Tried again and refused again: stopped by the newer failure.
    let refused_again = write(
        d.path(),
        "d.jsonl",
        &[
            user("go"),
            before.clone(),
            user("more"),
            error.clone(),
            user("try again"),
            error,
        ],
        "",
    );
    assert!(!read_facts(&refused_again).unwrap().went_on_after(failed));

    // A failure that left no error line: only a reply newer than the failure counts.
    let quiet = write(d.path(), "e.jsonl", &[user("go"), before], "");
    assert!(!read_facts(&quiet).unwrap().went_on_after(failed));
}

#[test]
fn after_a_compact_boundary_the_reduced_context_counts() {
    let d = tempfile::tempdir().unwrap();
    let boundary = json!({"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto", "preTokens": 150000}}).to_string();
    let summary = json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": "summary"}}).to_string();
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            assistant("m1", "big", (5, 1000, 149_000), false),
            boundary,
            summary,
            assistant("m2", "small", (5, 4000, 0), false),
        ],
        "",
    );
    assert_eq!(read_facts(&p).unwrap().context_tokens, Some(4005));
}

#[test]
fn sidechain_lines_at_the_end_of_a_main_file_are_skipped() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            user("go"),
            assistant("m1", "main says\nDONE", (1, 2, 3), false),
            assistant("side", "sub says", (100, 200, 300), true),
        ],
        "",
    );
    let f = read_facts(&p).unwrap();
    assert!(
        !f.subagent,
        "a main file with some sidechain lines is not a subagent's"
    );
    assert_eq!(
        (f.context_tokens, f.last_assistant_text.as_deref()),
        (Some(6), Some("main says\nDONE"))
    );
}

#[test]
fn one_response_split_over_lines_is_one_message() {
    let d = tempfile::tempdir().unwrap();
    let thinking = json!({"type": "assistant", "isSidechain": false, "message": {"id": "m2", "model": "claude-x",
        "content": [{"type": "thinking", "thinking": "hmm"}], "usage": {"input_tokens": 7, "cache_read_input_tokens": 70}}}).to_string();
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            assistant("m1", "earlier", (1, 1, 1), false),
            user("next"),
            thinking,
            assistant("m2", "part one", (7, 0, 70), false),
            assistant("m2", "part two\nDONE", (7, 0, 70), false),
            json!({"type": "unknown-kind", "x": 1}).to_string(),
        ],
        "",
    );
    let f = read_facts(&p).unwrap();
    assert_eq!(
        f.last_assistant_text.as_deref(),
        Some("part one\npart two\nDONE")
    );
    assert_eq!(f.context_tokens, Some(77));
}

#[test]
fn the_tail_read_costs_the_same_for_a_large_transcript() {
    let d = tempfile::tempdir().unwrap();
    let filler = user(&"x".repeat(4000));
    let ending = [assistant("last", "end\nDONE", (1, 2, 3), false)];
    let small = write(
        d.path(),
        "small.jsonl",
        &[filler.clone()]
            .iter()
            .cloned()
            .chain(ending.iter().cloned())
            .collect::<Vec<_>>(),
        "",
    );
    let mut big_lines: Vec<String> = std::iter::repeat_n(filler, 12_000).collect(); // ~48 MB
    big_lines.extend(ending.iter().cloned());
    let big = write(d.path(), "big.jsonl", &big_lines, "");
    assert!(std::fs::metadata(&big).unwrap().len() > 40_000_000);
    let (fs, read_small) = read_facts_counted(&small).unwrap();
    let (fb, read_big) = read_facts_counted(&big).unwrap();
    assert_eq!(fs.context_tokens, fb.context_tokens);
    assert_eq!(fb.last_assistant_text.as_deref(), Some("end\nDONE"));
    assert!(
        read_big <= 64 * 1024,
        "the big file needed {read_big} bytes from its end"
    );
    assert!(read_small <= 64 * 1024);
    assert_eq!(fb.cwd.as_deref(), Some("/work/proj"));
}

#[test]
fn a_huge_last_line_is_read_within_the_budget() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            assistant("m1", "before", (1, 1, 1), false),
            user(&"y".repeat(3_000_000)),
        ],
        "",
    );
    let (f, read) = read_facts_counted(&p).unwrap();
    assert_eq!(f.context_tokens, Some(3));
    assert!(read < 3_200_000);
}

/// The agent may `cd` anywhere (into `node_modules/evil-pkg`), and Claude Code writes the
/// shell's folder on every later line: the conversation's folder is the one it started in.
#[test]
fn the_folder_is_where_the_conversation_started_not_where_the_agent_cd_d() {
    let d = tempfile::tempdir().unwrap();
    let cd = |line: String| line.replace("/work/proj", "/work/proj/node_modules/evil-pkg");
    let p = write(
        d.path(),
        "s.jsonl",
        &[
            json!({"type": "file-history-snapshot", "messageId": "x"}).to_string(),
            user("start"),
            cd(assistant(
                "m1",
                "cd node_modules/evil-pkg",
                (1, 1, 1),
                false,
            )),
            cd(user("go on")),
            cd(assistant("m2", "all done\nDONE", (10, 20, 30), false)),
        ],
        "",
    );
    let f = read_facts(&p).unwrap();
    assert_eq!(f.cwd.as_deref(), Some("/work/proj"));
    assert_eq!(f.last_assistant_text.as_deref(), Some("all done\nDONE"));

    // A first prompt longer than the head that is read still gives its folder.
    let long = json!({"type": "user", "isSidechain": false, "cwd": "/work/long", "message": {"role": "user", "content": "x".repeat(200 * 1024)}}).to_string();
    let p = write(
        d.path(),
        "long.jsonl",
        &[long, cd(assistant("m1", "DONE", (1, 1, 1), false))],
        "",
    );
    assert_eq!(read_facts(&p).unwrap().cwd.as_deref(), Some("/work/long"));
    // 2.1.332 writes `cwd` after the message: a first prompt over the head still gives
    // it (not a folder guessed from the project folder's name, whose encoding collides).
    let after = format!(
        "{{\"type\":\"user\",\"isSidechain\":false,\"message\":{{\"role\":\"user\",\"content\":\"{}\"}},\"cwd\":\"/work/after\"}}",
        "y".repeat(200 * 1024)
    );
    let p = write(
        d.path(),
        "after.jsonl",
        &[after, cd(assistant("m1", "DONE", (1, 1, 1), false))],
        "",
    );
    assert_eq!(read_facts(&p).unwrap().cwd.as_deref(), Some("/work/after"));
}

fn tool_result(id: &str) -> String {
    json!({"type": "user", "isSidechain": false, "cwd": "/work/proj", "message": {"role": "user",
        "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]}})
    .to_string()
}

#[test]
fn a_turn_that_answered_a_delivered_follow_up_names_its_hook() {
    let d = tempfile::tempdir().unwrap();
    let delivered = hooks_core::live::delivered_message("post-task", "Tidy up.\nEnd with DONE.");
    // As the inbox writes it: a meta line of a peer's.
    let peer = json!({"type": "user", "isSidechain": false, "isMeta": true, "cwd": "/work/proj",
        "origin": {"kind": "peer"}, "message": {"role": "user", "content": delivered}})
    .to_string();
    let person = || user("build it");
    let reply = |id: &str| assistant(id, "tidied\nDONE", (1, 2, 3), false);
    let cases: [(&str, Vec<String>, Option<&str>); 4] = [
        // Across its tool calls, back to the prompt.
        (
            "delivered",
            vec![
                person(),
                reply("m1"),
                peer.clone(),
                reply("m2"),
                tool_result("t1"),
                tool_result("t2"),
                reply("m3"),
            ],
            Some("post-task"),
        ),
        (
            "the person's",
            vec![peer.clone(), reply("m1"), person(), reply("m2")],
            None,
        ),
        // The marker must be whole: a person who names a hook is still the person.
        (
            "quoted",
            vec![user("what is [hooks-app follow-up: x?"), reply("m1")],
            None,
        ),
        ("no prompt", vec![reply("m1")], None),
    ];
    for (name, lines, want) in cases {
        let p = write(d.path(), &format!("{name}.jsonl"), &lines, "");
        let f = read_facts(&p).unwrap();
        assert_eq!(f.follow_up_of.as_deref(), want, "{name}");
        assert_eq!(
            f.last_assistant_text.as_deref(),
            Some("tidied\nDONE"),
            "{name}"
        );
    }
}
