//! The composed binary, end to end: a conversation ends `DONE`, the follow-up is queued,
//! and `tick` hands it to the team's script through `--runner script`; the run is recorded
//! like any other. And the whole command line knows the adapters by name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_script-agent-hooks");

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    proj: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let proj = root.join("proj");
        for d in ["home", "claude", "proj"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let agent = root.join("agent.sh");
        std::fs::write(
            &agent,
            "#!/bin/sh\ncat > \"$PWD/prompt-seen.txt\"\necho \"tidied up for $HOOKS_SESSION_ID ($HOOKS_APP_FOLLOW_UP)\"\necho COMPLETED\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        Self {
            _dir: dir,
            root,
            proj,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("HOOKS_") || k.starts_with("CLAUDE") || k.starts_with("ANTHROPIC") {
                c.env_remove(&*k);
            }
        }
        c.env("HOME", self.root.join("home"))
            .env("XDG_DATA_HOME", self.root.join("home/.local/share"))
            .env("HOOKS_DATA_DIR", self.root.join("data"))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("HOOKS_RUNNER", "script")
            .env("HOOKS_RUNNER_URL", self.root.join("agent.sh"))
            .args(args)
            .current_dir(&self.proj)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// A finished conversation's transcript, its last reply ending `DONE`.
    fn transcript(&self, session: &str) -> PathBuf {
        let dir = self.root.join("claude/projects/-proj");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{session}.jsonl"));
        let line = serde_json::json!({"type": "assistant", "cwd": self.proj, "isSidechain": false,
            "sessionId": session, "message": {"id": "m1", "model": "claude-x",
            "content": [{"type": "text", "text": "built it\nDONE"}],
            "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}});
        std::fs::write(&p, format!("{line}\n")).unwrap();
        p
    }
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn a_done_conversation_is_followed_up_by_the_teams_script() {
    let w = World::new();
    w.ok(&["init"]);
    w.ok(&["hooks", "update", "post-task", "--delay", "0"]);
    let t = w.transcript("0b7c6f1e-1111-4e2e-9d3a-000000000001");
    w.ok(&[
        "notify",
        "--session",
        "0b7c6f1e-1111-4e2e-9d3a-000000000001",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    w.ok(&["tick", "--quiet-period", "0"]);
    let runs: serde_json::Value = serde_json::from_str(&w.ok(&["runs", "--json"])).unwrap();
    let runs = runs.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    assert_eq!(
        (r["hookId"].as_str(), r["status"].as_str()),
        (Some("post-task"), Some("ok")),
        "{r}"
    );
    assert_eq!(r["completed"], true, "{r}");
    assert!(
        r["reply"].as_str().is_some_and(
            |s| s.contains("tidied up for 0b7c6f1e-1111-4e2e-9d3a-000000000001 (post-task)")
        ),
        "the script's reply is kept, and it ran as a follow-up: {r}"
    );
    let seen = text(&w.proj.join("prompt-seen.txt"));
    assert!(
        seen.contains("COMPLETED"),
        "the script got post-task's prompt on stdin, in the project: {seen:?}"
    );
    // Once per hook and session: a second DONE of the same conversation runs nothing.
    w.ok(&[
        "notify",
        "--session",
        "0b7c6f1e-1111-4e2e-9d3a-000000000001",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    w.ok(&["tick", "--quiet-period", "0"]);
    let again: serde_json::Value = serde_json::from_str(&w.ok(&["runs", "--json"])).unwrap();
    assert_eq!(again.as_array().map(Vec::len), Some(1), "{again}");
}

#[test]
fn the_command_line_knows_the_added_adapters_by_name() {
    let w = World::new();
    // The memory store: made and seeded in this process by a command that writes.
    let changed = w.ok(&[
        "hooks",
        "update",
        "post-task",
        "--delay",
        "5",
        "--store",
        "memory:",
    ]);
    assert!(changed.contains("post-task"), "{changed}");
    let o = w.run(&["hooks", "list", "--store", "memory:somewhere"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("takes nothing after the colon"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // An unknown store or runner is refused with the names this build knows.
    let o = w.run(&["hooks", "list", "--store", "redis://x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("or memory:…"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = w.run(&["hooks", "list", "--runner", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("runner: must be one of claude, codex, webhook, script"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // doctor checks the added runner, not claude.
    w.ok(&["init"]);
    let doctor = String::from_utf8_lossy(&w.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!(
            "script (added by this build): runs {}",
            w.root.join("agent.sh").display()
        )),
        "{doctor}"
    );
}

/// The team's runner is checked for what a run needs: a missing program is a failing
/// check naming it, and commands that run nothing still work.
#[test]
fn doctor_finds_a_missing_program_and_listing_needs_no_runner() {
    let w = World::new();
    w.ok(&["init"]);
    let missing = w.root.join("no-such-agent.sh");
    let url = missing.to_str().unwrap();
    let doctor = w.run(&["doctor", "--runner-url", url]);
    let out = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(
        !doctor.status.success(),
        "a missing program fails doctor: {out}"
    );
    assert!(
        out.contains(&format!("the program {url} is not there")),
        "doctor names the program: {out}"
    );
    // A runner that cannot be made does not stop what runs nothing.
    let listed = w.ok(&["hooks", "list", "--runner", "script", "--runner-url", ""]);
    assert!(listed.contains("post-task"), "{listed}");
}

/// A person's settings with a hook of their own and hooks-app's entry: this binary,
/// installed beside it, adds and takes out only its own.
#[test]
fn a_binary_of_another_name_installs_and_uninstalls_only_its_own_entries() {
    let w = World::new();
    let settings = w.root.join("claude/settings.json");
    let original = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./lint.sh" } ] }
    ],
    "Stop": [
      { "hooks": [ { "type": "command", "command": "/usr/local/bin/hooks-app claude-hook", "timeout": 30 } ] }
    ]
  }
}
"#;
    std::fs::write(&settings, original).unwrap();
    w.ok(&["init"]);
    w.ok(&["install", "--daemon", "none"]);
    w.ok(&["install", "--daemon", "none"]);
    let after: serde_json::Value = serde_json::from_str(&text(&settings)).unwrap();
    let commands = |event: &str| -> Vec<String> {
        after["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .filter_map(|h| h["command"].as_str().map(str::to_owned))
            .collect()
    };
    let stop = commands("Stop");
    let own = |cs: &[String]| cs.iter().filter(|c| c.contains(BIN)).count();
    assert_eq!(
        own(&stop),
        1,
        "one entry of this binary after two installs: {stop:?}"
    );
    assert!(
        stop.iter()
            .any(|c| c == "/usr/local/bin/hooks-app claude-hook"),
        "hooks-app's entry is not this binary's to replace: {stop:?}"
    );
    for event in ["SessionEnd", "StopFailure"] {
        assert_eq!(own(&commands(event)), 1, "{event}: {after}");
    }
    assert_eq!(commands("PreToolUse"), ["./lint.sh"]);
    let doctor = String::from_utf8_lossy(&w.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(settings.to_str().unwrap()) && !doctor.contains("not installed"),
        "doctor finds this binary's entries: {doctor}"
    );
    w.ok(&["uninstall"]);
    assert_eq!(
        text(&settings),
        original,
        "uninstall takes out its own entries and nothing else, to the byte"
    );
}

#[test]
fn a_command_that_only_reads_makes_no_store() {
    let w = World::new();
    for args in [
        &["hooks", "list", "--store", "memory:"][..],
        &["pending", "--store", "memory:"],
        &["status", "--store", "memory:"],
    ] {
        let o = w.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("there is none to read"),
            "{args:?}: the adapter was asked not to make one: {err}"
        );
    }
    // And with the JSON store: an empty data folder stays empty.
    let o = w.run(&["pending"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("(run script-agent-hooks init)"),
        "the message names this binary: {err}"
    );
    assert!(
        !w.root.join("data/hooks.json").exists(),
        "a read-only command made the JSON store"
    );
    // A store migration says what the adapter did: the memory store has nothing to do.
    let out = w.ok(&["store", "migrate", "--store", "memory:"]);
    assert!(out.contains("nothing to do"), "{out}");
}
