//! `install` / `uninstall` on Claude Code's settings.json.

use serde_json::{Value, json};

use crate::support::*;

fn settings(app: &App) -> std::path::PathBuf {
    app.env.claude_home().join("settings.json")
}

#[test]
fn install_merges_keeps_everything_else_and_is_idempotent() {
    let app = App::fake();
    let existing = json!({"model": "opus", "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/usr/bin/other-tool stop"}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}});
    std::fs::write(
        settings(&app),
        serde_json::to_string_pretty(&existing).unwrap(),
    )
    .unwrap();
    let dry = app.ok(&["install", "--dry-run", "--trigger", "both"]);
    assert!(dry.contains("would write"), "{dry}");
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(settings(&app)).unwrap()).unwrap(),
        existing,
        "a dry run changes nothing"
    );

    app.ok(&["install", "--trigger", "both"]);
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"], existing["permissions"]);
    assert_eq!(v["hooks"]["PreToolUse"], existing["hooks"]["PreToolUse"]);
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(
        stop[0], existing["hooks"]["Stop"][0],
        "the other Stop hook stays first"
    );
    assert_eq!(stop[1]["hooks"][0]["command"], app.hook_command(""));
    assert_eq!(
        v["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
        app.hook_command(" --on session-end")
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "permissions", "hooks"], "key order is kept");

    let bytes = std::fs::read(settings(&app)).unwrap();
    let again = app.ok(&["install", "--trigger", "both"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(
        std::fs::read(settings(&app)).unwrap(),
        bytes,
        "running it twice changes nothing"
    );

    // Switching the trigger replaces our entries, never the others.
    app.ok(&["install", "--trigger", "stop"]);
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
    let end = v["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        end.ends_with(" claude-hook"),
        "with the stop trigger, SessionEnd only wakes what waits: {end}"
    );

    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(doctor.contains("ok   hook installed"), "{doctor}");

    app.ok(&["uninstall"]);
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    assert_eq!(
        v, existing,
        "uninstall leaves exactly what was there before"
    );
}

#[test]
fn an_invalid_settings_file_is_refused_and_left_as_it_was() {
    let app = App::fake();
    for text in [
        "{\"hooks\": [1, 2",
        "{\n  // a comment\n  \"model\": \"opus\"\n}\n",
        "{\"model\": \"opus\",}",
        "[1, 2]",
        "{\"hooks\": []}",
        "{\"hooks\": {\"Stop\": {}}}",
    ] {
        std::fs::write(settings(&app), text).unwrap();
        let o = app.run(&["install"]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("settings.json") && err.contains("left as it is"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(settings(&app)).unwrap(), text);
    }
}

/// The corpus: settings files written for this project in the shapes real ones have (every
/// event, several groups, matchers, timeouts, async, nested quoting, unicode, Windows
/// paths, 2/3/4/8 spaces, tabs, CRLF, minified, no final newline, unusual key orders).
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e/settings");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    assert!(files.len() >= 28, "{}", dir.display());
    files
}

/// `original` with our groups added last under each event, as install must leave it.
fn with_ours(original: &[u8], ours: &[(&str, String)]) -> Value {
    let mut v: Value = serde_json::from_slice(original).unwrap();
    for (event, command) in ours {
        let hooks = v
            .as_object_mut()
            .unwrap()
            .entry("hooks")
            .or_insert(json!({}));
        let groups = hooks
            .as_object_mut()
            .unwrap()
            .entry(*event)
            .or_insert(json!([]));
        groups
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [{"type": "command", "command": command, "timeout": 30}]}));
    }
    v
}

/// How a text lays itself out: line endings, the characters it indents with, and whether
/// it ends with a newline.
fn layout(text: &str) -> (bool, bool, Vec<char>, bool) {
    let crlf = text.contains("\r\n");
    let lone_lf = text.replace("\r\n", "").contains('\n');
    let mut indent: Vec<char> = text
        .lines()
        .flat_map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t'))
        .collect();
    indent.sort_unstable();
    indent.dedup();
    (crlf, lone_lf, indent, text.ends_with('\n'))
}

