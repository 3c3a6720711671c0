use std::sync::Arc;

use time::{Duration, OffsetDateTime};

use crate::decide::*;
use crate::live::*;
use crate::model::*;
use crate::ports::*;
use crate::prompt::*;
use crate::service::*;
use crate::testing::*;
use crate::{queue, stamp};

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_796_000_000).unwrap()
}
fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

#[track_caller]
fn check_refused<T: std::fmt::Debug>(r: Result<T, ValidationError>, field: &str, rule_part: &str) {
    let e = r.expect_err("should be refused");
    assert_eq!(e.field, field, "{e}");
    assert!(
        e.rule.contains(rule_part),
        "rule {:?} should mention {rule_part:?}",
        e.rule
    );
}

#[test]
fn session_ids() {
    for ok in [
        "a",
        "abc-DEF_123",
        "1d7339f3-45d6-4b43-8776-a0dfec0d0db9",
        &"x".repeat(128),
    ] {
        assert!(SessionId::parse(ok).is_ok(), "{ok} should be accepted");
    }
    for bad in [
        "",
        "-x",
        "a/b",
        "../etc",
        "a b",
        "ä",
        "a.b",
        &"x".repeat(129),
        "--help",
    ] {
        check_refused(SessionId::parse(bad), "sessionId", "1 to 128");
    }
}

#[test]
fn hook_ids() {
    for ok in ["post-task", "a", "x.y_z-1"] {
        assert!(HookId::parse(ok).is_ok(), "{ok}");
    }
    for bad in ["", "-a", ".a", "a/b", "a b", &"x".repeat(129)] {
        check_refused(HookId::parse(bad), "id", "1 to 128");
    }
}

#[test]
fn events() {
    assert_eq!(Event::parse("").unwrap(), Event::ConversationDone);
    assert_eq!(
        Event::parse(" conversation-done ").unwrap(),
        Event::ConversationDone
    );
    check_refused(Event::parse("commit"), "event", "conversation-done");
}

#[test]
fn deliveries() {
    assert_eq!(Delivery::parse("").unwrap(), Delivery::Auto);
    assert_eq!(Delivery::parse(" closed ").unwrap(), Delivery::Closed);
    for d in Delivery::ALL {
        assert_eq!(Delivery::parse(d.as_str()).unwrap(), d);
    }
    check_refused(Delivery::parse("open-only"), "deliver", "auto or closed");
}

#[test]
fn delays() {
    for (s, n) in [("0", 0), ("10", 10), ("86400", 86_400)] {
        assert_eq!(Delay::parse(s).unwrap().seconds(), n);
    }
    for bad in ["-1", "86401", "1.5", "ten", ""] {
        check_refused(Delay::parse(bad), "delaySeconds", "0 to 86400");
    }
}

#[test]
fn context_caps() {
    assert_eq!(ContextCap::parse("0").unwrap().tokens(), None);
    assert_eq!(ContextCap::parse("60").unwrap().tokens(), Some(60_000));
    check_refused(ContextCap::parse("-1"), "maxContextK", "≥ 0");
    check_refused(ContextCap::parse("x"), "maxContextK", "≥ 0");
}

#[test]
fn prompt_files() {
    let cases = [
        (
            ".claude/agents/hooks/post-task.md",
            ".claude/agents/hooks/post-task.md",
        ),
        ("/.claude/agents/hooks/a.md", ".claude/agents/hooks/a.md"),
        ("./.claude/agents/hooks/A.MD", ".claude/agents/hooks/A.MD"),
        (
            "/home/me/a-rather-long-project-name/.claude/agents/hooks/tidy.md",
            ".claude/agents/hooks/tidy.md",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(PromptFile::parse(input).unwrap().as_str(), want);
    }
    for (input, rule) in [
        (".claude/agents/hooks/../x.md", "'..'"),
        ("../../etc/passwd.md", "'..'"),
        (".claude/agents/hooks/a.txt", ".md"),
        (".claude/agents/hooks/.md", ".md"),
        (".claude/agents/a.md", "directly in"),
        (".claude/agents/hooks/sub/a.md", "directly in"),
        ("/home/me/proj/.claude/agents/hooks/sub/a.md", "directly in"),
        ("/home/me/proj/prompts/a.md", "directly in"),
        ("home/me/proj/.claude/agents/hooks/a.md", "directly in"),
        (".claude/agents/hooks/a\n.md", "control"),
        ("", "empty"),
    ] {
        check_refused(PromptFile::parse(input), "promptFile", rule);
    }
    // The message names the whole path, however long.
    let long = format!("/{}/prompts/a.md", "d".repeat(300));
    let e = PromptFile::parse(&long).unwrap_err();
    assert!(e.rule.contains(&long), "{}", e.rule);
}

#[test]
fn names() {
    assert_eq!(validate_name("  My hook ").unwrap(), "My hook");
    check_refused(validate_name(" "), "name", "1 to 200");
    check_refused(validate_name("a\u{7}b"), "name", "control");
}

#[test]
fn slugs() {
    for (name, want) in [
        ("Post-task follow-up", "post-task-follow-up"),
        ("  Hello,  World!! ", "hello-world"),
        ("ÜBER cool", "ber-cool"),
        ("!!!", "hook"),
        ("", "hook"),
    ] {
        assert_eq!(slugify(name), want, "{name:?}");
    }
    let taken = ["a", "a-2", "a-3"];
    assert_eq!(unique_hook_id("A", |c| taken.contains(&c)).as_str(), "a-4");
    assert_eq!(unique_hook_id("b", |c| taken.contains(&c)).as_str(), "b");
}

#[test]
fn statuses_round_trip() {
    for s in [
        "ok",
        "error: boom",
        "skipped: cron session",
        "something else",
    ] {
        assert_eq!(Status::parse(s).to_string(), s);
    }
    assert_eq!(Status::parse("error: x"), Status::error("x"));
}

#[test]
fn timestamps() {
    let t = stamp::parse("2026-12-02T08:17:57+0000").unwrap();
    assert_eq!(stamp::format(t), "2026-12-02T08:17:57+0000");
    // Exact: whole seconds as the original writes them, else to the microsecond, and
    // read back equal.
    assert_eq!(stamp::format_exact(t), "2026-12-02T08:17:57+0000");
    let frac = t + Duration::milliseconds(1_234);
    assert_eq!(stamp::format_exact(frac), "2026-12-02T08:17:58.234000+0000");
    assert_eq!(stamp::parse(&stamp::format_exact(frac)), Some(frac));
    for (s, unix) in [
        ("2026-12-02T08:17:57Z", 1_796_199_477),
        ("2026-12-02T09:17:57+01:00", 1_796_199_477),
        ("2026-12-02T09:17:57+0100", 1_796_199_477),
        ("2026-12-02T08:17:57.250+00:00", 1_796_199_477),
        ("2026-12-02T08:17:57", 1_796_199_477),
        ("2026-12-02 08:17:57-00:00", 1_796_199_477),
    ] {
        assert_eq!(
            stamp::parse(s).map(|t| t.unix_timestamp()),
            Some(unix),
            "{s}"
        );
    }
    assert_eq!(
        stamp::parse("2026-12-02T08:17:57.250Z")
            .unwrap()
            .millisecond(),
        250
    );
    for bad in [
        "",
        "soon",
        "2026-13-02T08:17:57Z",
        "2026-12-02T08:17:57+25:00",
        "2026-12-02T08:17:57 junk",
    ] {
        assert_eq!(stamp::parse(bad), None, "{bad}");
    }
    let east = t.to_offset(time::UtcOffset::from_hms(5, 30, 0).unwrap());
    assert_eq!(stamp::format(east), "2026-12-02T13:47:57+0530");
}

#[test]
fn history_keeps_newest_200() {
    let mut h = History::default();
    for i in 0..250 {
        h.push(t0() + Duration::seconds(i), &format!("s{i}"));
    }
    assert_eq!(h.len(), HISTORY_CAP);
    assert_eq!(h.entries()[0].session, "s50");
    // Loaded out of order, over the cap: sorted by time and capped.
    let loaded = History::from_entries(
        (0..205)
            .rev()
            .map(|i| HistoryEntry {
                key: stamp::format(t0() + Duration::seconds(i)),
                session: format!("s{i}"),
            })
            .collect(),
    );
    assert_eq!(loaded.len(), HISTORY_CAP);
    assert_eq!(loaded.entries()[0].session, "s5");
    assert_eq!(loaded.entries()[199].session, "s204");
}

#[test]
fn frontmatter_and_options() {
    let text = "---\nname: post-task\nmodel: sonnet\nmaxTurns: 3\nallowed-tools:\n  - Read\n  - \"Bash(git *)\"\npermission-mode: acceptEdits\nunknown: whatever\n---\n\nDo the thing.\n";
    let p = parse_prompt(text).unwrap();
    assert_eq!(p.body, "Do the thing.");
    assert_eq!(p.options.model.as_deref(), Some("sonnet"));
    assert_eq!(p.options.max_turns, Some(3));
    assert_eq!(p.options.allowed_tools, ["Read", "Bash(git *)"]);
    assert_eq!(
        p.options.to_args(),
        [
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--max-turns",
            "3",
            "--allowedTools",
            "Read,Bash(git *)"
        ]
    );
    let inline =
        parse_prompt("---\ntools: [Read, Grep]\nappend-system-prompt: 'be brief'\n---\nbody")
            .unwrap();
    assert_eq!(inline.options.allowed_tools, ["Read", "Grep"]);
    assert_eq!(
        inline.options.append_system_prompt.as_deref(),
        Some("be brief")
    );
    let none = parse_prompt("no frontmatter\n---\nhere").unwrap();
    assert_eq!(
        (none.body.as_str(), none.options),
        ("no frontmatter\n---\nhere", RunOptions::default())
    );
    let unclosed = parse_prompt("---\nmodel: x\nbody").unwrap();
    assert_eq!(
        unclosed.options,
        RunOptions::default(),
        "an unclosed fence is body"
    );
}

#[test]
fn flag_like_values_refused() {
    check_refused(
        parse_prompt("---\nmodel: --dangerously-skip-permissions\n---\nx"),
        "model",
        "'-'",
    );
    check_refused(
        parse_prompt("---\nallowed-tools: Read, -x\n---\nx"),
        "allowed-tools",
        "'-'",
    );
    check_refused(
        parse_prompt("---\npermissionMode: \"-p\"\n---\nx"),
        "permission-mode",
        "'-'",
    );
    check_refused(
        parse_prompt("---\nmax-turns: 0\n---\nx"),
        "max-turns",
        "≥ 1",
    );
    check_refused(
        parse_prompt("---\nmax-turns: lots\n---\nx"),
        "max-turns",
        "≥ 1",
    );
    check_refused(parse_prompt("---\nname: a\n---\n  \n"), "prompt", "no body");
}

#[test]
fn markers() {
    assert!(ends_with_marker("work\nDONE", DONE_MARKER));
    assert!(ends_with_marker("work\n  DONE  \n\n", DONE_MARKER));
    assert!(!ends_with_marker("I am DONE", DONE_MARKER));
    assert!(!ends_with_marker("DONE\nmore", DONE_MARKER));
    assert!(!ends_with_marker("", DONE_MARKER));
    assert!(!ends_with_marker("done", DONE_MARKER));
}

#[test]
fn subagent_paths() {
    for (p, want) in [
        (
            "/h/.claude/projects/-x/abc/subagents/agent-a2271d1.jsonl",
            true,
        ),
        ("/h/.claude/projects/-x/agent-3ea04571.jsonl", true),
        ("/h/.claude/projects/-x/abc.jsonl", false),
        ("/h/.claude/projects/-x/subagents/x.jsonl", true),
        ("agent-x.json", false),
    ] {
        assert_eq!(is_subagent_path(p), want, "{p}");
    }
}

fn hook() -> Hook {
    HookSpec::post_task().into_hook(post_task_id(), t0())
}

fn pending(retries: u32) -> PendingEntry {
    PendingEntry {
        error: None,
        hook_id: post_task_id(),
        session_id: sid("s1"),
        due_at: DueAt::At(t0()),
        queued_at: Some(t0()),
        retries,
        attempts: 0,
        not_taken: 0,
        claim: None,
        waiting: None,
    }
}

#[test]
fn enqueue_decision_table() {
    let now = t0();
    let base = hook();
    let disabled = Hook {
        enabled: false,
        ..base.clone()
    };
    let lax = Hook {
        skip_cron: false,
        skip_subagents: false,
        ..base.clone()
    };
    type Row<'a> = (
        &'a str,
        &'a Hook,
        Option<OffsetDateTime>,
        Origin,
        bool,
        bool,
        EnqueueDecision,
    );
    let queue = EnqueueDecision::Queue {
        due_at: now + Duration::seconds(10),
    };
    let rows: Vec<Row> = vec![
        (
            "queues",
            &base,
            None,
            Origin::Interactive,
            false,
            false,
            queue.clone(),
        ),
        (
            "disabled",
            &disabled,
            None,
            Origin::Interactive,
            false,
            false,
            EnqueueDecision::Skip(SkipReason::Disabled),
        ),
        (
            "loop guard",
            &base,
            Some(now),
            Origin::Interactive,
            false,
            false,
            EnqueueDecision::Skip(SkipReason::AlreadyRan { at: now }),
        ),
        (
            "cron",
            &base,
            None,
            Origin::Cron,
            false,
            false,
            EnqueueDecision::Skip(SkipReason::CronSession),
        ),
        (
            "cron allowed",
            &lax,
            None,
            Origin::Cron,
            false,
            false,
            queue.clone(),
        ),
        (
            "subagent",
            &base,
            None,
            Origin::Interactive,
            true,
            false,
            EnqueueDecision::Skip(SkipReason::Subagent),
        ),
        (
            "subagent allowed",
            &lax,
            None,
            Origin::Interactive,
            true,
            false,
            queue.clone(),
        ),
        (
            "pending",
            &base,
            None,
            Origin::Interactive,
            false,
            true,
            EnqueueDecision::Skip(SkipReason::AlreadyPending),
        ),
        (
            "disabled beats stamp",
            &disabled,
            Some(now),
            Origin::Cron,
            true,
            true,
            EnqueueDecision::Skip(SkipReason::Disabled),
        ),
    ];
    for (name, hook, stamp, origin, subagent, already_pending, want) in rows {
        let rules = HookRules::from(hook);
        let got = decide_enqueue(EnqueueInput {
            failure: None,
            hook: &rules,
            stamp,
            origin,
            subagent,
            already_pending,
            follow_up_turn: false,
            now,
        });
        assert_eq!(got, want, "{name}");
    }
    // A due time is never earlier than now + delay: it rounds up to the whole second.
    let rules = HookRules::from(&base);
    let input = EnqueueInput {
        failure: None,
        hook: &rules,
        stamp: None,
        origin: Origin::Interactive,
        subagent: false,
        already_pending: false,
        follow_up_turn: false,
        now: now + Duration::milliseconds(1),
    };
    assert_eq!(
        decide_enqueue(input),
        EnqueueDecision::Queue {
            due_at: now + Duration::seconds(11)
        }
    );
    let instant = HookRules {
        delay: Delay::from_seconds(0).unwrap(),
        ..rules.clone()
    };
    let input = EnqueueInput {
        hook: &instant,
        ..input
    };
    let at_once = EnqueueDecision::Queue {
        due_at: now + Duration::milliseconds(1),
    };
    assert_eq!(decide_enqueue(input), at_once, "no delay: due at once");
}

