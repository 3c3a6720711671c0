//! With small fake `claude` scripts.

use std::time::Duration;

use hooks_core::Status;
use hooks_core::ports::{Runner, RunnerError};
use hooks_core::prompt::RunOptions;
use hooks_testkit::{ClaudeEnv, MockApi, wait_until, write_script};

use super::*;

struct Fake {
    _api: MockApi,
    env: ClaudeEnv,
    script: std::path::PathBuf,
}

fn fake(body: &str) -> Fake {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let script = env.dir.path().join("fake-claude");
    write_script(&script, &format!("#!/bin/sh\n{body}\n"));
    Fake {
        _api: api,
        env,
        script,
    }
}

async fn run(f: &Fake, timeout: Duration) -> Result<hooks_core::RunOutcome, RunnerError> {
    let work = f.env.workdir("w");
    runner_for(&f.env, &f.script, timeout)
        .run(&request(
            "abc-123",
            &work,
            "the prompt",
            RunOptions::default(),
        ))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_env_and_cwd_are_as_specified() {
    let f = fake(
        "printf '%s\\n' \"$@\" > \"$PWD/args\"; echo \"$HOOKS_APP_FOLLOW_UP\" > \"$PWD/env\"; [ -t 0 ] || cat > \"$PWD/stdin\"\nprintf '%s\\n' '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\\nCOMPLETED\",\"num_turns\":2,\"session_id\":\"abc-123\",\"total_cost_usd\":0.5,\"unknown\":{\"x\":1}}'",
    );
    let work = f.env.workdir("w");
    let opts = {
        let mut o = RunOptions::default();
        o.model = Some("sonnet".into());
        o.max_turns = Some(3);
        o.allowed_tools = vec!["Read".into(), "Bash(git *)".into()];
        o
    };
    let o = runner_for(&f.env, &f.script, Duration::from_secs(30))
        .run(&request("abc-123", &work, "--the prompt", opts))
        .await
        .unwrap();
    assert_eq!(
        (o.status, o.completed, o.num_turns, o.cost_usd),
        (Some(Status::Ok), Some(true), Some(2), Some(0.5))
    );
    assert_eq!(o.usage, None, "missing fields stay missing");
    let args = std::fs::read_to_string(work.join("args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "-p",
            "--resume",
            "abc-123",
            "--output-format",
            "json",
            "--model",
            "sonnet",
            "--max-turns",
            "3",
            "--allowedTools",
            "Read,Bash(git *)",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(work.join("env")).unwrap().trim(),
        "post-task"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("stdin")).unwrap(),
        "--the prompt",
        "the prompt comes on stdin, never on the command line"
    );
}

/// An appended system prompt is prompt text: it reaches `claude` in a file only the user
/// can read, never on the command line (which every local user reads in `/proc`).
#[tokio::test(flavor = "multi_thread")]
async fn the_appended_system_prompt_is_a_private_file_not_an_argument() {
    let f = fake(
        "printf '%s\\n' \"$@\" > \"$PWD/args\"; while [ $# -gt 0 ]; do [ \"$1\" = --append-system-prompt-file ] && { cat \"$2\" > \"$PWD/system\"; stat -c %a \"$2\" > \"$PWD/mode\"; echo \"$2\" > \"$PWD/path\"; }; shift; done; cat >/dev/null\nprintf '%s\\n' '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"session_id\":\"abc-123\"}'",
    );
    let work = f.env.workdir("w");
    let opts = {
        let mut o = RunOptions::default();
        o.append_system_prompt = Some("SECRET HOUSE RULES".into());
        o
    };
    let o = runner_for(&f.env, &f.script, Duration::from_secs(30))
        .run(&request("abc-123", &work, "the prompt", opts))
        .await
        .unwrap();
    assert_eq!(o.status, Some(Status::Ok));
    let args = std::fs::read_to_string(work.join("args")).unwrap();
    assert!(!args.contains("SECRET"), "{args}");
    assert!(args.contains("--append-system-prompt-file"), "{args}");
    assert_eq!(
        std::fs::read_to_string(work.join("system")).unwrap(),
        "SECRET HOUSE RULES"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("mode")).unwrap().trim(),
        "600"
    );
    let path = std::fs::read_to_string(work.join("path")).unwrap();
    assert!(
        !std::path::Path::new(path.trim()).exists(),
        "removed when the run ended"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_stdout_is_an_error() {
    let f = fake("echo 'this is not json'; exit 0");
    let o = run(&f, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        o.status,
        Some(Status::error("unreadable output: this is not json"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn megabytes_of_output_are_bounded() {
    let f = fake(
        "head -c 30000000 /dev/zero | tr '\\0' 'x'; head -c 5000000 /dev/zero | tr '\\0' 'e' >&2; exit 0",
    );
    let o = run(&f, Duration::from_secs(60)).await.unwrap();
    let s = o.status.unwrap().to_string();
    assert!(
        s.starts_with("error: ") && s.len() < 400,
        "a bounded error: {} chars",
        s.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn non_zero_exit_with_nothing_on_stdout() {
    let f = fake("echo 'Error: something broke' >&2; echo 'second line' >&2; exit 3");
    let o = run(&f, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        (o.status, o.exit_code),
        (Some(Status::error("Error: something broke")), Some(3))
    );
    let silent = fake("exit 4");
    let o = run(&silent, Duration::from_secs(30)).await.unwrap();
    assert_eq!(o.status, Some(Status::error("exit code 4 with no output")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_binary_cannot_start() {
    let f = fake("exit 0");
    let work = f.env.workdir("w");
    let missing = f.env.dir.path().join("no-such-claude");
    let e = runner_for(&f.env, &missing, Duration::from_secs(5))
        .run(&request("abc", &work, "x", RunOptions::default()))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, RunnerError::Spawn { message, .. } if message.contains("No such file")),
        "{e:?}"
    );
    let gone = f.env.dir.path().join("gone");
    let e = runner_for(&f.env, &f.script, Duration::from_secs(5))
        .run(&request("abc", &gone, "x", RunOptions::default()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_ignores_sigterm_is_killed_with_its_group() {
    // The script ignores SIGTERM and leaves a grandchild that ignores it too.
    let f = fake("trap '' TERM\n(trap '' TERM; sleep 600) &\nsleep 600");
    let o = run(&f, Duration::from_secs(1)).await.unwrap();
    let s = o.status.unwrap().to_string();
    assert!(s.starts_with("error: timed out after 1s"), "{s}");
    assert!(
        wait_until(5, || f.env.leftovers().is_empty()),
        "left running: {:?}",
        f.env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn leftovers_of_a_finished_run_are_ended() {
    let f = fake(
        "(sleep 600) &\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}'",
    );
    let o = run(&f, Duration::from_secs(30)).await.unwrap();
    assert_eq!((o.status, o.completed), (Some(Status::Ok), Some(false)));
    assert!(
        wait_until(5, || f.env.leftovers().is_empty()),
        "left running: {:?}",
        f.env.leftovers()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_started_run_names_its_process_and_leftovers_of_a_dead_runner_can_be_ended() {
    // The follow-up starts a process of its own, then waits.
    let f = fake("sleep 300 &\necho $! > \"$PWD/grandchild\"\nexec sleep 300");
    let work = f.env.workdir("w");
    let runner = runner_for(&f.env, &f.script, Duration::from_secs(600));
    let handle = runner
        .start(&request("abc-123", &work, "p", RunOptions::default()))
        .await
        .unwrap();
    let p = handle.process().expect("the child is named");
    assert_eq!(
        hooks_platform::process::process(p.pid).unwrap().start,
        p.start
    );
    assert!(wait_until(10, || work.join("grandchild").exists()));
    assert!(wait_until(10, || f.env.leftovers().len() == 2));
    // The runner dies without cleaning up: its guard is never run, and the child goes
    // the way a parent-death signal would take it.
    std::mem::forget(handle);
    unsafe { libc::kill(p.pid as i32, libc::SIGKILL) };
    assert!(
        wait_until(10, || f.env.leftovers().len() == 1),
        "{:?}",
        f.env.leftovers()
    );
    let later = hooks_core::ProcessRef {
        pid: p.pid,
        start: p.start + 1_000_000,
    };
    assert_eq!(
        runner.end_leftovers(&later).await,
        0,
        "a group led by another process with that pid is never touched"
    );
    assert_eq!(f.env.leftovers().len(), 1);
    assert_eq!(runner.end_leftovers(&p).await, 1);
    assert!(
        wait_until(10, || f.env.leftovers().is_empty()),
        "{:?}",
        f.env.leftovers()
    );
}