#[test]
fn install_then_uninstall_gives_every_file_of_the_corpus_back_byte_for_byte() {
    let app = App::fake();
    let stop = ("Stop", app.hook_command(""));
    let end_wake = ("SessionEnd", app.hook_command(""));
    let end_queue = ("SessionEnd", app.hook_command(" --on session-end"));
    let failure = ("StopFailure", app.hook_command(""));
    let mut byte_for_byte = 0;
    for (name, original) in corpus() {
        for (trigger, ours) in [
            (
                "stop",
                vec![stop.clone(), end_wake.clone(), failure.clone()],
            ),
            (
                "both",
                vec![stop.clone(), end_queue.clone(), failure.clone()],
            ),
        ] {
            std::fs::write(settings(&app), &original).unwrap();
            app.ok(&["install", "--trigger", trigger]);
            let installed = std::fs::read(settings(&app)).unwrap();
            let got: Value = serde_json::from_slice(&installed)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", String::from_utf8_lossy(&installed)));
            assert_eq!(got, with_ours(&original, &ours), "{name} ({trigger})");
            let (before, after) = (
                String::from_utf8(original.clone()).unwrap(),
                String::from_utf8(installed.clone()).unwrap(),
            );
            let (crlf, lone, indent, final_nl) = layout(&before);
            let (crlf2, lone2, indent2, final_nl2) = layout(&after);
            assert_eq!(
                final_nl, final_nl2,
                "{name}: the final newline (or its absence) is kept:\n{after}"
            );
            if crlf {
                assert!(!lone2, "{name}: no bare LF in a CRLF file:\n{after:?}");
            }
            if lone {
                assert!(!crlf2, "{name}: no CRLF in an LF file:\n{after:?}");
            }
            if !indent.is_empty() {
                assert_eq!(
                    indent2, indent,
                    "{name}: indented as the file was:\n{after}"
                );
            }
            assert!(
                after.starts_with(
                    before
                        .trim_end_matches(['}', '\n', '\r', ' '])
                        .get(..before.find("\"hooks\"").unwrap_or(0))
                        .unwrap_or("")
                ),
                "{name}: everything before the hooks is as it was:\n{after}"
            );

            app.ok(&["uninstall"]);
            let back = std::fs::read(settings(&app)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&back),
                String::from_utf8_lossy(&original),
                "{name} ({trigger}): uninstall gives back what was there"
            );
            byte_for_byte += 1;
        }
    }
    eprintln!("{byte_for_byte} install/uninstall round trips, all byte for byte");
    assert!(
        !app.data_dir().join("installed.json").exists()
            || std::fs::read_to_string(app.data_dir().join("installed.json"))
                .unwrap()
                .trim()
                == "{}",
        "nothing is left recorded once uninstalled"
    );
}

#[test]
fn a_settings_file_install_created_is_removed_by_uninstall_and_a_users_own_empty_list_is_kept() {
    let app = App::fake();
    let _ = std::fs::remove_file(settings(&app));
    app.ok(&["install"]);
    assert!(settings(&app).exists());
    app.ok(&["uninstall"]);
    assert!(
        !settings(&app).exists(),
        "install made it, uninstall takes it away"
    );

    // The user's own empty containers stay, even when ours were the only entries in them.
    let own = "{\n  \"hooks\": {\n    \"Stop\": [],\n    \"SessionEnd\": []\n  }\n}\n";
    std::fs::write(settings(&app), own).unwrap();
    app.ok(&["install"]);
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 1);
    app.ok(&["uninstall"]);
    assert_eq!(std::fs::read_to_string(settings(&app)).unwrap(), own);

    // A container install created but the user has put something in since stays too.
    std::fs::write(settings(&app), "{}\n").unwrap();
    app.ok(&["install"]);
    let mut v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "mine"}]}));
    std::fs::write(settings(&app), serde_json::to_string_pretty(&v).unwrap()).unwrap();
    app.ok(&["uninstall"]);
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&app)).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}})
    );
}