/// A failure known by its time (the transcript's API error line) is the one followed up
/// already once a follow-up ran after it: told again, it is not queued again. A failure
/// after that run, or one whose time is not known, is a new one.
#[test]
fn a_failure_told_again_after_its_follow_up_is_not_queued_again() {
    let now = t0();
    let mut hook =
        HookSpec::continue_after_limit().into_hook(crate::model::continue_after_limit_id(), now);
    hook.enabled = true;
    let rules = HookRules::from(&hook);
    let ran = now - Duration::minutes(5);
    let failure = |at: Option<crate::stamp::Timestamp>| crate::failure::Failure {
        kind: FailureKind::RateLimit,
        resets_at: None,
        at,
    };
    let decide = |f: &crate::failure::Failure| {
        decide_enqueue(EnqueueInput {
            failure: Some(f),
            hook: &rules,
            stamp: Some(ran),
            origin: Origin::Interactive,
            subagent: false,
            already_pending: false,
            follow_up_turn: false,
            now,
        })
    };
    let before = failure(Some(ran - Duration::minutes(1)));
    assert_eq!(
        decide(&before),
        EnqueueDecision::Skip(SkipReason::AlreadyRan { at: ran })
    );
    for f in [failure(Some(ran + Duration::minutes(1))), failure(None)] {
        assert!(matches!(decide(&f), EnqueueDecision::Queue { .. }), "{f:?}");
    }
}

fn transcript(changed_ago: i64, tokens: Option<u64>, subagent: bool) -> TranscriptFacts {
    TranscriptFacts {
        path: "/t/s1.jsonl".into(),
        subagent,
        context_tokens: tokens,
        last_change: Some(t0() - Duration::seconds(changed_ago)),
        cwd: Some("/work".into()),
        last_assistant_text: None,
        follow_up_of: None,
        model: None,
        last_reply_at: None,
        ends_in_error: false,
        failed_at: None,
        failed_kind: None,
        failed_resets_at: None,
        agent: None,
    }
}

#[test]
fn fire_decision_table() {
    let now = t0();
    let policy = Policy::default();
    let base = hook();
    let disabled = Hook {
        enabled: false,
        ..base.clone()
    };
    let no_cap = Hook {
        max_context: ContextCap::NONE,
        ..base.clone()
    };
    let mut recorded = base.clone();
    recorded.history.push(now, "s1");
    let quiet = SessionFacts {
        state: SessionState::default(),
        transcript: Some(transcript(60, Some(1000), false)),
        open: None,
        lease: None,
        settings_model: None,
        folder_owner: None,
    };
    let stamped = SessionFacts {
        state: SessionState {
            stamps: [(post_task_id(), now)].into(),
            ..Default::default()
        },
        ..quiet.clone()
    };
    let active = SessionFacts {
        transcript: Some(transcript(2, Some(1000), false)),
        ..quiet.clone()
    };
    let missing = SessionFacts {
        transcript: None,
        ..quiet.clone()
    };
    let sub = SessionFacts {
        transcript: Some(transcript(60, Some(1000), true)),
        ..quiet.clone()
    };
    let cron = SessionFacts {
        state: SessionState {
            origin: Some(Origin::Cron),
            ..Default::default()
        },
        ..quiet.clone()
    };
    let big = SessionFacts {
        transcript: Some(transcript(60, Some(123_400), false)),
        ..quiet.clone()
    };
    let at_cap = SessionFacts {
        transcript: Some(transcript(60, Some(60_000), false)),
        ..quiet.clone()
    };
    let no_cwd = SessionFacts {
        transcript: Some(TranscriptFacts {
            cwd: None,
            ..transcript(60, Some(1), false)
        }),
        ..quiet.clone()
    };
    let stamped_missing = SessionFacts {
        transcript: None,
        ..stamped.clone()
    };
    let retry = |why| FireDecision::Retry {
        due_at: now + Duration::seconds(60),
        retries: 4,
        why,
    };
    let skipped = |s: &str| FireDecision::Finish(Status::skipped(s));
    // Changed 2 s ago: looked at again once quiet for 5 s, with no retry used.
    let quiet_wait = || FireDecision::Wait {
        due_at: now + Duration::seconds(4),
        waiting: Waiting::new(
            WaitKind::Quiet,
            "conversation still being written to: waits until it has been quiet for 5s",
            now,
        ),
    };
    type Row<'a> = (
        &'a str,
        Option<&'a Hook>,
        &'a SessionFacts,
        u32,
        bool,
        Option<&'a str>,
        FireDecision,
    );
    let rows: Vec<Row> = vec![
        (
            "fires",
            Some(&base),
            &quiet,
            0,
            false,
            None,
            FireDecision::Fire,
        ),
        ("deleted", None, &quiet, 0, false, None, FireDecision::Drop),
        (
            "disabled",
            Some(&disabled),
            &quiet,
            0,
            false,
            None,
            FireDecision::Drop,
        ),
        (
            "stamped",
            Some(&base),
            &stamped,
            0,
            false,
            None,
            skipped("already ran for this session at 2026-11-30T00:53:20+0000"),
        ),
        (
            "stamped by a run its hook already records",
            Some(&recorded),
            &stamped,
            0,
            false,
            None,
            FireDecision::Drop,
        ),
        (
            // Changed 2 s ago: looked at again once quiet for 5 s, with no retry used.
            "active",
            Some(&base),
            &active,
            3,
            false,
            None,
            quiet_wait(),
        ),
        (
            "running",
            Some(&base),
            &quiet,
            3,
            true,
            None,
            FireDecision::Wait {
                due_at: now + Duration::seconds(60),
                waiting: Waiting::new(
                    WaitKind::Running,
                    "a follow-up is running on this session",
                    now,
                ),
            },
        ),
        (
            "no transcript",
            Some(&base),
            &missing,
            3,
            false,
            None,
            retry(NotReady::TranscriptNotFound),
        ),
        (
            "active, however many retries",
            Some(&base),
            &active,
            10,
            false,
            None,
            quiet_wait(),
        ),
        (
            "missing, out of retries",
            Some(&base),
            &missing,
            10,
            false,
            None,
            skipped("transcript not found after 10 retries"),
        ),
        (
            "subagent",
            Some(&base),
            &sub,
            0,
            false,
            None,
            skipped("subagent conversation"),
        ),
        (
            "cron",
            Some(&base),
            &cron,
            0,
            false,
            None,
            skipped("cron session"),
        ),
        (
            "over the cap",
            Some(&base),
            &big,
            0,
            false,
            None,
            skipped("context 124k over the 60k cap"),
        ),
        (
            "at the cap",
            Some(&base),
            &at_cap,
            0,
            false,
            None,
            FireDecision::Fire,
        ),
        (
            "no cap",
            Some(&no_cap),
            &big,
            0,
            false,
            None,
            FireDecision::Fire,
        ),
        (
            "prompt missing",
            Some(&base),
            &quiet,
            0,
            false,
            Some("prompt file x not found"),
            FireDecision::Finish(Status::error("prompt file x not found")),
        ),
        (
            "a project's prompt waits for approval",
            Some(&base),
            &quiet,
            0,
            false,
            Some("unapproved /p"),
            FireDecision::Finish(Status::skipped(
                "prompt file /p/.claude/agents/hooks/x.md is the project's own and waits for approval: review it, then run `hooks-app trust /p`",
            )),
        ),
        (
            "cwd unknown",
            Some(&base),
            &no_cwd,
            0,
            false,
            None,
            FireDecision::Finish(Status::error("the session's working directory is unknown")),
        ),
        (
            "deleted beats everything",
            None,
            &active,
            10,
            true,
            Some("x"),
            FireDecision::Drop,
        ),
        (
            "stamp beats not-ready",
            Some(&base),
            &stamped_missing,
            0,
            false,
            None,
            skipped("already ran for this session at 2026-11-30T00:53:20+0000"),
        ),
    ];
    for (name, hook, facts, retries, run_in_progress, prompt_error, want) in rows {
        let entry = pending(retries);
        let prompt_error = prompt_error.map(|e: &str| match e.strip_prefix("unapproved ") {
            Some(project) => crate::ports::PromptError::Unapproved {
                file: format!("{project}/.claude/agents/hooks/x.md"),
                project: project.to_owned(),
            },
            None => crate::ports::PromptError::Unreadable(
                e.trim_start_matches("prompt file ").to_owned(),
            ),
        });
        let got = decide_fire(FireInput {
            hook,
            entry: &entry,
            facts,
            run_in_progress,
            prompt_error: prompt_error.as_ref(),
            cost: None,
            budget: None,
            paused: None,
            can_deliver: false,
            now,
            policy,
        });
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn retries_run_out_after_ten() {
    let policy = Policy::default();
    let base = hook();
    let facts = SessionFacts::default();
    let mut entry = pending(0);
    let mut now = t0();
    let mut retries_seen = 0;
    loop {
        match decide_fire(FireInput {
            hook: Some(&base),
            entry: &entry,
            facts: &facts,
            run_in_progress: false,
            prompt_error: None,
            cost: None,
            budget: None,
            paused: None,
            can_deliver: false,
            now,
            policy,
        }) {
            FireDecision::Retry {
                due_at, retries, ..
            } => {
                assert_eq!(due_at, now + Duration::seconds(60));
                entry.retries = retries;
                now = due_at;
                retries_seen += 1;
            }
            FireDecision::Finish(s) => {
                assert_eq!(s, Status::skipped("transcript not found after 10 retries"));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(retries_seen <= 10, "never more than 10 retries");
    }
    assert_eq!(retries_seen, 10);
}

#[test]
fn queue_next_wake() {
    let mut p = vec![pending(0)];
    assert_eq!(
        queue::next_wake(&p, t0() - Duration::seconds(5)),
        Some(t0())
    );
    p[0].claim = Some(Claim {
        owner: "x".into(),
        expires_at: t0() + Duration::seconds(30),
    });
    assert_eq!(
        queue::next_wake(&p, t0()),
        Some(t0() + Duration::seconds(30)),
        "a claimed entry wakes at its expiry"
    );
    assert_eq!(queue::next_wake(&[], t0()), None);
}

/// The contracts on the in-memory adapters, one test a rule.
mod contract_on_the_in_memory_store {
    use super::*;
    crate::hook_store_contract!(|| ((), InMemoryStore::new() as Arc<dyn HookStore>));
    crate::session_store_contract!(|| ((), InMemorySessions::new() as Arc<dyn SessionStore>));
}

/// Every public check of the contract is expanded by one of its macros, so none is
/// written and never run.
#[test]
fn every_contract_check_is_in_a_macro() {
    for src in [
        include_str!("testing/contract.rs"),
        include_str!("testing/runner_contract.rs"),
    ] {
        checks_are_expanded(src);
    }
}

fn checks_are_expanded(src: &str) {
    // A check's name in a macro's list is the only place it stands alone on its line; a
    // check a macro calls on its own (on a runtime of its own) is called by its path.
    let macros = src;
    let missing: Vec<&str> = src
        .split("pub async fn ")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .filter(|name| {
            !macros.contains(&format!("            {name},\n"))
                && !macros.contains(&format!("$crate::testing::contract::{name}(\n"))
        })
        .collect();
    assert!(missing.is_empty(), "checks no macro runs: {missing:?}");
}

const PROMPT: &str = "---\nname: post-task\n---\nTidy up, then say COMPLETED.";

struct World {
    store: Arc<InMemoryStore>,
    meta: Arc<InMemoryMeta>,
    runner: Arc<ScriptedRunner>,
    clock: Arc<ManualClock>,
    service: Service,
}

fn world_with(
    store: Arc<dyn HookStore>,
    runner: Arc<ScriptedRunner>,
) -> (Arc<InMemoryMeta>, Arc<ManualClock>, Service) {
    let meta = InMemoryMeta::new();
    let clock = ManualClock::new(t0());
    let ports = Ports {
        store,
        meta: meta.clone(),
        runner,
        prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", PROMPT),
        clock: clock.clone(),
    };
    (meta, clock, Service::new(ports, Config::new("me")))
}

fn world() -> World {
    let store = InMemoryStore::seeded(t0());
    let runner = ScriptedRunner::ok();
    let (meta, clock, service) = world_with(store.clone(), runner.clone());
    World {
        store,
        meta,
        runner,
        clock,
        service,
    }
}

fn done_event(s: &str) -> NotifyEvent {
    NotifyEvent {
        failure: None,
        session: sid(s),
        event: Event::ConversationDone,
        update: SessionUpdate {
            cwd: Some("/work".into()),
            transcript_path: Some(format!("/p/{s}.jsonl")),
            origin: None,
        },
        subagent: false,
    }
}

async fn fire_all(w: &World) -> Vec<FireReport> {
    let mut out = Vec::new();
    for e in w.service.claim(100).await.unwrap() {
        out.push(w.service.fire(&e).await.unwrap());
    }
    out
}

#[tokio::test]
async fn follow_up_fires_once_and_never_queues_itself_again() {
    let w = world();
    let r = w.service.notify(&done_event("s1")).await.unwrap();
    assert_eq!(
        r,
        [NotifyReport {
            hook_id: post_task_id(),
            outcome: NotifyOutcome::Queued {
                due_at: t0() + Duration::seconds(10)
            }
        }]
    );
    assert!(
        fire_all(&w).await.is_empty(),
        "nothing is due before the delay"
    );
    w.meta
        .set_transcript(&sid("s1"), transcript(0, Some(1000), false));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    assert!(
        matches!(
            &fired[..],
            [FireReport {
                action: FireAction::Ran(_),
                ..
            }]
        ),
        "{fired:?}"
    );
    assert_eq!(w.runner.count(), 1);
    let call = &w.runner.calls()[0];
    assert_eq!(
        (call.cwd.as_str(), call.prompt.body.as_str()),
        ("/work", "Tidy up, then say COMPLETED.")
    );
    let hook = w.store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(hook.last_status, Some(Status::Ok));
    assert_eq!(hook.history.entries()[0].session, "s1");
    assert_eq!(
        w.store.runs(&RunFilter::default()).await.unwrap().len(),
        1,
        "the run is logged"
    );
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());
    // The follow-up's own Stop: the loop guard refuses to queue again.
    let again = w.service.notify(&done_event("s1")).await.unwrap();
    assert!(
        matches!(
            again[0].outcome,
            NotifyOutcome::Skipped(SkipReason::AlreadyRan { .. })
        ),
        "{again:?}"
    );
    w.clock.advance(Duration::hours(1));
    assert!(fire_all(&w).await.is_empty());
    assert_eq!(w.runner.count(), 1, "never fired twice");
}

/// A hook that follows up each task ([`Repeat::EachTask`]): every DONE of a turn the person
/// asked for is followed up, each after the one before has run, and the stamp moves on to
/// the newest; a turn that answered a delivered follow-up of any hook but a failed turn's
/// continuation queues nothing, and says why. A hook that runs once, beside it, is told
/// it ran.
#[tokio::test]
async fn a_hook_that_follows_up_each_task_runs_once_per_task_and_never_for_its_own_turn() {
    let w = world();
    w.store
        .update_hook(
            &post_task_id(),
            &HookPatch {
                repeat: Some(Repeat::EachTask),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let once = w
        .store
        .create_hook(
            HookSpec::new(
                "Once",
                PromptFile::parse(".claude/agents/hooks/post-task.md").unwrap(),
            )
            .unwrap(),
            t0(),
        )
        .await
        .unwrap();
    let s = sid("s1");
    let outcome = |r: &[NotifyReport], id: &HookId| {
        r.iter()
            .find(|r| &r.hook_id == id)
            .map(|r| r.outcome.clone())
            .unwrap()
    };
    for task in 1..=3u64 {
        let r = w.service.notify(&done_event("s1")).await.unwrap();
        assert!(
            matches!(outcome(&r, &post_task_id()), NotifyOutcome::Queued { .. }),
            "task {task}: {r:?}"
        );
        if task > 1 {
            assert!(
                matches!(
                    outcome(&r, &once.id),
                    NotifyOutcome::Skipped(SkipReason::AlreadyRan { .. })
                ),
                "the other hook runs once: {r:?}"
            );
        }
        // A second DONE before it ran is the same follow-up.
        let dup = w.service.notify(&done_event("s1")).await.unwrap();
        assert_eq!(
            outcome(&dup, &post_task_id()),
            NotifyOutcome::Skipped(SkipReason::AlreadyPending)
        );
        w.meta.set_transcript(&s, transcript(0, Some(1000), false));
        w.clock.advance(Duration::seconds(10));
        // One follow-up at a time per conversation: the two hooks' entries fire in turn.
        let mut fired = fire_all(&w).await;
        fired.extend(fire_all(&w).await);
        assert!(
            fired
                .iter()
                .any(|f| f.key.hook_id == post_task_id() && matches!(f.action, FireAction::Ran(_))),
            "task {task}: {fired:?}"
        );
        let ran = w
            .store
            .runs(&RunFilter::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.hook_id == post_task_id() && r.outcome.status() == Status::Ok)
            .count();
        assert_eq!(ran as u64, task, "one follow-up per task");
        let stamp = w.meta.state(&s).await.unwrap().stamps[&post_task_id()];
        assert_eq!(stamp, w.clock.now(), "the stamp is the newest follow-up's");
        w.clock.advance(Duration::minutes(1));
    }
    // The turn that answered a delivered post-task: its DONE is its own, for both hooks.
    let mut delivered = transcript(0, Some(1000), false);
    delivered.follow_up_of = Some("post-task".into());
    w.meta.set_transcript(&s, delivered.clone());
    let r = w.service.notify(&done_event("s1")).await.unwrap();
    for id in [post_task_id(), once.id.clone()] {
        assert_eq!(
            outcome(&r, &id),
            NotifyOutcome::Skipped(SkipReason::FollowUpsTurn),
            "{r:?}"
        );
    }
    // A failed turn's continuation carries the task on: its DONE is the task's.
    let mut cont = w
        .store
        .get_hook(&crate::model::continue_after_limit_id())
        .await
        .unwrap()
        .unwrap();
    cont.enabled = true;
    w.store.import_hook(&cont).await.unwrap();
    delivered.follow_up_of = Some(cont.id.to_string());
    w.meta.set_transcript(&s, delivered);
    let r = w.service.notify(&done_event("s1")).await.unwrap();
    assert!(
        matches!(outcome(&r, &post_task_id()), NotifyOutcome::Queued { .. }),
        "{r:?}"
    );
}

#[tokio::test]
async fn an_active_conversation_waits_until_it_is_quiet_and_uses_no_retry() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.clock.advance(Duration::seconds(10));
    w.meta
        .set_transcript(&sid("s1"), transcript(-8, Some(1000), false)); // changed 2 s before `now`
    let r = fire_all(&w).await;
    assert!(matches!(r[0].action, FireAction::Waiting { .. }), "{r:?}");
    assert_eq!(w.runner.count(), 0);
    let p = &w.store.snapshot().await.unwrap().pending[0];
    // Quiet for the 5 s quiet period at t0 + 13, looked at a second later.
    assert_eq!(
        (p.retries, p.claim.clone(), p.due_at.clone()),
        (0, None, DueAt::At(t0() + Duration::seconds(14)))
    );
    assert!(
        p.waiting
            .as_ref()
            .is_some_and(|w| w.reason.starts_with("conversation still being written to")),
        "{p:?}"
    );
    // Then quiet: it fires.
    w.clock.advance(Duration::seconds(4));
    let r = fire_all(&w).await;
    assert!(matches!(r[0].action, FireAction::Ran(_)), "{r:?}");
}

#[tokio::test]
async fn skips_are_recorded_without_running() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(70_000), false));
    w.clock.advance(Duration::seconds(10));
    let r = fire_all(&w).await;
    assert_eq!(
        r[0].action,
        FireAction::Finished(Status::skipped("context 70k over the 60k cap"))
    );
    assert_eq!(w.runner.count(), 0);
    let hook = w.store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(
        hook.last_status,
        Some(Status::skipped("context 70k over the 60k cap"))
    );
    assert!(hook.history.is_empty(), "history holds firings only");
    let runs = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(runs.len(), 1, "a skip leaves one run-log line: {runs:?}");
    assert_eq!(
        runs[0].outcome.status,
        Some(Status::skipped("context 70k over the 60k cap"))
    );
    assert!(!runs[0].started(), "nothing ran: {:?}", runs[0]);
    assert_eq!(runs[0].outcome.cost_usd, None);
}

