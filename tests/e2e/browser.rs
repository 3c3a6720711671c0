//! The page in headless Chromium (Debian's), driven by Playwright: log in with the
//! one-time link, disable a hook with its toggle and see the button and the store change,
//! submit an invalid delay and see the error at the field, and see a run appear by itself
//! after a follow-up fired, with its start time and a link to its session's lookup; on a
//! phone's width nothing scrolls sideways. Screenshots at 1280 and 390 px are kept in
//! target/browser/ (the ones in docs/ are copies of them).

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::Value;

use crate::http::Served;
use crate::support::*;

#[test]
fn the_page_in_chromium_toggles_validates_and_follows_the_store() {
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let d = Served::start(&app, &[], &[]);
    let login = app.ok(&["open", "--no-browser"]).trim().to_owned();
    let shot = hooks_testkit::workspace_root().join("target/browser/page-1280.png");
    let phone = hooks_testkit::workspace_root().join("target/browser/page-390.png");
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&shot);
    let _ = std::fs::remove_file(&phone);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e/browser/page.cjs");
    let mut node = hooks_testkit::browser::node(&script)
        .env("LOGIN_URL", &login)
        .env("SCREENSHOT", &shot)
        .env("SCREENSHOT_PHONE", &phone)
        .env("RUN_SESSION", "b-run-1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut next = || -> Value {
        let l = lines.next().expect("a step").expect("read");
        let v: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_ne!(v["step"], "failed", "{v}");
        v
    };
    let v = next();
    assert_eq!(
        (v["step"].as_str(), v["url"].as_str()),
        (Some("logged in"), Some("/")),
        "{v}"
    );
    assert_eq!(v["chip"], "never ran");
    let v = next();
    assert_eq!(v["button"], "enable", "the toggle disabled it: {v}");
    assert_eq!(
        app.hook("post-task")["enabled"],
        false,
        "and the store says so"
    );
    let v = next();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("must be a whole number from 0 to 86400"),
        "{v}"
    );
    assert_eq!(v["visible"], true);
    assert_eq!(
        app.hook("post-task")["delaySeconds"],
        0,
        "the invalid delay changed nothing"
    );
    let v = next();
    assert_eq!(v["step"], "ready");
    assert_eq!(app.hook("post-task")["enabled"], true);
    // A conversation finishes; the daemon fires its follow-up; the page shows the run.
    let t = app.transcript("b-run-1", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "b-run-1",
        "--transcript",
        t.to_str().unwrap(),
    ]);
    node.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let v = next();
    let row = v["row"].as_str().unwrap();
    assert!(
        row.contains("post-task") && row.contains("ok") && row.contains("yes"),
        "{v}"
    );
    assert!(v["chip"].as_str().unwrap().starts_with("ok"), "{v}");
    let run = &app.runs()[0];
    assert!(
        run["reply"].is_string() && v["reply"] == run["reply"].as_str().unwrap().trim(),
        "the reply, as the run record keeps it: {v} {run}"
    );
    // Its start time, relative, with the absolute time on hover; its session links to
    // the lookup.
    let started = v["started"].as_str().unwrap();
    assert!(started.ends_with(" ago") || started == "now", "{v}");
    assert_eq!(v["startedTitle"], run["startedAt"], "{v}");
    assert_eq!(v["sessionHref"], "/?session=b-run-1#lookup");
    let v = next();
    assert_eq!(v["step"], "lookup", "{v}");
    let (scroll, inner) = (v["widths"][0].as_u64(), v["widths"][1].as_u64());
    assert!(scroll <= inner, "nothing scrolls sideways at 390 px: {v}");
    // A phone draws its own chart, tall enough to read (the wide one scaled down was 85 px).
    assert_eq!(v["phoneChart"]["wideShown"], false, "{v}");
    assert!(
        v["phoneChart"]["height"].as_f64().unwrap() > 180.0,
        "the phone's chart: {v}"
    );
    let lookup = v["lookup"].as_str().unwrap();
    assert!(
        lookup.contains("session b-run-1")
            && lookup.contains("post-task at ")
            && lookup.contains(": ok")
            && !lookup.contains('{'),
        "the lookup reads like the CLI's: {lookup}"
    );
    let v = next();
    assert_eq!(v["step"], "wide", "{v}");
    assert_eq!(v["chartShown"], serde_json::json!([true, false]), "{v}");
    let (reply, table) = (
        v["replyWidth"].as_f64().unwrap(),
        v["tableWidth"].as_f64().unwrap(),
    );
    assert!(
        reply > table * 0.6,
        "an opened reply takes the table's width, not one column's: {v}"
    );
    let (scroll, bottom) = (
        v["scrollHeight"].as_f64().unwrap(),
        v["contentBottom"].as_f64().unwrap(),
    );
    assert!(
        scroll <= bottom + 100.0,
        "no empty scroll below the content: {v}"
    );
    let v = next();
    assert_eq!(v["step"], "paused", "{v}");
    assert!(
        v["banner"]
            .as_str()
            .unwrap()
            .starts_with("Follow-ups are paused until `hooks-app unpause` (by the web page)"),
        "{v}"
    );
    assert_eq!(v["resume"], "Resume follow-ups");
    let v = next();
    assert_eq!(
        (v["banners"].as_u64(), v["button"].as_str()),
        (Some(0), Some("Pause all follow-ups")),
        "{v}"
    );
    assert_eq!(app.json(&["status"])["pause"]["paused"], false);
    assert_eq!(next()["step"], "done");
    let out = node.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in [&shot, &phone] {
        assert!(
            std::fs::metadata(p).is_ok_and(|m| m.len() > 1000),
            "a screenshot at {}",
            p.display()
        );
    }
    d.stop();
}
