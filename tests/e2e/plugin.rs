//! The Claude Code plugin this repository's marketplace holds (`.claude-plugin/`,
//! `plugins/hooks-app/`), installed into the real Claude Code from the checkout, offline.

use std::path::Path;
use std::process::Command;

use hooks_testkit::{claude_bin, workspace_root, write_script};
use serde_json::Value;

use crate::support::{APP, App};

/// `claude plugin ARGS` in the scratch user's home; its output, on success.
fn plugin(app: &App, args: &[&str]) -> String {
    let mut c = Command::new(claude_bin());
    c.arg("plugin").args(args).current_dir(&app.proj);
    app.env.apply(&mut c);
    let out = c.output().expect("run claude plugin");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "claude plugin {args:?}: {text}");
    text
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|_| "null".into()))
        .unwrap_or(Value::Null)
}

/// The record `install --plugin` writes in the plugin's data folder.
fn record(app: &App) -> std::path::PathBuf {
    app.env
        .claude_home()
        .join("plugins/data/hooks-app-hooks-app/hooks-app.sh")
}

/// The marketplace from this checkout, and its plugin installed, in the scratch user's
/// Claude Code.
fn add_and_install_plugin(app: &App) {
    let root = workspace_root();
    let added = plugin(app, &["marketplace", "add", &root.to_string_lossy()]);
    assert!(added.contains("hooks-app"), "{added}");
    plugin(app, &["install", "hooks-app@hooks-app"]);
}

/// `doctor` says no hook is installed anywhere.
#[track_caller]
fn doctor_finds_no_hook(app: &App) {
    let doctor = app.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("hook installed") && l.contains("no claude-hook entry")),
        "{doctor}"
    );
}

#[test]
fn the_plugin_from_this_checkout_queues_post_task_and_leaves_nothing_when_uninstalled() {
    let app = App::real();
    app.ok(&["init"]);
    // An earlier `install` put an entry in the user's settings; the plugin takes over.
    app.ok(&["install", "--daemon", "none"]);
    let settings = app.env.claude_home().join("settings.json");
    assert!(
        std::fs::read_to_string(&settings)
            .unwrap()
            .contains("claude-hook")
    );

    add_and_install_plugin(&app);
    // Until `install --plugin` says which hooks-app it runs, the plugin runs none: the
    // settings entry is still the one that queues.
    assert!(!record(&app).exists());
    let said = app.ok(&["install", "--plugin", "--daemon", "none"]);
    assert!(said.contains("from the Claude Code plugin"), "{said}");
    assert!(said.contains("plugin: runs this hooks-app"), "{said}");
    let line = std::fs::read_to_string(record(&app)).unwrap();
    assert!(
        line.starts_with("exec ") && line.contains(APP) && line.ends_with(" \"$@\"\n"),
        "the record names this binary by its path: {line}"
    );
    let s = std::fs::read_to_string(&settings).unwrap();
    assert!(
        !s.contains("claude-hook"),
        "install --plugin took the settings entry out: {s}"
    );
    assert_eq!(
        read_json(&settings)["enabledPlugins"]["hooks-app@hooks-app"],
        Value::Bool(true),
        "and kept the plugin's: {s}"
    );
    let doctor = app.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    let line = doctor
        .lines()
        .find(|l| l.contains("hook installed"))
        .unwrap_or_default();
    assert!(
        line.contains("plugins/cache/hooks-app") && line.contains("StopFailure"),
        "doctor sees the plugin's hooks: {doctor}"
    );

    // Disabled, its hooks do not run, and doctor says no hook is installed.
    plugin(&app, &["disable", "hooks-app@hooks-app"]);
    doctor_finds_no_hook(&app);
    plugin(&app, &["enable", "hooks-app@hooks-app"]);

    // A conversation that ends with DONE: the plugin's Stop hook queued post-task.
    let sid = app.claude_session("build the feature SAY_DONE");
    assert_eq!(app.queued(), [("post-task".to_owned(), sid.clone())]);
    app.ok(&["pending", "drop", "post-task", &sid]);

    // Uninstalled: Claude Code's files say nothing of it, and a DONE queues nothing.
    plugin(&app, &["uninstall", "hooks-app@hooks-app"]);
    plugin(&app, &["marketplace", "remove", "hooks-app"]);
    let s = read_json(&settings);
    assert_eq!(s["enabledPlugins"], serde_json::json!({}), "{s}");
    assert_eq!(s["extraKnownMarketplaces"], serde_json::json!({}), "{s}");
    assert!(!s.to_string().contains("claude-hook"), "{s}");
    let installed = read_json(&app.env.claude_home().join("plugins/installed_plugins.json"));
    assert_eq!(installed["plugins"], serde_json::json!({}), "{installed}");
    assert!(
        !record(&app).parent().unwrap().exists(),
        "Claude Code took the plugin's data folder, and the record in it, away"
    );
    app.claude("build another feature SAY_DONE");
    assert!(app.pending().is_empty(), "{:?}", app.pending());
    doctor_finds_no_hook(&app);
}