#[tokio::test]
async fn disabled_and_deleted_hooks() {
    let w = world();
    w.service.set_enabled(&post_task_id(), false).await.unwrap();
    let r = w.service.notify(&done_event("s1")).await.unwrap();
    assert_eq!(r[0].outcome, NotifyOutcome::Skipped(SkipReason::Disabled));
    assert!(
        w.store.snapshot().await.unwrap().pending.is_empty(),
        "a disabled hook queues nothing"
    );
    w.service.set_enabled(&post_task_id(), true).await.unwrap();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.service.set_enabled(&post_task_id(), false).await.unwrap();
    w.clock.advance(Duration::seconds(10));
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(1), false));
    let r = fire_all(&w).await;
    assert_eq!(
        r[0].action,
        FireAction::Dropped,
        "disabled while queued: dropped, the hook left as it was"
    );
    let runs = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(
        runs.iter()
            .map(|r| r.outcome.status.clone())
            .collect::<Vec<_>>(),
        vec![Some(Status::skipped("the hook post-task is disabled"))],
        "the run log says why the entry ended"
    );
    assert_eq!(
        w.store
            .get_hook(&post_task_id())
            .await
            .unwrap()
            .unwrap()
            .last_status,
        None
    );
    assert_eq!(w.runner.count(), 0);
}

#[tokio::test]
async fn a_lost_stamp_means_no_run() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.clock.advance(Duration::seconds(10));
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(1), false));
    let claimed = w.service.claim(10).await.unwrap();
    // Another process stamps between our decision and our stamp.
    w.meta
        .stamp(&sid("s1"), &post_task_id(), t0())
        .await
        .unwrap();
    // The fresh facts now show the stamp, so the decision itself refuses.
    let r = w.service.fire(&claimed[0]).await.unwrap();
    assert!(
        matches!(r.action, FireAction::Finished(Status::Skipped(_))),
        "{r:?}"
    );
    assert_eq!(w.runner.count(), 0);
}

/// A runner (a team's backend) that reports a negative or absurd cost cannot bend the
/// budget: the cost is dropped and the run is the runner's error.
#[tokio::test]
async fn an_impossible_cost_is_refused_and_recorded_as_the_runners_error() {
    for cost in [-1_000_000.0, f64::NAN, f64::INFINITY, 1e9] {
        let store = InMemoryStore::seeded(t0());
        let runner = ScriptedRunner::answering(Ok(RunOutcome {
            status: Some(Status::Ok),
            cost_usd: Some(cost),
            ..RunOutcome::default()
        }));
        let (meta, clock, service) = world_with(store.clone(), runner.clone());
        service.notify(&done_event("s1")).await.unwrap();
        clock.advance(Duration::seconds(10));
        meta.set_transcript(&sid("s1"), transcript(100, Some(1), false));
        let e = service.claim(1).await.unwrap();
        service.fire(&e[0]).await.unwrap();
        let runs = store.runs(&RunFilter::default()).await.unwrap();
        let run = runs.last().unwrap();
        assert_eq!(run.outcome.cost_usd, None, "{cost}");
        assert!(
            run.outcome
                .status()
                .to_string()
                .starts_with("error: the runner reported an impossible cost"),
            "{cost}: {}",
            run.outcome.status()
        );
    }
}

#[tokio::test]
async fn runner_refusal_is_recorded_as_error() {
    // A request the runner cannot honour will not be honoured later either: an ending.
    // (A program that cannot be started goes back to the queue: see
    // a_follow_up_whose_agent_cannot_start_goes_back_to_the_queue.)
    let store = InMemoryStore::seeded(t0());
    let runner = ScriptedRunner::answering(Err(RunnerError::Invalid(ValidationError::new(
        "model",
        "this runner takes none",
    ))));
    let (meta, clock, service) = world_with(store.clone(), runner.clone());
    service.notify(&done_event("s1")).await.unwrap();
    clock.advance(Duration::seconds(10));
    meta.set_transcript(&sid("s1"), transcript(100, Some(1), false));
    let e = service.claim(1).await.unwrap();
    service.fire(&e[0]).await.unwrap();
    let hook = store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(
        hook.last_status,
        Some(Status::error("invalid model: this runner takes none"))
    );
    assert_eq!(
        meta.stamps(&sid("s1")).len(),
        1,
        "the stamp stays: at most once"
    );
}

#[tokio::test]
async fn a_store_failure_surfaces_and_nothing_runs() {
    let mut store = MockHookStore::new();
    store
        .expect_enqueue_event()
        .returning(|_| Err(StoreError::Io("disk on fire".into())));
    store.expect_claim_due().never();
    let (_, _, service) = world_with(Arc::new(store), ScriptedRunner::ok());
    let e = service.notify(&done_event("s1")).await.unwrap_err();
    assert_eq!(
        e,
        ServiceError::Store(StoreError::Io("disk on fire".into()))
    );
}