#[test]
fn a_symlinked_settings_file_stays_a_link_and_its_target_gets_the_entry() {
    use std::os::unix::fs::PermissionsExt;
    let app = App::fake();
    let dotfiles = app.env.dir.path().join("dotfiles/claude");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("settings.json");
    let original = "{\n    \"model\": \"opus\"\n}";
    std::fs::write(&target, original).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let _ = std::fs::remove_file(settings(&app));
    std::os::unix::fs::symlink(&target, settings(&app)).unwrap();

    app.ok(&["install"]);
    let link = std::fs::symlink_metadata(settings(&app)).unwrap();
    assert!(link.file_type().is_symlink(), "still a link");
    let v: Value = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        app.hook_command(""),
        "the dotfiles copy has the entry"
    );
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let strays: Vec<_> = std::fs::read_dir(&dotfiles)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        strays.len(),
        1,
        "no temp file left beside the target: {strays:?}"
    );

    app.ok(&["uninstall"]);
    assert!(
        std::fs::symlink_metadata(settings(&app))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), original);
}

#[test]
fn project_scope_writes_a_portable_command_and_local_scope_this_machines_path() {
    let app = App::fake();
    let out = app.ok(&["install", "--scope", "project", "--daemon", "none"]);
    assert!(out.contains("portable"), "{out}");
    let p = app.proj.join(".claude/settings.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let command = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !command.contains(APP) && command.contains("exec hooks-app claude-hook"),
        "no machine path: {command}"
    );
    assert!(!settings(&app).exists(), "the user scope is untouched");

    // Run as Claude Code runs it (/bin/sh -c), with a Stop event that says DONE.
    let t = app.transcript("p1", &app.proj, 1000);
    // Larger than a pipe's buffer: a command that did not read it all would break the pipe.
    let event = json!({"hook_event_name": "Stop", "session_id": "p1", "cwd": app.proj,
        "transcript_path": t, "last_assistant_message": "all done\nDONE", "padding": "x".repeat(256 * 1024)})
    .to_string();
    let bin_dir = app.env.dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    // The hooks-app on PATH; the wrapper names the scratch data folder, which a hook call
    // does not take from the environment (it finds the one under the user database's home).
    hooks_testkit::write_script(
        &bin_dir.join("hooks-app"),
        &format!(
            "#!/bin/sh\nexec {APP} --data-dir {} \"$@\"\n",
            hooks_platform::shell_quote(&app.data_dir().to_string_lossy())
        ),
    );
    let sh = |path: &std::path::Path| {
        app.hook_as_claude(
            &command,
            &app.proj,
            &[("PATH", path.display().to_string())],
            &event,
        )
    };
    let without = sh(std::path::Path::new("/usr/bin:/bin"));
    assert_eq!(
        without.status.code(),
        Some(0),
        "a quiet no-op where hooks-app is not installed"
    );
    assert!(
        without.stdout.is_empty() && without.stderr.is_empty(),
        "{without:?}"
    );
    assert!(
        !app.store_file().exists(),
        "nothing was queued, no store made"
    );
    let with = sh(&std::path::PathBuf::from(format!(
        "{}:/usr/bin:/bin",
        bin_dir.display()
    )));
    assert_eq!(with.status.code(), Some(0), "{with:?}");
    assert_eq!(
        app.pending().len(),
        1,
        "found on PATH, it queued the follow-up"
    );

    app.ok(&["install", "--scope", "local"]);
    let local = app.proj.join(".claude/settings.local.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&local).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        app.hook_command("")
    );
    let doctor = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        doctor.contains("settings.local.json") && doctor.contains(".claude/settings.json"),
        "{doctor}"
    );
}