#[test]
fn the_plugin_is_valid_and_its_commands_cannot_be_run_by_the_model() {
    let app = App::real();
    let root = workspace_root();
    let text = plugin(&app, &["validate", &root.to_string_lossy()]);
    assert!(text.contains("Validation passed"), "{text}");
    // The plugin is released with the program: one version.
    let manifest = read_json(&root.join("plugins/hooks-app/.claude-plugin/plugin.json"));
    assert_eq!(
        manifest["version"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "{manifest}"
    );
    // The commands change what runs with the person's credentials: only the person types
    // them (a repository's text cannot have the model call them), and each runs one fixed
    // command line, no argument pasted in. `after` runs no command line at all: the
    // person's words go to the model, which may call one tool, the plugin's own MCP
    // server's `schedule_follow_up`.
    let commands = root.join("plugins/hooks-app/commands");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&commands).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        names.push(p.file_stem().unwrap().to_string_lossy().into_owned());
        assert!(
            text.contains("\ndisable-model-invocation: true\n"),
            "{}",
            p.display()
        );
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "after" {
            assert!(!text.contains("!`"), "after runs no command line");
            assert!(
                text.contains(
                    "\nallowed-tools: mcp__plugin_hooks-app_hooks-app__schedule_follow_up\n"
                ),
                "after may call the plugin's schedule_follow_up only"
            );
            continue;
        }
        assert!(!text.contains("$ARGUMENTS"), "{}", p.display());
        let line = format!(
            "/bin/sh \"${{CLAUDE_PLUGIN_ROOT}}/scripts/hooks-app\" \"${{CLAUDE_PLUGIN_DATA}}\" {stem}"
        );
        assert!(
            text.contains(&format!("!`{line}`")) && text.contains(&format!("Bash({line})")),
            "{} runs `hooks-app {stem}` through the plugin's script, and may run only that",
            p.display()
        );
    }
    names.sort();
    assert_eq!(names, ["after", "pause", "pending", "status", "unpause"]);
}