#[tokio::test]
async fn a_fenced_complete_still_records_the_run() {
    let mut store = MockHookStore::new();
    let entry = pending(0);
    let e2 = entry.clone();
    store.expect_get_hook().returning(|_| Ok(Some(hook())));
    store.expect_budget().returning(|| Ok(None));
    store.expect_pause().returning(|| Ok(None));
    store.expect_append_run().times(2).returning(|_| Ok(()));
    store.expect_wake().returning(|_, _, _| Ok(0));
    store
        .expect_complete()
        .times(1)
        .returning(move |_, _, _| Err(StoreError::Fenced(e2.key())));
    store
        .expect_record()
        .withf(|h, s, r| {
            *h == post_task_id()
                && s.as_str() == "s1"
                && r.status == Status::Ok
                && r.fired_at.is_some()
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    let runner = ScriptedRunner::ok();
    let (meta, _, service) = world_with(Arc::new(store), runner.clone());
    meta.set_transcript(&sid("s1"), transcript(100, Some(1), false));
    let r = service.fire(&entry).await.unwrap();
    assert!(matches!(r.action, FireAction::Ran(_)));
    assert_eq!(runner.count(), 1);
}

#[tokio::test]
async fn a_meta_failure_stops_the_fire_before_running() {
    let mut meta = MockSessionMeta::new();
    meta.expect_facts()
        .returning(|_| Err(MetaError::Io("gone".into())));
    meta.expect_stamp().never();
    let mut runner = MockRunner::new();
    runner.expect_start().never();
    let store = InMemoryStore::seeded(t0());
    let ports = Ports {
        store,
        meta: Arc::new(meta),
        runner: Arc::new(runner),
        prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", PROMPT),
        clock: ManualClock::new(t0()),
    };
    let service = Service::new(ports, Config::new("me"));
    assert!(matches!(
        service.fire(&pending(0)).await,
        Err(ServiceError::Meta(_))
    ));
}

#[tokio::test]
async fn notify_reports_every_hook() {
    let w = world();
    let pf = PromptFile::parse(".claude/agents/hooks/other.md").unwrap();
    let mut spec = HookSpec::new("Other", pf).unwrap();
    spec.skip_cron = false;
    w.service.create_hook(spec).await.unwrap();
    let mut ev = done_event("cronny");
    ev.update.origin = Some(Origin::Cron);
    let r = w.service.notify(&ev).await.unwrap();
    let got: Vec<_> = r
        .iter()
        .map(|r| {
            (
                r.hook_id.as_str(),
                matches!(r.outcome, NotifyOutcome::Queued { .. }),
            )
        })
        .collect();
    assert_eq!(got, [("other", true), ("post-task", false)]);
    let again = w.service.notify(&ev).await.unwrap();
    assert!(
        again
            .iter()
            .all(|r| matches!(r.outcome, NotifyOutcome::Skipped(_))),
        "{again:?}"
    );
    let sub = NotifyEvent {
        subagent: true,
        ..done_event("sub1")
    };
    let r = w.service.notify(&sub).await.unwrap();
    assert_eq!(
        r.iter()
            .find(|r| r.hook_id == post_task_id())
            .unwrap()
            .outcome,
        NotifyOutcome::Skipped(SkipReason::Subagent)
    );
}

fn lease(hook: &str, owner: &str) -> RunLease {
    RunLease {
        run_id: format!("{owner}#1"),
        hook_id: HookId::parse(hook).unwrap(),
        owner: owner.into(),
        host: "h".into(),
        owner_process: None,
        child: None,
        started_at: t0() - Duration::seconds(30),
        expires_at: t0() + Duration::seconds(60),
    }
}

#[test]
fn a_lease_is_live_while_its_holder_is_or_until_it_expires() {
    let l = lease("post-task", "other");
    let at = |holder, now| {
        LeaseInfo {
            lease: l.clone(),
            holder,
        }
        .is_live(now)
    };
    let later = t0() + Duration::seconds(61);
    assert!(at(Holder::Alive, later), "seen alive: live past its expiry");
    assert!(!at(Holder::Gone, t0()), "seen gone: dead before its expiry");
    assert!(at(Holder::Unknown, t0()));
    assert!(!at(Holder::Unknown, later), "unseen: until it expires");
}

#[test]
fn the_fire_decision_waits_for_an_open_conversation_without_using_retries() {
    let policy = Policy::default();
    let base = hook();
    let open = SessionFacts {
        transcript: Some(transcript(600, Some(1000), false)),
        open: Some(OpenSession {
            agent: "claude".into(),
            pid: 4242,
            kind: Some("interactive".into()),
            status: Some("idle".into()),
            inbox: None,
        }),
        ..SessionFacts::default()
    };
    let decide = |entry: &PendingEntry, now| {
        decide_fire(FireInput {
            hook: Some(&base),
            entry,
            facts: &open,
            run_in_progress: false,
            prompt_error: None,
            cost: None,
            budget: None,
            paused: None,
            can_deliver: false,
            now,
            policy,
        })
    };
    let mut entry = pending(9);
    let first = decide(&entry, t0());
    let waiting = Waiting::new(
        WaitKind::Open,
        "conversation open in claude, pid 4242, interactive, idle",
        t0(),
    );
    assert_eq!(
        first,
        FireDecision::Wait {
            due_at: t0() + Duration::hours(24),
            waiting: waiting.clone()
        }
    );
    entry.waiting = Some(waiting.clone());
    let later = t0() + Duration::hours(23);
    assert_eq!(
        decide(&entry, later),
        FireDecision::Wait {
            due_at: t0() + Duration::hours(24),
            waiting: waiting.clone()
        },
        "the wait counts from when it began; retries are untouched"
    );
    assert_eq!(
        decide(&entry, t0() + Duration::hours(24)),
        FireDecision::Finish(Status::skipped("conversation still open after 24h"))
    );
    // A wait for another run does not count toward the open-wait limit.
    entry.waiting = Some(Waiting {
        kind: WaitKind::Running,
        ..waiting
    });
    assert!(matches!(
        decide(&entry, t0() + Duration::hours(30)),
        FireDecision::Wait { .. }
    ));
}

#[test]
fn the_fire_decision_accounts_for_a_dead_lease_first_and_waits_for_a_live_one() {
    let policy = Policy::default();
    let base = hook();
    let with = |holder, stamped: bool| SessionFacts {
        state: SessionState {
            stamps: if stamped {
                [(post_task_id(), t0() - Duration::seconds(30))].into()
            } else {
                Default::default()
            },
            ..Default::default()
        },
        transcript: Some(transcript(600, Some(1000), false)),
        open: None,
        lease: Some(LeaseInfo {
            lease: lease("post-task", "other"),
            holder,
        }),
        settings_model: None,
        folder_owner: None,
    };
    let entry = pending(0);
    let decide = |hook: Option<&Hook>, facts: &SessionFacts| {
        decide_fire(FireInput {
            hook,
            entry: &entry,
            facts,
            run_in_progress: false,
            prompt_error: None,
            cost: None,
            budget: None,
            paused: None,
            can_deliver: false,
            now: t0(),
            policy,
        })
    };
    let dead = with(Holder::Gone, true);
    let recover = FireDecision::Recover(Box::new(lease("post-task", "other")));
    assert_eq!(decide(Some(&base), &dead), recover);
    assert_eq!(
        decide(None, &dead),
        recover,
        "a run that may have cost money is accounted for even if its hook is gone"
    );
    match decide(Some(&base), &with(Holder::Unknown, true)) {
        FireDecision::Wait { waiting, due_at } => {
            assert_eq!(due_at, t0() + Duration::seconds(60));
            assert!(!waiting.waits_for_close());
            assert_eq!(
                waiting.reason,
                "a follow-up is running on this session (post-task, run by other)"
            );
        }
        other => panic!("a live lease with a stamp means running, not done: {other:?}"),
    }
}

#[test]
fn run_lines_fold_by_run_id_in_order_of_first_appearance() {
    let base = RunRecord {
        run_id: Some("a".into()),
        hook_id: post_task_id(),
        session_id: sid("s1"),
        owner: Some("me".into()),
        process: None,
        started_at: t0(),
        finished_at: None,
        outcome: RunOutcome::default(),
        estimated_cost_usd: Some(0.5),
        model: None,
        delivered: false,
    };
    let legacy = RunRecord {
        run_id: None,
        finished_at: Some(t0()),
        ..base.clone()
    };
    let b = RunRecord {
        run_id: Some("b".into()),
        ..base.clone()
    };
    let a_done = RunRecord {
        process: Some(ProcessRef { pid: 1, start: 2 }),
        finished_at: Some(t0() + Duration::seconds(1)),
        outcome: RunOutcome {
            status: Some(Status::Ok),
            ..RunOutcome::default()
        },
        ..base.clone()
    };
    let folded = fold_runs([base.clone(), legacy.clone(), b.clone(), a_done.clone()]);
    assert_eq!(folded, [a_done, legacy.clone(), b.clone()]);
    assert_eq!(folded[2].status_text(), "running");
    assert_eq!(
        fold_runs([legacy.clone(), legacy.clone()]).len(),
        2,
        "old lines stand alone"
    );
}

#[tokio::test]
async fn an_open_conversation_waits_and_a_close_wakes_it() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta
        .set_transcript(&sid("s1"), transcript(60, Some(1000), false));
    w.meta.set_open(
        &sid("s1"),
        Some(OpenSession {
            agent: "claude".into(),
            pid: 7,
            kind: Some("interactive".into()),
            status: Some("idle".into()),
            inbox: None,
        }),
    );
    w.clock.advance(Duration::seconds(10));
    let r = fire_all(&w).await;
    assert!(
        matches!(&r[0].action, FireAction::Waiting { waiting, .. } if waiting.waits_for_close()),
        "{r:?}"
    );
    assert_eq!(w.runner.count(), 0, "an open conversation is never resumed");
    let snap = w.store.snapshot().await.unwrap();
    assert_eq!(
        snap.pending[0].waiting.as_ref().map(|w| w.reason.as_str()),
        Some("conversation open in claude, pid 7, interactive, idle")
    );
    assert_eq!(
        w.service.wake_closed(&snap.pending).await.unwrap(),
        0,
        "still open: nothing woken, nothing written"
    );
    w.meta.set_open(&sid("s1"), None);
    assert_eq!(w.service.wake_closed(&snap.pending).await.unwrap(), 1);
    assert!(fire_all(&w).await.is_empty(), "due after the quiet period");
    w.clock.advance(Duration::seconds(5));
    let r = fire_all(&w).await;
    assert!(matches!(r[0].action, FireAction::Ran(_)), "{r:?}");
    assert_eq!(w.runner.count(), 1);
}

#[tokio::test]
async fn a_run_is_logged_before_it_starts_and_leases_the_session() {
    struct Peek {
        store: Arc<InMemoryStore>,
        meta: Arc<InMemoryMeta>,
        seen: std::sync::Mutex<Vec<(Vec<RunRecord>, Option<RunLease>)>>,
    }
    #[async_trait::async_trait]
    impl Runner for Peek {
        async fn start(&self, r: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
            let runs = self.store.runs(&RunFilter::default()).await.unwrap();
            self.seen
                .lock()
                .unwrap()
                .push((runs, self.meta.lease(&r.session_id)));
            Err(RunnerError::Spawn {
                program: "claude".into(),
                message: "not here".into(),
            })
        }
        async fn end_leftovers(&self, _: &ProcessRef) -> usize {
            0
        }
    }
    let store = InMemoryStore::seeded(t0());
    let meta = InMemoryMeta::new();
    let clock = ManualClock::new(t0());
    let runner = Arc::new(Peek {
        store: store.clone(),
        meta: meta.clone(),
        seen: Default::default(),
    });
    let service = Service::new(
        Ports {
            store: store.clone(),
            meta: meta.clone(),
            runner: runner.clone(),
            prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", PROMPT),
            clock: clock.clone(),
        },
        Config::new("me"),
    );
    service.notify(&done_event("s1")).await.unwrap();
    clock.advance(Duration::seconds(10));
    meta.set_transcript(&sid("s1"), transcript(60, Some(1000), false));
    let e = service.claim(1).await.unwrap().remove(0);
    service.fire(&e).await.unwrap();
    let (runs, lease) = runner.seen.lock().unwrap()[0].clone();
    let (runs, lease) = (&runs, &lease);
    assert_eq!(runs.len(), 1, "started line before the start");
    assert_eq!(runs[0].status_text(), "running");
    assert_eq!(
        lease.as_ref().map(|l| l.run_id.clone()),
        runs[0].run_id.clone()
    );
    let after = store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(after.len(), 1, "one run, folded");
    assert!(
        matches!(after[0].outcome.status(), Status::Requeued(t) if t.starts_with("could not start claude: not here; back in the queue")),
        "{after:?}"
    );
    assert_eq!(meta.lease(&sid("s1")), None, "the lease is released");
}

#[tokio::test]
async fn a_dead_runners_lease_is_recorded_as_interrupted_and_blocks_nothing_after() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta
        .set_transcript(&sid("s1"), transcript(60, Some(1000), false));
    // Another daemon stamped and leased the session, logged the start, then died.
    let dead = lease("post-task", "dead-daemon");
    w.meta
        .stamp(&sid("s1"), &post_task_id(), dead.started_at)
        .await
        .unwrap();
    w.meta.put_lease(&sid("s1"), dead.clone());
    w.store
        .append_run(&RunRecord {
            run_id: Some(dead.run_id.clone()),
            hook_id: post_task_id(),
            session_id: sid("s1"),
            owner: Some(dead.owner.clone()),
            process: None,
            started_at: dead.started_at,
            finished_at: None,
            outcome: RunOutcome::default(),
            estimated_cost_usd: None,
            model: None,
            delivered: false,
        })
        .await
        .unwrap();
    w.clock.advance(Duration::seconds(10));
    let r = fire_all(&w).await;
    assert!(
        matches!(&r[0].action, FireAction::Waiting { .. }),
        "a lease not known dead and unexpired blocks: {r:?}"
    );
    w.meta.owner_gone("dead-daemon");
    w.clock.advance(Duration::seconds(60));
    let r = fire_all(&w).await;
    assert_eq!(r[0].action, FireAction::Recovered(interrupted()), "{r:?}");
    assert_eq!(w.runner.count(), 0, "never run twice");
    let runs = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome.status(), interrupted());
    assert_eq!(runs[0].owner.as_deref(), Some("dead-daemon"));
    assert_eq!(runs[0].started_at, dead.started_at);
    let hook = w.store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(hook.last_status, Some(interrupted()));
    assert_eq!(hook.history.entries().len(), 1);
    assert_eq!(w.meta.lease(&sid("s1")), None);
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());
}

#[tokio::test]
async fn the_end_of_a_dead_run_wakes_what_waited_for_it() {
    let w = world();
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta
        .set_transcript(&sid("s1"), transcript(60, Some(1000), false));
    // Another hook's run holds the session; its daemon is alive, so post-task waits.
    let other = RunLease {
        host: w.service.config().host.clone(),
        ..lease("other", "dead-daemon")
    };
    w.meta.put_lease(&sid("s1"), other.clone());
    w.clock.advance(Duration::seconds(10));
    let r = fire_all(&w).await;
    let FireAction::Waiting { due_at, .. } = &r[0].action else {
        panic!("{r:?}");
    };
    assert_eq!(*due_at, w.clock.now() + Policy::default().retry_delay);

    // Its daemon dies; whoever accounts for the run lets post-task go after the quiet period
    // rather than at its next retry.
    w.meta.owner_gone("dead-daemon");
    w.clock.advance(Duration::seconds(1));
    let found = w.service.recover_dead_runs().await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].2, Some(interrupted()));
    let pending = w.store.snapshot().await.unwrap().pending;
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].due_at,
        DueAt::At(w.clock.now() + Policy::default().quiet_period)
    );
    assert_eq!(w.meta.lease(&sid("s1")), None);
}

#[test]
fn a_prompt_with_a_name_and_a_description_reads_as_a_subagent() {
    use crate::prompt::reads_as_subagent;
    for (text, want) in [
        ("---\nname: x\ndescription: y\n---\nbody", true),
        ("---\r\ndescription: \"y\"\r\nname: x\r\n---\r\nbody", true),
        ("---\nname: x\n---\nbody", false),
        ("---\ndescription: y\n---\nbody", false),
        ("name: x\ndescription: y\n", false),
        ("---\nname: x\n  description: nested\n---\n", false),
        ("---\nname: x\ndescription: y\n", false),
    ] {
        assert_eq!(reads_as_subagent(text), want, "{text:?}");
    }
}

mod costs {
    use super::*;
    use crate::cost::*;

    #[test]
    fn model_ids_come_to_the_table_s_ids() {
        let t = PriceTable::builtin();
        let rows: &[(&str, Option<&str>)] = &[
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4-5")),
            ("claude-sonnet-4-5@20250929", Some("claude-sonnet-4-5")),
            (
                "us.anthropic.claude-opus-4-1-20250805-v1:0",
                Some("claude-opus-4-1"),
            ),
            ("claude-opus-4-8[1m]", Some("claude-opus-4-8")),
            ("claude-opus-4-20250514", Some("claude-opus-4")),
            ("claude-3-5-haiku-20241022", Some("claude-3-5-haiku")),
            ("claude-haiku-4-5-20251001", Some("claude-haiku-4-5")),
            ("sonnet", Some("claude-sonnet-5-5")),
            ("OPUS", Some("claude-opus-5-5")),
            ("sonnet[1m]", Some("claude-sonnet-5-5")),
            ("haiku", Some("claude-haiku-5-5")),
            ("fable", Some("claude-fable-5-2")),
            ("claude-opus-5-5", Some("claude-opus-5-5")),
            ("gpt-5", None),
            ("gpt-5.5", Some("gpt-5.5")),
            ("gpt-5.5-2026-04-23", Some("gpt-5.5")),
            ("openai/gpt-6.2-sol", Some("gpt-6.2-sol")),
            ("openai.gpt-6-astra", Some("gpt-6-astra")),
            ("GPT-6-Luna", Some("gpt-6-luna")),
            ("gpt-6.2", None),
            ("claude-hooks-test-model", None),
            ("", None),
        ];
        for (model, want) in rows {
            assert_eq!(
                t.lookup(model).map(|(id, _)| id).as_deref(),
                *want,
                "{model}"
            );
        }
    }

    #[test]
    fn openai_prices_have_their_own_cache_read_price() {
        // gpt-6.2-sol as OpenAI's model page prices it: $2 in, $0.10 cached, $2.50 cache
        // writes, $10 out a million.
        let (_, sol) = PriceTable::builtin().lookup("gpt-6.2-sol").unwrap();
        assert_eq!(
            (sol.input, sol.cache_read, sol.cache_write_5m, sol.output),
            (2.0, 0.1, 2.5, 10.0)
        );
        let (_, g) = PriceTable::builtin().lookup("gpt-5.5").unwrap();
        let usage = Usage {
            input_tokens: Some(1_000_000),
            cache_creation_input_tokens: Some(0),
            cache_read_input_tokens: Some(1_000_000),
            output_tokens: Some(100_000),
        };
        assert!((g.cost(&usage) - (5.0 + 0.5 + 3.0)).abs() < 1e-9);
    }

