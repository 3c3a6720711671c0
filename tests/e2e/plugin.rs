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

/// The plugin's hooks find `hooks-app` on PATH, as a person's npm or cargo install puts
/// it. Here that is the built binary, told the scratch data folder (the one under the user
/// database's home is the real user's).
fn hooks_app_on_path(app: &App) {
    let bin = app.env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_script(
        &bin.join("hooks-app"),
        &format!(
            "#!/bin/sh\nexec '{APP}' --data-dir '{}' \"$@\"\n",
            app.data_dir().display()
        ),
    );
    let path = std::env::var("PATH").unwrap_or_default();
    app.env
        .set_var("PATH", &format!("{}:{path}", bin.display()));
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
    hooks_app_on_path(&app);
    app.ok(&["init"]);
    // An earlier `install` put an entry in the user's settings; the plugin takes over.
    app.ok(&["install", "--daemon", "none"]);
    let settings = app.env.claude_home().join("settings.json");
    assert!(
        std::fs::read_to_string(&settings)
            .unwrap()
            .contains("claude-hook")
    );

    let root = workspace_root();
    let added = plugin(&app, &["marketplace", "add", &root.to_string_lossy()]);
    assert!(added.contains("hooks-app"), "{added}");
    plugin(&app, &["install", "hooks-app@hooks-app"]);
    let said = app.ok(&["install", "--plugin", "--daemon", "none"]);
    assert!(said.contains("from the Claude Code plugin"), "{said}");
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
    let sid = app.claude("build the feature SAY_DONE")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let pending = app.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(
        (
            pending[0]["hookId"].as_str(),
            pending[0]["sessionId"].as_str()
        ),
        (Some("post-task"), Some(sid.as_str()))
    );
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
    // command line, no argument pasted in.
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
        assert!(!text.contains("$ARGUMENTS"), "{}", p.display());
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            text.contains(&format!("!`hooks-app {stem}`")),
            "{} runs `hooks-app {stem}`",
            p.display()
        );
    }
    names.sort();
    assert_eq!(names, ["pause", "pending", "status", "unpause"]);
}