#[test]
fn doctor_on_a_fresh_machine_names_each_fix() {
    let app = App::fake();
    let o = app.run(&["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8(o.stdout).unwrap();
    eprintln!("{out}");
    for needle in [
        "FAIL hook installed",
        "fix: hooks-app install --scope user",
        "FAIL store readable",
        "fix: hooks-app init",
        "FAIL daemon",
        // The first steps, as the README and --help give them: no daemon to start by hand.
        "fix: hooks-app init && hooks-app install (a daemon then starts on demand)",
        "ok   claude",
    ] {
        assert!(out.contains(needle), "{needle:?} in\n{out}");
    }
    assert!(!app.data_dir().exists(), "doctor creates nothing");
    // install chooses the on-demand daemon: none needs to run until something is queued.
    app.ok(&["init"]);
    app.ok(&["install"]);
    let out = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        out.contains("ok   store readable")
            && out.contains("ok   prompt file")
            && out.contains("all good"),
        "{out}"
    );

    // A prompt file Claude Code would also take for a subagent of its own.
    let prompt = app.proj.join(".claude/agents/hooks/post-task.md");
    let text = std::fs::read_to_string(&prompt).unwrap();
    let body = text.split_once("\n---\n").map_or(text.as_str(), |(_, b)| b);
    std::fs::write(
        &prompt,
        format!("---\nname: post-task\ndescription: Tidies up after a task\n---\n{body}"),
    )
    .unwrap();
    // (doctor exits 1 here: no daemon runs.)
    let doctor: Value = serde_json::from_slice(&app.run(&["doctor", "--json"]).stdout).unwrap();
    let check = doctor
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "prompt file")
        .cloned()
        .unwrap();
    assert_eq!(
        (check["ok"].as_bool(), check["warning"].as_bool()),
        (Some(true), Some(true)),
        "{check}"
    );
    assert!(
        check["detail"].as_str().unwrap().contains("subagent"),
        "{check}"
    );
    let out = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(out.contains("warn prompt file"), "{out}");
}

/// Running `install` again applies what it is given, keeps what it is not, and says what
/// changed (it said "nothing to change" and left `--http` unset, and a later install with
/// another option set `http` back to none).
#[test]
fn install_again_applies_what_it_is_given_and_keeps_the_rest() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["install"]);
    let daemon = || -> Value {
        serde_json::from_slice(&std::fs::read(app.data_dir().join("daemon.json")).unwrap()).unwrap()
    };
    let out = app.ok(&["install", "--http", "127.0.0.1:18999"]);
    assert!(
        out.contains("changed: http none → 127.0.0.1:18999"),
        "{out}"
    );
    assert_eq!(daemon()["http"], "127.0.0.1:18999");
    let out = app.ok(&["install", "--idle-exit", "60"]);
    assert!(out.contains("changed: idle exit 300 s → 60 s"), "{out}");
    assert_eq!(
        (daemon()["http"].as_str(), daemon()["idleExitSecs"].as_u64()),
        (Some("127.0.0.1:18999"), Some(60)),
        "what was not given is kept"
    );
    app.ok(&["install", "--done-marker", "ALL FINISHED"]);
    assert_eq!(
        daemon()["http"],
        "127.0.0.1:18999",
        "another option keeps http"
    );
    let out = app.ok(&["install", "--no-http", "--daemon", "none"]);
    assert!(
        out.contains("daemon on-demand → none") && out.contains("http 127.0.0.1:18999 → none"),
        "{out}"
    );
    app.ok(&["install"]);
    assert_eq!(daemon()["mode"], "none", "a mode chosen is kept");
}

/// `uninstall` says what it leaves in every folder `init` wrote prompt files into, not
/// only the workspace's.
#[test]
fn uninstall_names_the_prompt_files_init_wrote_in_every_folder() {
    let app = App::fake();
    app.ok(&["init"]);
    let other = app.env.workdir("other");
    let o = app
        .cmd(&["init", "--workspace", "."])
        .current_dir(&other)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    app.ok(&["install", "--daemon", "none"]);
    // A file the person deleted since is not named.
    std::fs::remove_file(other.join(".claude/agents/hooks/post-task.md")).unwrap();
    let out = app.ok(&["uninstall"]);
    for (dir, files) in [
        (&app.proj, "continue-after-limit.md, post-task.md"),
        (&other, "continue-after-limit.md"),
    ] {
        let line = format!(
            "left: the prompt files in {} ({files});",
            dir.join(".claude/agents/hooks").display()
        );
        assert!(out.contains(&line), "{line}\n{out}");
    }
}