    #[test]
    fn prices_apply_to_usage_as_claude_code_computes_them() {
        // Claude Code 2.1.197's own figure for this usage on claude-opus-4-8 (its
        // documented result object): $0.02831.
        let (_, opus) = PriceTable::builtin().lookup("claude-opus-4-8").unwrap();
        let usage = Usage {
            input_tokens: Some(102),
            cache_creation_input_tokens: Some(2000),
            cache_read_input_tokens: Some(30_000),
            output_tokens: Some(12),
        };
        assert!((opus.cost(&usage) - 0.02831).abs() < 1e-9);
        assert_eq!(opus.cost(&Usage::default()), 0.0);
        let p = Price::standard(3.0, 15.0);
        assert_eq!(
            (p.cache_write_5m, p.cache_write_1h, p.cache_read),
            (3.75, 6.0, 0.3)
        );
        assert!(p.is_valid());
        assert!(!Price { input: -1.0, ..p }.is_valid());
        assert!(
            !Price {
                output: f64::NAN,
                ..p
            }
            .is_valid()
        );
    }

    #[test]
    fn the_estimate_is_context_as_cache_writes_plus_prompt_plus_output() {
        let p = Price::standard(3.0, 15.0);
        let e = Estimate::new("claude-sonnet-4-5", &p, 112_000, 400, 1_000);
        // 112k × $3.75 + 400 × $3 + 1000 × $15, per million.
        assert!((e.usd - (0.42 + 0.0012 + 0.015)).abs() < 1e-12, "{}", e.usd);
        assert_eq!(
            e.to_string(),
            "about $0.4362 on claude-sonnet-4-5: 112k context re-read as cache writes"
        );
        assert_eq!(prompt_tokens(""), 0);
        assert_eq!(prompt_tokens("abcde"), 2);
        assert_eq!(prompt_tokens("ééé"), 1, "characters, not bytes");
        assert_eq!(expected_output(&[]), DEFAULT_OUTPUT_TOKENS);
        assert_eq!(expected_output(&[900, 100, 5000]), 900);
        assert_eq!(expected_output(&[10, 20]), 20);
    }

    #[test]
    fn dollars_print_rounded_up() {
        let rows: &[(f64, &str)] = &[
            (0.0, "$0.00"),
            (0.5, "$0.50"),
            (0.501, "$0.5010"),
            (0.0902, "$0.0902"),
            (0.1, "$0.10"),
            (1.84, "$1.84"),
            (1.841, "$1.85"),
            (0.00042, "$0.0005"),
            (0.0001, "$0.0001"),
            (12.0, "$12.00"),
        ];
        for (v, want) in rows {
            assert_eq!(usd(*v), *want, "{v}");
        }
    }

    #[test]
    fn cost_caps_validate() {
        let ok: &[(&str, Option<f64>)] = &[
            ("0.50", Some(0.5)),
            ("$1", Some(1.0)),
            (" 2.25 ", Some(2.25)),
            ("0", None),
            ("10000", Some(10_000.0)),
        ];
        for (s, want) in ok {
            assert_eq!(CostCap::parse(s).unwrap().usd(), *want, "{s}");
        }
        for bad in ["-1", "abc", "", "10000.01", "inf", "NaN", "1e400"] {
            let e = CostCap::parse(bad).unwrap_err();
            assert_eq!(e.field, "maxCostUsd", "{bad}");
            assert!(e.rule.contains("from 0 to 10000"), "{bad}: {e}");
        }
        // A cap that would round to 0 would mean no cap: refused, never uncapped.
        for tiny in ["0.0000004", "4e-7"] {
            let e = CostCap::parse(tiny).unwrap_err();
            assert_eq!(e.field, "maxCostUsd", "{tiny}");
            assert!(e.rule.contains("at least 0.000001"), "{tiny}: {e}");
        }
        assert_eq!(CostCap::parse("0.000001").unwrap().usd(), Some(0.000001));
    }

    fn est(usd: f64) -> CostView {
        CostView::Estimated(Estimate {
            model: "claude-sonnet-4-5".into(),
            context_tokens: 100_000,
            prompt_tokens: 10,
            output_tokens: 1000,
            usd,
            priced_as: None,
        })
    }

    #[test]
    fn a_model_without_a_price_is_priced_as_the_dearest_of_its_family() {
        let t = PriceTable::builtin();
        let (like, p) = t.lookup_family("claude-opus-9-1-20270101").unwrap();
        assert_eq!(
            like, "claude-opus-4-1",
            "opus at $15/$75 is the dearest opus"
        );
        assert_eq!((p.input, p.output), (15.0, 75.0));
        assert_eq!(
            t.lookup_family("claude-sonnet-7").unwrap().0,
            "claude-sonnet-4-6"
        );
        assert_eq!(
            t.lookup_family("claude-haiku-6").unwrap().0,
            "claude-haiku-4-5"
        );
        assert_eq!(t.lookup_family("gpt-5"), None, "no family: no price");
        // OpenAI's families are words of the id, never a part of one.
        let (terra, tp) = t.lookup_family("gpt-6.1-terra").unwrap();
        assert_eq!(
            (terra.as_str(), tp.input, tp.output),
            ("gpt-5.6-terra", 2.0, 12.0)
        );
        assert_eq!(t.lookup_family("gpt-7-astra").unwrap().0, "gpt-6-astra");
        assert_eq!(t.lookup_family("gpt-7-solstice"), None);
        assert_eq!(t.lookup_family("claude-consolidated"), None);
        let mut e = Estimate::new("claude-opus-9", &p, 100_000, 10, 1000);
        e.priced_as = Some(format!("priced as {like}, the dearest of its family"));
        let text = e.to_string();
        assert!(
            text.contains("(no price in the table: priced as claude-opus-4-1, the dearest of its family; add it to prices.json)"),
            "{text}"
        );
    }

    #[test]
    fn a_price_is_learned_from_two_runs_with_different_mixes() {
        let truth = Price::standard(2.0, 8.0);
        let run = |i: u64, w: u64, r: u64, o: u64| {
            let u = Usage {
                input_tokens: Some(i),
                cache_creation_input_tokens: Some(w),
                cache_read_input_tokens: Some(r),
                output_tokens: Some(o),
            };
            (u, truth.cost(&u))
        };
        let one = [run(100, 20_000, 50_000, 500)];
        assert_eq!(
            learn_price(&one),
            None,
            "one run cannot tell input from output"
        );
        let same_mix = [
            run(100, 20_000, 50_000, 500),
            run(200, 40_000, 100_000, 1000),
        ];
        assert_eq!(
            learn_price(&same_mix),
            None,
            "two runs of one mix cannot either"
        );
        let two = [run(100, 20_000, 50_000, 500), run(300, 2_000, 90_000, 4000)];
        let p = learn_price(&two).expect("two mixes");
        assert_eq!((p.input, p.output), (2.0, 8.0));
        assert_eq!(p.cache_read, 0.2);
        let mut noisy = two.to_vec();
        noisy.push(run(50, 10_000, 10_000, 2000));
        noisy.push((Usage::default(), 1.0));
        assert_eq!(
            learn_price(&noisy).map(|p| (p.input, p.output)),
            Some((2.0, 8.0))
        );
    }

    #[test]
    fn the_cost_cap_decides_after_the_context_cap() {
        let now = t0();
        let capped = |cap: &str| Hook {
            max_cost: CostCap::parse(cap).unwrap(),
            max_context: ContextCap::NONE,
            ..hook()
        };
        let facts = SessionFacts {
            transcript: Some(transcript(60, Some(1000), false)),
            ..SessionFacts::default()
        };
        let no_usage = SessionFacts {
            transcript: Some(transcript(60, None, false)),
            ..SessionFacts::default()
        };
        let skipped = |why: &str| FireDecision::Finish(Status::skipped(why));
        let no_model_yet = FireDecision::Retry {
            due_at: now + Duration::seconds(60),
            retries: 1,
            why: NotReady::NoModel,
        };
        let no_price = CostView::NoPrice {
            model: "gpt-5".into(),
        };
        let big = SessionFacts {
            transcript: Some(transcript(60, Some(5000), false)),
            ..SessionFacts::default()
        };
        let rows: Vec<(&str, Hook, &SessionFacts, Option<CostView>, FireDecision)> = vec![
            (
                "under",
                capped("0.50"),
                &facts,
                Some(est(0.49)),
                FireDecision::Fire,
            ),
            (
                "equal",
                capped("0.50"),
                &facts,
                Some(est(0.50)),
                FireDecision::Fire,
            ),
            (
                "over",
                capped("0.50"),
                &facts,
                Some(est(1.84)),
                skipped("estimated $1.84 over the $0.50 cap"),
            ),
            (
                "just over prints over",
                capped("0.50"),
                &facts,
                Some(est(0.5001)),
                skipped("estimated $0.5001 over the $0.50 cap"),
            ),
            (
                "unknown model",
                capped("0.50"),
                &facts,
                Some(no_price.clone()),
                skipped("no price for model gpt-5 (add it to prices.json)"),
            ),
            (
                "no model at all: tried again later, not skipped for good",
                capped("0.50"),
                &facts,
                Some(CostView::NoModel),
                no_model_yet.clone(),
            ),
            (
                "not estimated counts as no model",
                capped("0.50"),
                &facts,
                None,
                no_model_yet.clone(),
            ),
            (
                "no transcript usage: priced as an empty context",
                capped("0.50"),
                &no_usage,
                Some(est(0.02)),
                FireDecision::Fire,
            ),
            (
                "no cap, unknown model",
                capped("0"),
                &facts,
                Some(no_price),
                FireDecision::Fire,
            ),
            (
                "no cap, over anything",
                capped("0"),
                &facts,
                Some(est(99.0)),
                FireDecision::Fire,
            ),
            (
                "the context cap speaks first",
                Hook {
                    max_context: ContextCap::from_k(1).unwrap(),
                    ..capped("0.50")
                },
                &big,
                Some(est(9.0)),
                skipped("context 5k over the 1k cap"),
            ),
        ];
        for (name, h, facts, cost, want) in rows {
            let entry = pending(0);
            let got = decide_fire(FireInput {
                hook: Some(&h),
                entry: &entry,
                facts,
                run_in_progress: false,
                prompt_error: None,
                cost: cost.as_ref(),
                budget: None,
                paused: None,
                can_deliver: false,
                now,
                policy: Policy::default(),
            });
            assert_eq!(got, want, "{name}");
        }
        // Still no model after every retry: given up, saying where to name one.
        let worn = PendingEntry {
            retries: 10,
            ..pending(0)
        };
        let got = decide_fire(FireInput {
            hook: Some(&capped("0.50")),
            entry: &worn,
            facts: &facts,
            run_in_progress: false,
            prompt_error: None,
            cost: Some(&CostView::NoModel),
            budget: None,
            paused: None,
            can_deliver: false,
            now,
            policy: Policy::default(),
        });
        assert_eq!(
            got,
            skipped(
                "no model known for the conversation after 10 retries, so no estimate (name one in the prompt file or Claude Code's settings)"
            )
        );
    }

    #[test]
    fn days_at_a_fixed_offset() {
        let at = crate::stamp::parse("2026-12-03T20:00:00+0000").unwrap();
        let d = Day::at_offset(at, 19_800);
        assert_eq!(
            d.date.to_string(),
            "2026-12-04",
            "01:30 the next day in India"
        );
        assert_eq!(crate::stamp::format(d.start), "2026-12-03T18:30:00+0000");
        assert_eq!(crate::stamp::format(d.end), "2026-12-04T18:30:00+0000");
        assert!(d.contains(at) && d.contains(d.start) && !d.contains(d.end));
        let rows: &[(&str, Option<i32>)] = &[
            ("+05:30", Some(19_800)),
            ("-08:00", Some(-28_800)),
            ("+00:00", Some(0)),
            ("05:30", None),
            ("+5:30", None),
            ("+15:00", None),
            ("+05:60", None),
            ("Europe/Berlin", None),
        ];
        for (s, want) in rows {
            assert_eq!(parse_offset(s), *want, "{s}");
        }
    }

    fn view(spent: f64, daily: f64, when: WhenReached) -> BudgetView {
        BudgetView {
            daily_usd: daily,
            spent_today: spent,
            today: Day::at_offset(t0(), 19_800),
            zone: "+05:30".into(),
            when_reached: when,
        }
    }

    #[test]
    fn the_daily_budget_decides_after_the_cost_cap() {
        let base = Hook {
            max_context: ContextCap::NONE,
            ..hook()
        };
        let capped = Hook {
            max_cost: CostCap::parse("0.10").unwrap(),
            ..base.clone()
        };
        let facts = SessionFacts {
            transcript: Some(transcript(60, Some(1000), false)),
            ..SessionFacts::default()
        };
        let end = Day::at_offset(t0(), 19_800).end;
        let waits = |since| FireDecision::Wait {
            due_at: end,
            waiting: Waiting {
                reason: format!(
                    "daily budget: $1.80 spent today of $2.00, and this follow-up would cost about $0.49; waits for the next day ({} +05:30)",
                    crate::stamp::format(end)
                ),
                since,
                kind: WaitKind::Budget,
            },
        };
        let mut waited = pending(0);
        waited.waiting = Some(Waiting {
            reason: "daily budget: …".into(),
            since: t0() - Duration::hours(2),
            kind: WaitKind::Budget,
        });
        let no_price = CostView::NoPrice {
            model: "gpt-5".into(),
        };
        let rows: Vec<(
            &str,
            &Hook,
            PendingEntry,
            CostView,
            BudgetView,
            FireDecision,
        )> = vec![
            (
                "under",
                &base,
                pending(0),
                est(0.49),
                view(1.0, 2.0, WhenReached::Wait),
                FireDecision::Fire,
            ),
            (
                "equal",
                &base,
                pending(0),
                est(0.49),
                view(1.51, 2.0, WhenReached::Wait),
                FireDecision::Fire,
            ),
            (
                "over: waits for the next day",
                &base,
                pending(0),
                est(0.49),
                view(1.8, 2.0, WhenReached::Wait),
                waits(t0()),
            ),
            (
                "over again: waiting since the first time",
                &base,
                waited,
                est(0.49),
                view(1.8, 2.0, WhenReached::Wait),
                waits(t0() - Duration::hours(2)),
            ),
            (
                "over, set to skip",
                &base,
                pending(0),
                est(0.49),
                view(1.8, 2.0, WhenReached::Skip),
                FireDecision::Finish(Status::skipped(
                    "daily budget: $1.80 spent today of $2.00, and this follow-up would cost about $0.49",
                )),
            ),
            (
                "spent already, whatever it costs",
                &base,
                pending(0),
                est(0.0),
                view(2.5, 2.0, WhenReached::Skip),
                FireDecision::Finish(Status::skipped(
                    "daily budget: $2.50 spent today of $2.00, and this follow-up would cost about $0.00",
                )),
            ),
            (
                "no price under a budget: skipped, waiting would not help",
                &base,
                pending(0),
                no_price.clone(),
                view(0.0, 2.0, WhenReached::Wait),
                FireDecision::Finish(Status::skipped(
                    "no price for model gpt-5 (add it to prices.json)",
                )),
            ),
            (
                "the hook's cap speaks first",
                &capped,
                pending(0),
                est(0.49),
                view(1.8, 2.0, WhenReached::Wait),
                FireDecision::Finish(Status::skipped("estimated $0.49 over the $0.10 cap")),
            ),
        ];
        for (name, h, entry, cost, budget, want) in rows {
            let got = decide_fire(FireInput {
                hook: Some(h),
                entry: &entry,
                facts: &facts,
                run_in_progress: false,
                prompt_error: None,
                cost: Some(&cost),
                budget: Some(&budget),
                paused: None,
                can_deliver: false,
                now: t0(),
                policy: Policy::default(),
            });
            assert_eq!(got, want, "{name}");
        }
    }