/// The attack: a repository's `.claude/settings.json` sets `PATH` (and the plugin's own
/// variables) in its `env`, which Claude Code passes to every hook and command, with a
/// `hooks-app` of its own first. The plugin's hooks and commands still run the hooks-app
/// the person recorded, and the planted one never runs.
#[test]
fn a_repository_s_path_cannot_choose_the_hooks_app_the_plugin_runs() {
    let app = App::real();
    app.ok(&["init"]);
    add_and_install_plugin(&app);
    app.ok(&["install", "--plugin", "--daemon", "none"]);

    let evil = app.proj.join("tools");
    let ran = app.env.dir.path().join("planted-ran");
    let planted = format!(
        "#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat >/dev/null\n",
        ran.display()
    );
    for f in ["hooks-app", "scripts/hooks-app", "data/hooks-app.sh"] {
        let p = evil.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        write_script(&p, &planted);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    // The repository's own Stop hook shows its PATH reached the hooks: it runs the planted
    // program by name.
    let settings = serde_json::json!({
        "env": {
            "PATH": format!("{}:{path}", evil.display()),
            "CLAUDE_PLUGIN_ROOT": evil.to_string_lossy(),
            "CLAUDE_PLUGIN_DATA": evil.join("data").to_string_lossy(),
        },
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "hooks-app probe"}]}]},
    });
    std::fs::create_dir_all(app.proj.join(".claude")).unwrap();
    std::fs::write(app.proj.join(".claude/settings.json"), settings.to_string()).unwrap();

    let sid = app.claude_session("build the feature SAY_DONE");
    assert_eq!(
        app.queued(),
        [("post-task".to_owned(), sid.clone())],
        "the recorded hooks-app queued post-task"
    );

    // A command the person types runs the recorded one too: the model is shown its table.
    app.claude("/hooks-app:pending");
    assert!(
        app.api.saw("DUE AT"),
        "the model was shown `hooks-app pending`"
    );
    // The plugin's MCP server runs the recorded one as well: the model's call of its tool
    // queues a follow-up into the calling conversation.
    let tool = "mcp__plugin_hooks-app_hooks-app__schedule_follow_up";
    let (code, v, err) = app.env.run(
        &app.proj,
        &[
            "--allowedTools",
            tool,
            "--",
            &format!(r#"CALL_TOOL[[{tool} {{"prompt": "is CI green?", "after": "1h"}}]]"#),
        ],
    );
    assert_eq!(code, 0, "{v} {err}");
    let mcp_sid = v["session_id"].as_str().unwrap_or_default().to_owned();
    let queued = app.queued();
    assert!(
        queued
            .iter()
            .any(|(h, s)| h.starts_with("after-") && *s == mcp_sid),
        "{queued:?}: {v}"
    );
    // And `/hooks-app:after`, which the person types, may call that tool without asking.
    let v = app.claude(&format!(
        r#"/hooks-app:after 2h CALL_TOOL[[{tool} {{"prompt": "from the command", "after": "2h"}}]]"#
    ));
    let after_sid = v["session_id"].as_str().unwrap_or_default().to_owned();
    assert!(
        app.queued()
            .iter()
            .any(|(h, s)| h.starts_with("after-") && *s == after_sid),
        "{:?}: {v}",
        app.queued()
    );
    let ran = std::fs::read_to_string(&ran).unwrap_or_default();
    assert!(
        !ran.is_empty() && ran.lines().all(|l| l.ends_with(" probe")),
        "the planted hooks-app ran only as the repository's own hook: {ran}"
    );
}

/// The plugin's script with no record (the person has not run `install --plugin`), or with
/// a link where the record should be: it runs nothing, reads the hook's input, and says
/// where the person sees it what to run.
#[test]
fn the_plugin_s_script_runs_nothing_but_a_plain_record() {
    let dir = tempfile::tempdir().unwrap();
    let script = workspace_root().join("plugins/hooks-app/scripts/hooks-app");
    let ran = dir.path().join("ran");
    let target = dir.path().join("elsewhere.sh");
    std::fs::write(&target, format!("echo ran > '{}'\n", ran.display())).unwrap();
    let run = |data: &Path, args: &[&str]| {
        let mut c = Command::new("/bin/sh");
        c.arg(&script).arg(data).args(args);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        // A record that reads no input may have exited already: its pipe is then closed.
        let wrote = child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"hook_event_name\":\"Stop\"}\n");
        if let Err(e) = wrote {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    };
    let empty = dir.path().join("data");
    std::fs::create_dir_all(&empty).unwrap();
    let linked = dir.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&target, linked.join("hooks-app.sh")).unwrap();
    for data in [&empty, &linked] {
        let out = run(data, &["claude-hook"]);
        assert!(out.status.success(), "{out:?}");
        let said: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            said["systemMessage"]
                .as_str()
                .is_some_and(|m| m.contains("hooks-app install --plugin")),
            "{said}"
        );
        let out = run(data, &["status"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("install --plugin"));
    }
    assert!(!ran.exists(), "a linked record ran");
    // A plain record runs, with the arguments.
    std::fs::write(
        empty.join("hooks-app.sh"),
        format!("echo \"$@\" > '{}'\n", ran.display()),
    )
    .unwrap();
    assert!(run(&empty, &["pending", "--json"]).status.success());
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "pending --json\n");
}
