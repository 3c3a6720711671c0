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
    assert_eq!(stop[1]["hooks"][0]["command"], format!("{APP} claude-hook"));
    assert_eq!(
        v["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
        format!("{APP} claude-hook --on session-end")
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

#[test]
fn project_scope_writes_into_the_workspace() {
    let app = App::fake();
    app.ok(&["install", "--scope", "project"]);
    let p = app.proj.join(".claude/settings.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        format!("{APP} claude-hook")
    );
    assert!(!settings(&app).exists(), "the user scope is untouched");
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
        "fix: hooks-app serve",
        "ok   claude",
    ] {
        assert!(out.contains(needle), "{needle:?} in\n{out}");
    }
    assert!(!app.data_dir().exists(), "doctor creates nothing");
    app.ok(&["init"]);
    app.ok(&["install"]);
    let out = String::from_utf8(app.run(&["doctor"]).stdout).unwrap();
    assert!(
        out.contains("ok   store readable")
            && out.contains("ok   prompt file")
            && out.contains("1 problem found"),
        "{out}"
    );
}