    fn run_at(at: &str, cost: f64) -> RunRecord {
        RunRecord {
            run_id: None,
            hook_id: post_task_id(),
            session_id: sid("old"),
            owner: None,
            process: None,
            started_at: crate::stamp::parse(at).unwrap(),
            finished_at: crate::stamp::parse(at),
            outcome: RunOutcome {
                status: Some(Status::Ok),
                cost_usd: Some(cost),
                ..RunOutcome::default()
            },
            estimated_cost_usd: None,
            model: None,
            delivered: false,
        }
    }

    /// t0 is 2026-11-30T00:53:20Z: 06:23 in India (+05:30), where that day began at
    /// 2026-11-29T18:30Z.
    #[tokio::test]
    async fn the_budget_counts_today_in_its_zone_waits_and_resets_at_midnight() {
        let w = world();
        for (at, cost) in [
            ("2026-11-29T18:29:59+0000", 5.0),
            ("2026-11-29T18:30:00+0000", 0.25),
            ("2026-11-30T00:00:00+0000", 0.5),
        ] {
            w.store.append_run(&run_at(at, cost)).await.unwrap();
        }
        let budget = |daily: &str, zone: &str| Budget {
            daily: CostCap::parse(daily).unwrap(),
            time_zone: Some(zone.into()),
            when_reached: WhenReached::Wait,
        };
        let e = w
            .service
            .set_budget(Some(budget("1", "Mars/Olympus")))
            .await;
        assert!(
            matches!(e, Err(ServiceError::Invalid(ref v)) if v.field == "timeZone"),
            "{e:?}"
        );
        assert_eq!(w.store.budget().await.unwrap(), None, "nothing set");
        w.service
            .set_budget(Some(budget("1", "+05:30")))
            .await
            .unwrap();
        let (_, v) = w.service.budget().await.unwrap().unwrap();
        assert_eq!(v.spent_today, 0.75, "yesterday's run does not count");
        assert_eq!(v.today.date.to_string(), "2026-11-30");

        // A follow-up of about $0.02 (1k of context on Sonnet, a short prompt, 1k output)
        // does not fit in the $0.25 left: it waits for the next day, then runs.
        let mut facts = transcript(60, Some(1000), false);
        facts.model = Some("claude-sonnet-4-5-20250929".into());
        w.meta.set_transcript(&sid("s1"), facts);
        w.service.notify(&done_event("s1")).await.unwrap();
        w.service
            .set_budget(Some(budget("0.76", "+05:30")))
            .await
            .unwrap();
        w.clock.advance(Duration::seconds(10));
        let e = w.service.claim(1).await.unwrap().remove(0);
        let report = w.service.fire(&e).await.unwrap();
        let midnight = crate::stamp::parse("2026-11-30T18:30:00+0000").unwrap();
        match &report.action {
            FireAction::Waiting { due_at, waiting } => {
                assert_eq!(*due_at, midnight);
                assert!(
                    waiting
                        .reason
                        .starts_with("daily budget: $0.75 spent today of $0.76"),
                    "{}",
                    waiting.reason
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(w.runner.calls().is_empty(), "nothing ran");
        w.clock.set(midnight);
        let e = w.service.claim(1).await.unwrap().remove(0);
        let report = w.service.fire(&e).await.unwrap();
        assert!(
            matches!(report.action, FireAction::Ran(_)),
            "{:?}",
            report.action
        );
        let ran = w
            .store
            .runs(&RunFilter {
                session_id: Some(sid("s1")),
                ..RunFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(ran[0].model.as_deref(), Some("claude-sonnet-4-5"));
        assert!(
            ran[0]
                .estimated_cost_usd
                .is_some_and(|e| e > 0.01 && e < 0.03),
            "{:?}",
            ran[0]
        );
    }

    #[test]
    fn a_cap_goes_to_claude_as_its_budget() {
        let o = RunOptions {
            max_budget: CostCap::parse("0.5").unwrap(),
            ..RunOptions::default()
        };
        assert_eq!(o.to_args(), ["--max-budget-usd", "0.5"]);
        assert!(RunOptions::default().to_args().is_empty());
    }
}

#[tokio::test]
async fn a_pause_holds_every_start_until_it_ends_or_is_lifted() {
    let w = world();
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(1), false));
    w.service.notify(&done_event("s1")).await.unwrap();
    let p = w
        .service
        .pause(Some(Duration::hours(2)), "me@host")
        .await
        .unwrap();
    assert_eq!(p.until, Some(w.service.now() + Duration::hours(2)));
    w.clock.advance(Duration::seconds(10));
    let r = fire_all(&w).await;
    match &r[0].action {
        FireAction::Waiting { due_at, waiting } => {
            assert_eq!(Some(*due_at), p.until, "it waits for the pause's end");
            assert!(
                waiting.reason.starts_with("paused until "),
                "{}",
                waiting.reason
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w.runner.count(), 0, "nothing started");
    let e = &w.store.snapshot().await.unwrap().pending[0];
    assert_eq!(e.retries, 0, "a pause uses up no retry");

    // Lifted: what waited wakes at once and runs.
    assert_eq!(w.service.unpause().await.unwrap(), 1);
    assert_eq!(w.service.paused().await.unwrap(), None);
    let r = fire_all(&w).await;
    assert!(
        matches!(r[0].action, FireAction::Ran(_)),
        "{:?}",
        r[0].action
    );
    assert_eq!(w.runner.count(), 1);

    // A pause that has ended holds nothing.
    w.service
        .pause(Some(Duration::minutes(1)), "me@host")
        .await
        .unwrap();
    w.clock.advance(Duration::minutes(2));
    assert_eq!(w.service.paused().await.unwrap(), None);
    for bad in [Duration::ZERO, Duration::days(400)] {
        let e = w.service.pause(Some(bad), "me").await.unwrap_err();
        assert!(e.to_string().contains("for: must be"), "{e}");
    }
}

#[test]
fn prompt_variables_are_checked_at_parse_and_filled_at_run() {
    let p = parse_prompt(
        "---\nmodel: sonnet\n---\n\nSession {{session_id}} in {{ cwd }}, try {{attempt}}.\nKeep {{{{raw}} as is.\n",
    )
    .unwrap();
    let out = render(&p.body, |v| format!("<{v}>"));
    assert_eq!(
        out,
        "Session <session_id> in <cwd>, try <attempt>.\nKeep {{raw}} as is."
    );
    // An unknown variable names itself and its line in the file (frontmatter counted).
    let e = parse_prompt("---\nmodel: sonnet\n---\nfirst\nsecond {{sesion_id}}\n").unwrap_err();
    assert_eq!(e.field, "prompt");
    assert!(
        e.rule.starts_with(
            "line 5: unknown variable {{sesion_id}} (the variables are session_id, cwd"
        ),
        "{}",
        e.rule
    );
    let e = parse_prompt("a\nb {{cwd\n").unwrap_err();
    assert!(
        e.rule.starts_with("line 2: {{ without a closing }}"),
        "{}",
        e.rule
    );
    for name in PROMPT_VARIABLES {
        let body = format!("x {{{{{name}}}}} y");
        assert_eq!(
            render(&parse_prompt(&body).unwrap().body, |v| v.to_uppercase()),
            format!("x {} y", name.to_uppercase())
        );
    }
}

#[tokio::test]
async fn a_follow_up_gets_its_prompt_with_the_variables_filled() {
    let store = InMemoryStore::seeded(t0());
    let runner = ScriptedRunner::ok();
    let meta = InMemoryMeta::new();
    let clock = ManualClock::new(t0());
    let body = "{{hook_id}} on {{session_id}} in {{cwd}} ({{transcript_path}}), due {{due_at}}, \
                try {{attempt}}, error [{{error}}], last: {{last_message}}";
    let service = Service::new(
        Ports {
            store: store.clone(),
            meta: meta.clone(),
            runner: runner.clone(),
            prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", body),
            clock: clock.clone(),
        },
        Config::new("me"),
    );
    service.notify(&done_event("s1")).await.unwrap();
    let mut t = transcript(100, Some(1), false);
    // Longer than the cap, in two-byte characters: cut at a character's edge.
    t.last_assistant_text = Some("é".repeat(3000));
    meta.set_transcript(&sid("s1"), t.clone());
    clock.advance(Duration::seconds(10));
    let due = store.snapshot().await.unwrap().pending[0].due_at.clone();
    for e in service.claim(10).await.unwrap() {
        service.fire(&e).await.unwrap();
    }
    let calls = runner.calls();
    assert_eq!(calls.len(), 1);
    let want_last = "é".repeat(LAST_MESSAGE_CAP / 2);
    assert_eq!(
        calls[0].prompt.body,
        format!(
            "post-task on s1 in /work ({}), due {due}, try 1, error [], last: {want_last}",
            t.path
        )
    );
}

#[tokio::test]
async fn hooks_run_queues_now_and_force_passes_over_the_stamp_only() {
    let w = world();
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(1), false));
    let r = w
        .service
        .run_now(&post_task_id(), &sid("s1"), false)
        .await
        .unwrap();
    assert_eq!(
        (r.queued.clone(), r.unstamped),
        (RunNowQueue::Queued, false)
    );
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    // Again without --force, later: the usual check skips it, and says why.
    w.clock.advance(Duration::seconds(5));
    let r = w
        .service
        .run_now(&post_task_id(), &sid("s1"), false)
        .await
        .unwrap();
    assert!(
        matches!(&r.queued, RunNowQueue::Skipped(Status::Skipped(why)) if why.starts_with("already ran")),
        "{r:?}"
    );
    assert!(
        w.store.snapshot().await.unwrap().pending.is_empty(),
        "nothing queued"
    );
    let runs = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(runs.len(), 1, "a refused ask changes nothing: {runs:?}");
    // With --force it runs once more; every other check still holds (a pause waits).
    let r = w
        .service
        .run_now(&post_task_id(), &sid("s1"), true)
        .await
        .unwrap();
    assert!(r.unstamped);
    w.service.pause(None, "me").await.unwrap();
    let fired = fire_all(&w).await;
    assert!(
        matches!(fired[0].action, FireAction::Waiting { .. }),
        "{fired:?}"
    );
    // Asked again while it waits: made due now.
    let r = w
        .service
        .run_now(&post_task_id(), &sid("s1"), false)
        .await
        .unwrap();
    assert_eq!(r.queued, RunNowQueue::AlreadyQueued { woken: true });
    w.service.unpause().await.unwrap();
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert_eq!(w.runner.count(), 2);
    let e = w
        .service
        .run_now(&HookId::parse("nope").unwrap(), &sid("s1"), false)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no hook with id nope"), "{e}");
}

#[tokio::test]
async fn an_entry_found_later_than_its_hooks_limit_is_skipped_as_late() {
    let w = world();
    let patch = HookPatch {
        max_lateness: Some(MaxLateness::parse("3600").unwrap()),
        ..HookPatch::default()
    };
    w.service
        .update_hook(&post_task_id(), &patch)
        .await
        .unwrap();
    w.meta
        .set_transcript(&sid("s1"), transcript(100, Some(1), false));
    w.service.notify(&done_event("s1")).await.unwrap();
    // Within the limit it fires as ever (another session).
    w.service.notify(&done_event("s2")).await.unwrap();
    w.meta
        .set_transcript(&sid("s2"), transcript(100, Some(1), false));
    w.clock.advance(Duration::minutes(30));
    let e2 = w.service.claim(10).await.unwrap();
    for e in e2.iter().filter(|e| e.session_id == sid("s2")) {
        let r = w.service.fire(e).await.unwrap();
        assert!(matches!(r.action, FireAction::Ran(_)), "{r:?}");
    }
    w.service
        .release(
            &e2.iter()
                .filter(|e| e.session_id == sid("s1"))
                .map(PendingEntry::key)
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    // Three hours after it was due (the machine slept): skipped, and said so.
    w.clock.advance(Duration::hours(3));
    let r = fire_all(&w).await;
    assert_eq!(
        r[0].action,
        FireAction::Finished(Status::skipped("3 h late (maxLatenessSeconds 3600)"))
    );
    assert_eq!(w.runner.count(), 1);
    for bad in ["-1", "2592001", "soon"] {
        check_refused(MaxLateness::parse(bad), "maxLatenessSeconds", "30 days");
    }
}

fn failed_event(s: &str, kind: FailureKind, text: &str) -> NotifyEvent {
    NotifyEvent {
        event: Event::ConversationFailed,
        failure: Some(crate::failure::FailedTurn {
            at: None,
            kind,
            texts: vec![text.to_owned()],
            resets_at: None,
        }),
        ..done_event(s)
    }
}

fn limited(status: u16, text: &str) -> RunOutcome {
    RunOutcome {
        status: Some(Status::error(text)),
        exit_code: Some(1),
        api_error_status: Some(status),
        result_text: Some(text.to_owned()),
        ..RunOutcome::default()
    }
}

#[tokio::test]
async fn a_failure_is_not_followed_up_once_the_conversation_went_on() {
    let w = limit_world().await;
    let s = sid("s1");
    let failed_turn = TranscriptFacts {
        ends_in_error: true,
        last_reply_at: Some(t0() - Duration::seconds(30)),
        ..transcript(100, Some(1), false)
    };
    w.meta.set_transcript(&s, failed_turn.clone());
    let msg = "API Error: Request rejected (429)";
    w.service
        .notify(&failed_event("s1", FailureKind::RateLimit, msg))
        .await
        .unwrap();
    // The person typed "try again" and it was answered, before the follow-up was due.
    w.clock.advance(Duration::minutes(10));
    w.meta.set_transcript(
        &s,
        TranscriptFacts {
            ends_in_error: false,
            last_reply_at: Some(t0() + Duration::seconds(40)),
            last_change: Some(t0() + Duration::seconds(40)),
            ..failed_turn.clone()
        },
    );
    let fired = fire_all(&w).await;
    assert_eq!(
        fired[0].action,
        FireAction::Finished(Status::skipped(crate::decide::WENT_ON))
    );
    assert_eq!(
        w.runner.count(),
        0,
        "nothing is paid for a conversation that went on"
    );
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());

    // A later failure whose turn is still the last word is followed up, as before: the
    // person tried again and was refused again.
    w.meta.set_transcript(
        &s,
        TranscriptFacts {
            ends_in_error: true,
            ..failed_turn
        },
    );
    w.service
        .notify(&failed_event("s1", FailureKind::RateLimit, msg))
        .await
        .unwrap();
    w.clock.advance(Duration::minutes(10));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert_eq!(w.runner.count(), 1);
}

/// The world with `continue-after-limit` on (reading the one prompt the fakes have).
async fn limit_world() -> World {
    let w = world();
    let patch = HookPatch {
        enabled: Some(true),
        prompt_file: Some(PromptFile::parse(".claude/agents/hooks/post-task.md").unwrap()),
        ..HookPatch::default()
    };
    w.service
        .update_hook(&continue_after_limit_id(), &patch)
        .await
        .unwrap();
    w
}

#[tokio::test]
async fn a_conversation_stopped_by_a_limit_is_continued_after_the_reset_once_per_failure() {
    let w = limit_world().await;
    let s = sid("s1");
    w.meta.set_transcript(&s, transcript(100, Some(1), false));
    // t0 is 2026-11-30T00:53:20Z; the limit resets at 02:00 UTC.
    let msg = "You've hit your 5-hour limit · resets 2am (UTC)";
    let r = w
        .service
        .notify(&failed_event("s1", FailureKind::RateLimit, msg))
        .await
        .unwrap();
    let reset = stamp::parse("2026-11-30T02:00:00+0000").unwrap();
    // Only the failure's hook: post-task listens to finished conversations.
    assert_eq!(
        r,
        [NotifyReport {
            hook_id: continue_after_limit_id(),
            outcome: NotifyOutcome::Queued {
                due_at: reset + Duration::seconds(60)
            }
        }]
    );
    let entry = &w.store.snapshot().await.unwrap().pending[0];
    assert_eq!(entry.error, Some(FailureKind::RateLimit));
    assert_eq!(
        entry.state_text(t0()),
        "waiting: rate limited until 2026-11-30T02:01:00+0000 (attempt 1 of 5)"
    );
    // The same failure told twice (a command and an http hook) is queued once.
    let again = w
        .service
        .notify(&failed_event("s1", FailureKind::RateLimit, msg))
        .await
        .unwrap();
    assert_eq!(
        again[0].outcome,
        NotifyOutcome::Skipped(SkipReason::AlreadyPending)
    );
    // Another run on the session ending wakes what waited for it, not a limit's wait.
    assert_eq!(w.store.wake(&s, t0(), false).await.unwrap(), 0);
    assert!(fire_all(&w).await.is_empty(), "nothing before the reset");
    // The follow-up itself hits the limit again: back in the queue, the attempt logged.
    w.clock.set(reset + Duration::seconds(60));
    w.runner.set_outcome(Ok(limited(
        429,
        "You've hit your 5-hour limit · resets 7am (UTC)",
    )));
    let fired = fire_all(&w).await;
    let FireAction::Limited {
        due_at, waiting, ..
    } = &fired[0].action
    else {
        panic!("{fired:?}");
    };
    assert_eq!(*due_at, stamp::parse("2026-11-30T07:01:00+0000").unwrap());
    assert!(waiting.reason.contains("attempt 2 of 5"), "{waiting:?}");
    assert!(
        w.meta.stamps(&s).is_empty(),
        "the stamp gives way to the next attempt"
    );
    let logged = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(logged.len(), 1);
    // Shown as what it is, not as a failure; what the CLI said is its reply.
    assert_eq!(
        logged[0].outcome.status(),
        Status::Requeued(
            "rate limited, back in the queue, due 2026-11-30T07:01:00+0000 (attempt 2 of 5)".into()
        )
    );
    assert_eq!(
        Status::parse(&logged[0].outcome.status().to_string()),
        logged[0].outcome.status()
    );
    assert!(
        logged[0]
            .outcome
            .result_text
            .as_deref()
            .is_some_and(|t| t.contains("resets 7am"))
    );
    let hook = w
        .store
        .get_hook(&continue_after_limit_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        hook.last_status, None,
        "not an ending: nothing on the hook yet"
    );
    // After the reset it runs, with the failure in its variables.
    w.clock.set(*due_at);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::Ok),
        exit_code: Some(0),
        ..RunOutcome::default()
    }));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert_eq!(w.runner.count(), 2);
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());
    // Days later the conversation hits a limit again: a new failure, continued again.
    w.clock.advance(Duration::days(4));
    let r = w
        .service
        .notify(&failed_event(
            "s1",
            FailureKind::RateLimit,
            "API Error: Request rejected (429)",
        ))
        .await
        .unwrap();
    assert!(
        matches!(r[0].outcome, NotifyOutcome::Queued { .. }),
        "{r:?}"
    );
    w.clock.advance(Duration::minutes(5));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert_eq!(w.runner.count(), 3);
    // A failure the hook does not follow up is not queued.
    let r = w
        .service
        .notify(&failed_event("s1", FailureKind::BillingError, "no credit"))
        .await
        .unwrap();
    assert_eq!(
        r[0].outcome,
        NotifyOutcome::Skipped(SkipReason::NotItsError(FailureKind::BillingError))
    );
}

#[tokio::test]
async fn an_overload_backs_off_doubling_and_gives_up_after_five_attempts() {
    let w = limit_world().await;
    let s = sid("s1");
    w.meta.set_transcript(&s, transcript(100, Some(1), false));
    w.service.notify(&done_event("s1")).await.unwrap();
    w.runner
        .set_outcome(Ok(limited(529, "API Error: 529 Overloaded")));
    // post-task's delay is 10 s: tried at 10 s, then 20, 40, 80 s later, then given up.
    let mut waits = Vec::new();
    w.clock.advance(Duration::seconds(10));
    loop {
        let fired = fire_all(&w).await;
        match &fired[0].action {
            FireAction::Limited { due_at, .. } => {
                waits.push((*due_at - w.clock.now()).whole_seconds());
                w.clock.set(*due_at);
            }
            FireAction::Ran(run) => {
                assert_eq!(
                    run.outcome.status(),
                    Status::skipped(
                        "still failing after 5 attempts (overloaded): error: API Error: 529 Overloaded"
                    )
                );
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(waits, [20, 40, 80, 160]);
    assert_eq!(w.runner.count(), 5);
    assert_eq!(w.store.runs(&RunFilter::default()).await.unwrap().len(), 5);
    let hook = w.store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert!(
        matches!(hook.last_status, Some(Status::Skipped(_))),
        "{hook:?}"
    );
}

#[tokio::test]
async fn looks_that_found_no_transcript_use_up_none_of_a_limits_attempts() {
    let w = limit_world().await;
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    // No transcript on four looks: four not-ready retries.
    w.clock.advance(Duration::seconds(10));
    for look in 1..=4 {
        let fired = fire_all(&w).await;
        let FireAction::Retried {
            due_at, retries, ..
        } = &fired[0].action
        else {
            panic!("{fired:?}");
        };
        assert_eq!(*retries, look);
        w.clock.set(*due_at);
    }
    // Then the transcript is there, and the first run meets an overload.
    w.meta.set_transcript(&s, transcript(100, Some(1), false));
    w.runner
        .set_outcome(Ok(limited(529, "API Error: 529 Overloaded")));
    let fired = fire_all(&w).await;
    let FireAction::Limited { waiting, .. } = &fired[0].action else {
        panic!("one real attempt is not five: {fired:?}");
    };
    assert_eq!(waiting.kind, WaitKind::Limit);
    assert!(waiting.reason.contains("attempt 2 of 5"), "{waiting:?}");
    let entry = &w.store.snapshot().await.unwrap().pending[0];
    assert_eq!((entry.retries, entry.attempts), (4, 1), "{entry:?}");
    assert_eq!(w.runner.count(), 1);
}

#[tokio::test]
async fn the_attempt_variable_counts_runs_not_looks() {
    let w = world();
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    let FireAction::Retried { due_at, .. } = &fired[0].action else {
        panic!("{fired:?}");
    };
    w.clock.set(*due_at);
    w.meta.set_transcript(&s, transcript(100, Some(1), false));
    let entry = w.store.snapshot().await.unwrap().pending[0].clone();
    assert_eq!(entry.retries, 1);
    let vars = crate::service::prompt_vars(&entry, &hook(), &SessionFacts::default(), "/w");
    assert_eq!(
        vars.get("attempt").map(String::as_str),
        Some("1"),
        "{vars:?}"
    );
}

#[test]
fn a_long_reply_keeps_its_head_and_tail_on_character_boundaries() {
    let short = "done\nCOMPLETED";
    assert_eq!(keep_reply(short), short);
    let exact = "x".repeat(2 * REPLY_KEEP_BYTES);
    assert_eq!(keep_reply(&exact), exact);
    // Three-byte characters: no cut falls inside one.
    let long = format!("START{}END", "é✓".repeat(10_000));
    let kept = keep_reply(&long);
    assert!(
        kept.starts_with("START") && kept.ends_with("END"),
        "{}",
        &kept[..20]
    );
    assert!(kept.len() <= 2 * REPLY_KEEP_BYTES + 64, "{}", kept.len());
    let (head, rest) = kept.split_once("\n[… ").unwrap();
    let (n, tail) = rest.split_once(" bytes left out …]\n").unwrap();
    assert_eq!(
        head.len() + n.parse::<usize>().unwrap() + tail.len(),
        long.len()
    );
    assert!(long.starts_with(head) && long.ends_with(tail));
}

#[tokio::test]
async fn an_entry_put_back_says_why_where_pending_shows_it() {
    let w = world();
    // No transcript for the session: it cannot run yet.
    w.service.notify(&done_event("s1")).await.unwrap();
    w.clock.advance(Duration::minutes(5));
    let fired = fire_all(&w).await;
    assert!(
        matches!(fired[0].action, FireAction::Retried { .. }),
        "{fired:?}"
    );
    let entry = &w.store.snapshot().await.unwrap().pending[0];
    let shown = entry.state_text(w.clock.now());
    assert!(
        shown.starts_with("waiting: transcript not found yet: tries again at ")
            && shown.ends_with("(retry 1 of 10)"),
        "{shown}"
    );
}

/// An interactive session that takes messages (2.1.332's inbox), `status` as its file says.
fn tui_with_inbox(status: &str) -> OpenSession {
    OpenSession {
        agent: "claude".into(),
        pid: 7,
        kind: Some("interactive".into()),
        status: Some(status.into()),
        inbox: Some("/tmp/cc-socks/7.sock".into()),
    }
}

#[tokio::test]
async fn a_follow_up_is_delivered_into_an_open_idle_conversation_and_waits_out_a_busy_one() {
    let w = world();
    w.runner.set_delivers(true);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::Ok),
        completed: Some(true),
        usage: Some(Usage {
            input_tokens: Some(10),
            cache_creation_input_tokens: Some(0),
            cache_read_input_tokens: Some(100_000),
            output_tokens: Some(1000),
        }),
        ..RunOutcome::default()
    }));
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta.set_transcript(
        &s,
        TranscriptFacts {
            model: Some("claude-sonnet-4-5".into()),
            ..transcript(60, Some(1000), false)
        },
    );
    let open = tui_with_inbox;
    // Busy: looked at again in a moment, nothing delivered mid-turn.
    w.meta.set_open(&s, Some(open("busy")));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    let FireAction::Waiting { due_at, waiting } = &fired[0].action else {
        panic!("{fired:?}");
    };
    assert!(
        waiting.reason.starts_with(crate::decide::OPEN_BUSY_WAIT),
        "{waiting:?}"
    );
    assert_eq!(*due_at, w.clock.now() + crate::decide::OPEN_BUSY_LOOK);
    assert_eq!(w.runner.count(), 0);
    // Idle: delivered, stamped once, priced from the turn's usage.
    w.meta.set_open(&s, Some(open("idle")));
    w.clock.advance(Duration::seconds(1));
    let fired = fire_all(&w).await;
    let FireAction::Ran(run) = &fired[0].action else {
        panic!("{fired:?}");
    };
    let into = w.runner.calls()[0]
        .into_open
        .clone()
        .expect("delivered, not resumed");
    assert_eq!((into.inbox.as_str(), into.pid), ("/tmp/cc-socks/7.sock", 7));
    assert_eq!(into.transcript, "/t/s1.jsonl");
    assert!(run.outcome.cost_usd.is_some_and(|c| c > 0.0), "{run:?}");
    assert!(w.meta.stamps(&s).contains_key(&post_task_id()));

    // Delivery switched off (`--deliver closed`) for the daemon or for the hook, or a
    // runner that cannot: it waits for the close as before.
    for (deliver_open, runner_can, hook_closed) in [
        (false, true, false),
        (true, false, false),
        (true, true, true),
    ] {
        let mut config = Config::new("me");
        config.policy.deliver_open = deliver_open;
        let store = InMemoryStore::seeded(t0());
        let runner = ScriptedRunner::ok();
        runner.set_delivers(runner_can);
        let meta = InMemoryMeta::new();
        let clock = ManualClock::new(t0());
        let svc = Service::new(
            Ports {
                store: store.clone(),
                meta: meta.clone(),
                runner: runner.clone(),
                prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", PROMPT),
                clock: clock.clone(),
            },
            config,
        );
        if hook_closed {
            let patch = HookPatch {
                deliver: Some(Delivery::Closed),
                ..HookPatch::default()
            };
            svc.update_hook(&post_task_id(), &patch).await.unwrap();
        }
        svc.notify(&done_event("s1")).await.unwrap();
        meta.set_transcript(&s, transcript(60, Some(1000), false));
        meta.set_open(&s, Some(open("idle")));
        clock.advance(Duration::seconds(10));
        let e = svc.claim(1).await.unwrap().remove(0);
        let r = svc.fire(&e).await.unwrap();
        assert!(
            matches!(&r.action, FireAction::Waiting { waiting, .. } if waiting.waits_for_close()),
            "{deliver_open} {runner_can} {hook_closed}: {r:?}"
        );
        assert_eq!(runner.count(), 0);
    }
}

/// The open TUI holds no cost cap: a capped hook's follow-up is not delivered into it but
/// waits for the close, and is resumed then with the cap as a run option.
#[tokio::test]
async fn a_capped_hooks_follow_up_is_not_delivered_into_the_open_tui() {
    let w = world();
    w.runner.set_delivers(true);
    let patch = HookPatch {
        max_cost: Some(crate::model::CostCap::from_usd(0.05).unwrap()),
        ..HookPatch::default()
    };
    w.service
        .update_hook(&post_task_id(), &patch)
        .await
        .unwrap();
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    // A cap needs an estimate: the conversation's model is known.
    let mut t = transcript(60, Some(1000), false);
    t.model = Some("claude-sonnet-4-5".into());
    w.meta.set_transcript(&s, t);
    w.meta.set_open(&s, Some(tui_with_inbox("idle")));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    assert!(
        matches!(&fired[0].action, FireAction::Waiting { waiting, .. } if waiting.waits_for_close()),
        "{fired:?}"
    );
    assert_eq!(w.runner.count(), 0, "nothing delivered");
    w.meta.set_open(&s, None);
    let snap = w.store.snapshot().await.unwrap();
    assert_eq!(w.service.wake_closed(&snap.pending).await.unwrap(), 1);
    w.clock.advance(Duration::seconds(10));
    let after = fire_all(&w).await;
    assert_eq!(w.runner.count(), 1, "resumed after the close: {after:?}");
    let req = w.runner.calls().pop().expect("a run");
    assert!(req.into_open.is_none(), "resumed, not delivered");
    assert_eq!(req.prompt.options.max_budget.usd(), Some(0.05));
}

#[tokio::test]
async fn a_delivery_that_never_reached_the_inbox_waits_for_the_close_and_is_resumed_once() {
    let w = world();
    w.runner.set_delivers(true);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::Requeued(
            "its inbox could not be reached: connection refused".into(),
        )),
        ..RunOutcome::default()
    }));
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta.set_transcript(&s, transcript(60, Some(1000), false));
    w.meta.set_open(&s, Some(tui_with_inbox("idle")));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    let FireAction::Waiting { waiting, .. } = &fired[0].action else {
        panic!("{fired:?}");
    };
    assert!(
        waiting.kind == WaitKind::NotTaken && waiting.reason.starts_with(crate::decide::NOT_TAKEN),
        "{waiting:?}"
    );
    assert!(w.meta.stamps(&s).is_empty(), "no run: the stamp gives way");
    let logged = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(logged.len(), 1);
    assert!(
        matches!(logged[0].outcome.status(), Status::Requeued(_)),
        "{logged:?}"
    );
    // Still open: never delivered again.
    w.clock.advance(Duration::hours(1));
    let snap = w.store.snapshot().await.unwrap();
    assert_eq!(w.service.wake_closed(&snap.pending).await.unwrap(), 0);
    // Closed: resumed, once.
    w.meta.set_open(&s, None);
    let snap = w.store.snapshot().await.unwrap();
    assert_eq!(w.service.wake_closed(&snap.pending).await.unwrap(), 1);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::Ok),
        ..RunOutcome::default()
    }));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    let calls = w.runner.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls[1].into_open.is_none(), "resumed after the close");
}

/// A person's "no" holds: a delivery the inbox took but the conversation never ran (held
/// for approval and declined, or closed first) is the follow-up's one outcome. Its stamp
/// stays; the close resumes nothing, now or later.
#[tokio::test]
async fn a_delivery_handed_over_and_declined_is_never_resumed() {
    let w = world();
    w.runner.set_delivers(true);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::skipped(
            "the conversation was closed without taking it: held for the person's approval and declined, or closed first; handed over, so not resumed",
        )),
        ..RunOutcome::default()
    }));
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta.set_transcript(&s, transcript(60, Some(1000), false));
    w.meta.set_open(&s, Some(tui_with_inbox("idle")));
    w.clock.advance(Duration::seconds(10));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert_eq!(w.meta.stamps(&s).len(), 1, "the stamp stays: {fired:?}");
    let logged = w.store.runs(&RunFilter::default()).await.unwrap();
    assert_eq!(logged.len(), 1);
    assert!(
        matches!(logged[0].outcome.status(), Status::Skipped(w) if w.contains("declined")),
        "{logged:?}"
    );
    w.meta.set_open(&s, None);
    let snap = w.store.snapshot().await.unwrap();
    assert!(snap.pending.is_empty(), "{:?}", snap.pending);
    assert_eq!(w.service.wake_closed(&snap.pending).await.unwrap(), 0);
    w.clock.advance(Duration::hours(1));
    fire_all(&w).await;
    assert_eq!(
        w.runner.count(),
        1,
        "delivered once, never resumed after the no"
    );
}

/// A conversation whose turn a limit refused, still open in a TUI with a way in and idle,
/// and `continue-after-limit` queued for it by the failure.
async fn limited_in_an_open_tui() -> (World, SessionId) {
    let w = limit_world().await;
    w.runner.set_delivers(true);
    let s = sid("s1");
    w.meta.set_transcript(
        &s,
        TranscriptFacts {
            ends_in_error: true,
            ..transcript(100, Some(1), false)
        },
    );
    w.meta.set_open(&s, Some(tui_with_inbox("idle")));
    w.service
        .notify(&failed_event(
            "s1",
            FailureKind::RateLimit,
            "API Error: Request rejected (429)",
        ))
        .await
        .unwrap();
    (w, s)
}

/// A usage limit's continuation, due while the conversation is open in a TUI with a way
/// in: first it leaves Claude Code its own continue (`own_continue_wait` from when it was
/// found due); then, the conversation still ending in the failure, it is delivered into
/// the open TUI, once.
#[tokio::test]
async fn a_limits_continuation_waits_for_the_agents_own_then_goes_into_the_open_tui() {
    let (w, _) = limited_in_an_open_tui().await;
    w.clock.advance(Duration::hours(1));
    let fired = fire_all(&w).await;
    let FireAction::Waiting { waiting, due_at } = &fired[0].action else {
        panic!("{fired:?}");
    };
    assert_eq!(waiting.kind, WaitKind::OwnContinue, "{waiting:?}");
    assert!(
        waiting.reason.contains("Claude Code continues it itself"),
        "{waiting:?}"
    );
    assert_eq!(*due_at, w.clock.now() + Policy::default().own_continue_wait);
    assert_eq!(w.runner.count(), 0, "nothing during the agent's own chance");
    w.clock.advance(Duration::minutes(9));
    assert!(
        fire_all(&w).await.is_empty(),
        "not due before the wait ends"
    );
    w.clock.advance(Duration::minutes(1));
    let fired = fire_all(&w).await;
    assert_eq!(w.runner.count(), 1, "{fired:?}");
    assert!(
        w.runner.calls()[0].into_open.is_some(),
        "into the open TUI, not a resume beside it"
    );
}

/// Claude Code's own continue (or the person) carried the conversation on during that
/// wait: the continuation is skipped, never a second "carry on".
#[tokio::test]
async fn a_limits_continuation_is_never_delivered_after_the_agents_own() {
    let (w, s) = limited_in_an_open_tui().await;
    w.clock.advance(Duration::hours(1));
    fire_all(&w).await;
    // The auto-continuation's reply, after the failure.
    w.clock.advance(Duration::minutes(2));
    w.meta.set_transcript(
        &s,
        TranscriptFacts {
            ends_in_error: false,
            last_reply_at: Some(w.clock.now()),
            ..transcript(100, Some(1), false)
        },
    );
    w.clock.advance(Duration::minutes(10));
    fire_all(&w).await;
    assert_eq!(w.runner.count(), 0);
    let logged = w.store.runs(&RunFilter::default()).await.unwrap();
    assert!(
        logged
            .iter()
            .any(|l| matches!(l.outcome.status(), Status::Skipped(why) if why == WENT_ON)),
        "{logged:?}"
    );
}

/// The agent a transcript names reaches the runner, so a runner for several agents
/// resumes each conversation with its own; a transcript that names none names none.
#[tokio::test]
async fn the_agent_of_a_conversation_reaches_the_runner() {
    for agent in [Some("codex"), None] {
        let w = world();
        let s = sid("s1");
        w.service.notify(&done_event("s1")).await.unwrap();
        w.meta.set_transcript(
            &s,
            TranscriptFacts {
                agent: agent.map(str::to_owned),
                ..transcript(60, Some(1000), false)
            },
        );
        w.clock.advance(Duration::seconds(10));
        let fired = fire_all(&w).await;
        assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
        assert_eq!(
            w.runner.calls()[0].agent.as_deref(),
            agent,
            "the run request names the conversation's agent"
        );
    }
}

/// An agent whose program cannot be started (a missing `codex`, a daemon's PATH without
/// it) does not spend the follow-up: it goes back to the queue with a backoff and runs once
/// the program is there; only after the last attempt is it an ending.
#[tokio::test]
async fn a_follow_up_whose_agent_cannot_start_goes_back_to_the_queue() {
    let w = world();
    let s = sid("s1");
    w.service.notify(&done_event("s1")).await.unwrap();
    w.meta.set_transcript(&s, transcript(0, Some(1000), false));
    w.clock.advance(Duration::seconds(10));
    let cannot = || {
        Err(crate::ports::RunnerError::Spawn {
            program: "codex".into(),
            message: "No such file or directory".into(),
        })
    };
    w.runner.set_outcome(cannot());
    let fired = fire_all(&w).await;
    let FireAction::Waiting { due_at, waiting } = &fired[0].action else {
        panic!("back in the queue: {fired:?}");
    };
    assert_eq!(*due_at, t0() + Duration::seconds(10 + 60), "a minute later");
    assert_eq!(waiting.kind, WaitKind::NotStarted);
    assert!(
        waiting.reason.contains("could not start codex")
            && waiting.reason.contains("attempt 2 of 5"),
        "{waiting:?}"
    );
    assert!(w.meta.stamps(&s).is_empty(), "not followed up yet");
    let runs = w.store.runs(&RunFilter::default()).await.unwrap();
    assert!(
        matches!(runs[..], [ref r] if matches!(r.outcome.status(), Status::Requeued(ref t) if t.contains("attempt 2 of 5"))),
        "the attempt is logged as requeued: {runs:?}"
    );
    let hook = w.store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(hook.last_status, None, "not an ending");
    // The program is there now: the next attempt runs.
    w.clock.set(*due_at);
    w.runner.set_outcome(Ok(RunOutcome {
        status: Some(Status::Ok),
        ..RunOutcome::default()
    }));
    let fired = fire_all(&w).await;
    assert!(matches!(fired[0].action, FireAction::Ran(_)), "{fired:?}");
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());

    // One that never starts ends, said so, after the last attempt.
    let w = world();
    w.service.notify(&done_event("s2")).await.unwrap();
    w.meta
        .set_transcript(&sid("s2"), transcript(0, Some(1000), false));
    w.runner.set_outcome(cannot());
    let mut waits = 0;
    let last = loop {
        w.clock.advance(Duration::hours(1));
        let fired = fire_all(&w).await;
        match &fired[0].action {
            FireAction::Waiting { waiting, .. } if waiting.kind == WaitKind::NotStarted => {
                waits += 1
            }
            FireAction::Ran(run) => break run.outcome.status(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(waits, 4, "five attempts in all");
    assert!(
        matches!(&last, Status::Skipped(t) if t.contains("could not start codex") && t.contains("after 5 attempts")),
        "{last:?}"
    );
    assert!(w.store.snapshot().await.unwrap().pending.is_empty());
}

/// The one delivery rule: into the open conversation only a follow-up its hook and the
/// daemon allow, that needs no run option or cost cap, was never left untaken and continues
/// no usage limit; and only where the conversation has a way in.
#[test]
fn a_follow_up_goes_into_the_open_conversation_only_as_it_is_and_where_there_is_a_way_in() {
    let plain = RunOptions::default();
    let with_model = RunOptions {
        model: Some("claude-opus-4-5".into()),
        ..Default::default()
    };
    let h = hook();
    fn check<'a>(hook: &'a Hook, options: Option<&'a RunOptions>) -> DeliveryCheck<'a> {
        DeliveryCheck {
            policy: Policy::default(),
            hook,
            runner_delivers: true,
            transcript_found: true,
            options,
            not_taken: 0,
        }
    }
    assert!(may_deliver(&check(&h, Some(&plain))));
    assert!(
        !may_deliver(&check(&h, Some(&with_model))),
        "a model: resumed"
    );
    assert!(!may_deliver(&check(&h, None)), "no prompt loaded");
    let closed = Hook {
        deliver: Delivery::Closed,
        ..hook()
    };
    assert!(!may_deliver(&check(&closed, Some(&plain))));
    let capped = Hook {
        max_cost: CostCap::parse("0.50").unwrap(),
        ..hook()
    };
    assert!(!may_deliver(&check(&capped, Some(&plain))), "a cost cap");
    for (name, c) in [
        (
            "daemon",
            DeliveryCheck {
                policy: Policy {
                    deliver_open: false,
                    ..Policy::default()
                },
                ..check(&h, Some(&plain))
            },
        ),
        (
            "runner",
            DeliveryCheck {
                runner_delivers: false,
                ..check(&h, Some(&plain))
            },
        ),
        (
            "transcript",
            DeliveryCheck {
                transcript_found: false,
                ..check(&h, Some(&plain))
            },
        ),
        (
            "untaken",
            DeliveryCheck {
                not_taken: 1,
                ..check(&h, Some(&plain))
            },
        ),
    ] {
        assert!(!may_deliver(&c), "{name}");
    }

    let mut open = OpenSession::new("claude", 42);
    assert_eq!(arrival(true, None), Arrival::AtDue);
    assert_eq!(arrival(false, None), Arrival::AtDue);
    assert_eq!(arrival(true, Some(&open)), Arrival::AfterClose, "no way in");
    open.inbox = Some("/run/inbox.sock".into());
    assert_eq!(arrival(true, Some(&open)), Arrival::IntoOpen);
    assert_eq!(arrival(false, Some(&open)), Arrival::AfterClose);
}

/// An event naming a follow-up is that follow-up's own only while it runs on the session:
/// the variable alone (a repository's settings can export it) proves nothing.
#[tokio::test]
async fn an_event_is_a_follow_ups_own_only_while_that_follow_up_runs() {
    let w = world();
    let s = sid("s1");
    assert!(!w.service.runs_follow_up(&s, "post-task").await.unwrap());
    w.meta.put_lease(&s, lease("post-task", "other"));
    assert!(w.service.runs_follow_up(&s, "post-task").await.unwrap());
    assert!(
        !w.service
            .runs_follow_up(&s, "continue-after-limit")
            .await
            .unwrap(),
        "another hook's name"
    );
    assert!(!w.service.runs_follow_up(&s, "no such/id").await.unwrap());
    assert!(
        !w.service
            .runs_follow_up(&sid("s2"), "post-task")
            .await
            .unwrap(),
        "another session"
    );
    // What the ways in ask: its own events change nothing, but the DONE of a failed
    // turn's continuation, which is the task's.
    let ignores = |id: Option<&'static str>, done: bool| {
        let (svc, s) = (&w.service, s.clone());
        async move { svc.ignores_follow_ups_event(&s, id, done).await.unwrap() }
    };
    assert!(ignores(Some("post-task"), true).await);
    assert!(ignores(Some("post-task"), false).await);
    assert!(!ignores(None, true).await, "a person's turn");
    w.meta.put_lease(&s, lease("continue-after-limit", "other"));
    assert!(
        !ignores(Some("continue-after-limit"), true).await,
        "a continuation's DONE"
    );
    assert!(ignores(Some("continue-after-limit"), false).await);
    w.meta.owner_gone("other");
    assert!(
        !w.service.runs_follow_up(&s, "post-task").await.unwrap(),
        "a run whose process is gone"
    );
    assert!(
        !ignores(Some("continue-after-limit"), false).await,
        "a variable no running follow-up bears out"
    );
}
