//! The interactive TUI of the real `claude`, in a pseudo-terminal: a conversation a person
//! still has open is never resumed; once they exit (or their claude is killed), the
//! follow-up runs within seconds, on a transcript that never forked.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hooks_testkit::{Tui, wait_until};
use serde_json::Value;

use crate::support::*;

/// Sets up a user with the hook installed and a daemon serving; the post-task delay is
/// 2 s and the quiet period 1 s, so without the open-session rule it would fire at once.
fn user() -> (App, std::process::Child) {
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "2"]);
    let serve = app.spawn(&["serve", "--quiet-period", "1", "--deliver", "closed"]);
    // Registered, it tells the hook that it delivers into no open conversation.
    assert!(
        wait_until(30, || app.json(&["status"])["daemons"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["deliverOpen"] == false))),
        "{}",
        app.json(&["status"])
    );
    (app, serve)
}

/// A user with the hook installed, post-task's delay `delay` seconds and a daemon with the
/// default quiet period (5 s). The daemon delivers into open TUIs (the default) but the hook
/// says `--deliver closed`: its follow-ups wait for the close.
fn user_with_delay(delay: &str) -> (App, std::process::Child) {
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&[
        "hooks",
        "update",
        "post-task",
        "--delay",
        delay,
        "--deliver",
        "closed",
    ]);
    assert_eq!(app.hook("post-task")["deliver"], "closed");
    let serve = app.spawn(&["serve"]);
    (app, serve)
}

fn stop(serve: std::process::Child) -> String {
    signal(&serve, libc::SIGTERM);
    let out = serve.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn session_of(app: &App) -> String {
    assert!(
        wait_until(60, || app.pending().len() == 1),
        "the TUI's Stop hook queued the follow-up"
    );
    app.pending()[0]["sessionId"].as_str().unwrap().to_owned()
}

fn waiting_reason(app: &App) -> Option<String> {
    app.pending()
        .first()
        .and_then(|p| p["waiting"]["reason"].as_str().map(str::to_owned))
}

/// The transcript's records, parsed.
fn records(app: &App, sid: &str) -> Vec<Value> {
    let t = app.env.transcript(sid).expect("the transcript");
    std::fs::read_to_string(t)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A person's (or a follow-up's) prompt: a user record whose content is text, not a tool
/// result.
fn is_user_turn(r: &Value) -> bool {
    r["type"] == "user"
        && r["isMeta"] != true
        && match &r["message"]["content"] {
            Value::String(_) => true,
            Value::Array(blocks) => blocks.iter().all(|b| b["type"] == "text"),
            _ => false,
        }
}

/// The parents that more than one user turn hangs under: a fork.
fn forks(records: &[Value]) -> Vec<String> {
    let mut by_parent: HashMap<String, usize> = HashMap::new();
    for r in records.iter().filter(|r| is_user_turn(r)) {
        if let Some(p) = r["parentUuid"].as_str() {
            *by_parent.entry(p.to_owned()).or_default() += 1;
        }
    }
    by_parent
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn an_open_tui_conversation_is_never_resumed_and_is_followed_up_once_the_person_exits() {
    let (app, serve) = user();
    let tui = Tui::start(&app.env, &app.proj);
    tui.type_line("build the feature SAY_DONE");
    let sid = session_of(&app);
    // The Stop hook's heads-up is on the person's screen: after the close, since the TUI
    // has no way in (2.1.197) or the daemon delivers into none (`--deliver closed`, which
    // its registration says).
    assert!(
        wait_until(10, || {
            tui.screen().contains(
            "hooks-app will follow up this conversation: post-task after you close this conversation"
        )
        }),
        "{}",
        tui.screen()
    );

    // Past the delay and the quiet period, the daemon decides: the conversation is open.
    let want = format!("conversation open in claude, pid {}, interactive", tui.pid);
    assert!(
        wait_until(30, || waiting_reason(&app)
            .is_some_and(|r| r.starts_with(&want))),
        "waits for the open conversation: {:?}\n{}",
        app.pending(),
        tui.screen()
    );
    assert!(app.runs().is_empty(), "nothing ran");
    // It shows when it became due, and that it runs once the conversation is closed.
    let shown = app.ok(&["pending"]);
    assert!(
        shown.contains("waits until the conversation is closed (gives up at ")
            && shown.contains(&format!("): {want}")),
        "{shown}"
    );
    let entry = &app.pending()[0];
    let (due, gives_up) = (
        entry["dueAt"].as_str().unwrap().to_owned(),
        entry["givesUpAt"].as_str().unwrap().to_owned(),
    );
    assert!(
        due < gives_up && shown.contains(&due) && gives_up.as_str() > due.as_str(),
        "dueAt is when it became due, not the give-up time: {entry}"
    );
    let status = app.ok(&["status"]);
    assert!(
        status.contains("1 waits until its conversation is closed")
            && !status.contains(&format!("next at {gives_up}")),
        "{status}"
    );
    let session = app.ok(&["session", &sid]);
    assert!(session.contains("open in claude, pid"), "{session}");

    // The person goes on with a turn that takes a while: still nothing runs, and the
    // conversation shows as busy while it goes on.
    app.api.set_slow(Duration::from_secs(6));
    tui.type_line("and one more thing SLOW_REPLY");
    assert!(wait_until(30, || app.api.saw("one more thing SLOW_REPLY")));
    assert!(
        wait_until(5, || app.json(&["session", &sid])["openIn"]["status"]
            == "busy"),
        "{}",
        app.ok(&["session", &sid])
    );
    let turn_requests = app.api.requests();
    assert!(
        wait_until(30, || records(&app, &sid)
            .iter()
            .filter(|r| r["type"] == "assistant")
            .count()
            >= 2),
        "the slow reply lands in the TUI"
    );
    assert!(app.runs().is_empty(), "no run during the person's turn");
    assert_eq!(app.pending().len(), 1);
    assert!(turn_requests >= 2);

    // The person exits: the SessionEnd hook wakes the follow-up, which runs at once.
    tui.type_line("/exit");
    assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    let exited = Instant::now();
    assert!(
        wait_until(60, || app
            .runs()
            .first()
            .is_some_and(|r| r["status"] == "ok")),
        "the follow-up ran after the exit: {:?} {:?}",
        app.runs(),
        app.pending()
    );
    let took = exited.elapsed();
    eprintln!("followed up {took:?} after the TUI exited");
    let log = stop(serve);
    // Woken by the close, not found at a later look: no look was put back.
    assert!(!log.contains("put back"), "{log}");
    assert!(app.pending().is_empty());
    assert_eq!(app.runs().len(), 1, "once");

    let recs = records(&app, &sid);
    assert_eq!(
        forks(&recs),
        Vec::<String>::new(),
        "no fork in the transcript"
    );
    let turns: Vec<&Value> = recs.iter().filter(|r| is_user_turn(r)).collect();
    assert!(
        turns
            .last()
            .is_some_and(|t| t.to_string().contains("tidy-up pass")),
        "the follow-up is the last turn, after the person's: {turns:?}"
    );
    let last_request = app.api.bodies().last().cloned().unwrap();
    assert!(
        last_request
            .to_string()
            .contains("one more thing SLOW_REPLY"),
        "the follow-up saw the whole conversation"
    );
}

#[test]
fn a_killed_tui_is_noticed_without_a_session_end_and_then_followed_up() {
    let (app, serve) = user();
    let tui = Tui::start(&app.env, &app.proj);
    tui.type_line("build the feature SAY_DONE");
    session_of(&app);
    assert!(
        wait_until(30, || waiting_reason(&app)
            .is_some_and(|r| r.starts_with("conversation open in claude"))),
        "{:?}",
        app.pending()
    );
    let live_file = app
        .env
        .claude_home()
        .join(format!("sessions/{}.json", tui.pid));
    assert!(live_file.exists());
    tui.signal(libc::SIGKILL);
    assert!(wait_until(10, || !tui.alive()));
    assert!(
        live_file.exists(),
        "kill -9 leaves Claude Code's session file behind"
    );
    let killed = Instant::now();
    assert!(
        wait_until(60, || app
            .runs()
            .first()
            .is_some_and(|r| r["status"] == "ok")),
        "{:?} {:?}",
        app.runs(),
        app.pending()
    );
    let took = killed.elapsed();
    eprintln!("followed up {took:?} after the TUI was killed");
    let log = stop(serve);
    assert!(!log.contains("put back"), "{log}");
    assert!(log.contains("conversations were closed"), "{log}");
    assert_eq!(app.runs().len(), 1);
}

/// The common case: the person stays past the delay, then exits. Claude Code writes the
/// transcript just after its SessionEnd hook, so the daemon's look at exit finds it still
/// being written: it must look again once the quiet period (the default 5 s) has passed, not
/// at the next retry a minute later. Twice, since the race is a matter of milliseconds.
#[test]
fn a_follow_up_waiting_on_an_open_tui_runs_within_the_quiet_period_of_the_exit() {
    let (app, serve) = user_with_delay("2");
    for round in 1..=2 {
        let tui = Tui::start(&app.env, &app.proj);
        tui.type_line(&format!("build part {round} SAY_DONE"));
        // The hook says `--deliver closed`: the heads-up says it comes after the close.
        assert!(
            tui.wait_for(30, "post-task after you close this conversation"),
            "{}",
            tui.screen()
        );
        assert!(
            wait_until(60, || waiting_reason(&app)
                .is_some_and(|r| r.starts_with("conversation open in claude"))),
            "round {round}: due, and waiting on the open conversation: {:?}",
            app.pending()
        );
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        let exited = Instant::now();
        assert!(
            wait_until(90, || app.runs().len() == round
                && app.runs().iter().all(|r| r["status"] == "ok")),
            "round {round}: the follow-up ran: {:?} {:?}",
            app.runs(),
            app.pending()
        );
        let took = exited.elapsed();
        eprintln!("round {round}: followed up {took:?} after the exit");
    }
    // Within the quiet period of the exit, not a retry later: nothing was put back.
    let log = stop(serve);
    assert!(!log.contains("put back"), "{log}");
}

/// The other case: the person exits before the delay has passed. The follow-up runs once
/// the delay and the quiet period (the default 5 s) are over, not a retry later. Twice.
#[test]
fn a_tui_exited_before_the_delay_is_followed_up_at_the_delay_and_quiet_period() {
    let (app, serve) = user_with_delay("8");
    for round in 1..=2 {
        let tui = Tui::start(&app.env, &app.proj);
        tui.type_line(&format!("build part {round} SAY_DONE"));
        assert!(
            wait_until(60, || app.pending().len() == 1),
            "round {round}: queued: {:?}",
            app.pending()
        );
        let done = Instant::now();
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        let exited = done.elapsed();
        assert!(
            wait_until(90, || app.runs().len() == round
                && app.runs().iter().all(|r| r["status"] == "ok")),
            "round {round}: the follow-up ran: {:?} {:?}",
            app.runs(),
            app.pending()
        );
        let took = done.elapsed();
        eprintln!("round {round}: exited {exited:?} and followed up {took:?} after DONE");
    }
    // At the delay and the quiet period, not a retry later: nothing was put back.
    let log = stop(serve);
    assert!(!log.contains("put back"), "{log}");
}

/// A user with `continue-after-limit` on (its delay 1 s: an API key's limit states no
/// reset, so the wait is the delay), a daemon with the quiet period 1 s and `serve_args`,
/// the API refusing with a limit, and a TUI whose first turn it refused.
fn limited_in_a_tui(serve_args: &[&str]) -> (App, std::process::Child, Tui) {
    let app = App::real();
    app.env.set_var("CLAUDE_CODE_MAX_RETRIES", "0");
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    app.ok(&["hooks", "update", "continue-after-limit", "--delay", "1"]);
    let mut args = vec!["serve", "--quiet-period", "1"];
    args.extend_from_slice(serve_args);
    let serve = app.spawn(&args);
    app.api.set_limit(Some(hooks_testkit::Limit::RateLimited {
        reset: time::OffsetDateTime::now_utc().unix_timestamp() + 3600,
    }));
    let tui = Tui::start(&app.env, &app.proj);
    tui.type_line("build the feature SAY_DONE");
    (app, serve, tui)
}

/// A conversation in the TUI stopped by a rate limit: `continue-after-limit` is queued by
/// Claude Code's `StopFailure`, waits while the person still has the conversation open, and
/// carries it on once they exit, in the same conversation.
#[test]
fn a_tui_conversation_stopped_by_a_limit_is_continued_after_the_person_exits() {
    let (app, serve, tui) = limited_in_a_tui(&["--deliver", "closed"]);
    assert!(
        wait_until(60, || waiting_reason(&app)
            .is_some_and(|r| r.starts_with("conversation open in claude"))),
        "queued by StopFailure, due, and waiting on the open conversation: {:?}\n{}",
        app.pending(),
        tui.screen()
    );
    let p = &app.pending()[0];
    assert_eq!(p["hookId"], "continue-after-limit", "{p}");
    // The TUI calls the refused turn `rate_limit`; on a loaded machine it has been seen to
    // call it `server_error` (once in a full run). Both are in the hook's default errors.
    assert!(
        ["rate_limit", "server_error"].contains(&p["error"].as_str().unwrap_or("")),
        "{p}"
    );
    let sid = p["sessionId"].as_str().unwrap().to_owned();
    assert!(app.runs().is_empty(), "never while it is open");
    app.api.set_limit(None);
    tui.type_line("/exit");
    assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    assert!(
        wait_until(90, || app.runs().iter().any(|r| r["status"] == "ok")),
        "continued after the exit: {:?} {:?}",
        app.runs(),
        app.pending()
    );
    let log = stop(serve);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:?} {log}");
    assert_eq!(runs[0]["hookId"], "continue-after-limit");
    assert_eq!(runs[0]["sessionId"], sid.as_str());
    let text = std::fs::read_to_string(app.env.transcript(&sid).unwrap()).unwrap();
    assert!(
        text.contains("Carry on with the task"),
        "in the same conversation"
    );
}

/// A TUI left open at a usage limit, idle past the reset, and Claude Code's own continue
/// never came (it never does for an API key, as here): where the TUI has a way in
/// (2.1.332's inbox), `continue-after-limit` first leaves Claude Code its chance
/// (`--own-continue-wait`), then arrives in that TUI once, a turn the person sees, and
/// `/exit` runs nothing more. Without a way in (2.1.197, which has no own continue either)
/// it waits for the close and is resumed once.
#[test]
fn a_tui_left_at_a_limit_whose_own_continue_never_came_gets_the_continuation_once() {
    let (app, serve, tui) = limited_in_a_tui(&["--own-continue-wait", "5"]);
    let has_inbox = has_inbox();
    let first_wait = if has_inbox {
        hooks_core::decide::OWN_CONTINUE_WAIT
    } else {
        "conversation open in claude"
    };
    assert!(
        wait_until(60, || waiting_reason(&app)
            .is_some_and(|r| r.starts_with(first_wait))),
        "queued by StopFailure, due, and waiting: {:?}\n{}",
        app.pending(),
        tui.screen()
    );
    assert!(app.runs().is_empty(), "nothing during the wait");
    let sid = app.pending()[0]["sessionId"].as_str().unwrap().to_owned();
    // The limit has reset.
    app.api.set_limit(None);
    if has_inbox {
        assert!(
            wait_until(90, || app
                .runs()
                .iter()
                .any(|r| r["finishedAt"].is_string())),
            "delivered into the open TUI: {:?} {:?}\n{}",
            app.runs(),
            app.pending(),
            tui.screen()
        );
        assert!(tui.alive(), "while the TUI stays open");
        let r = app.runs()[0].clone();
        assert_eq!(r["hookId"], "continue-after-limit", "{r}");
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["delivery"], "open", "{r}");
        assert!(
            tui.wait_for(10, "hooks-app follow-up: continue-after-limit"),
            "the person sees it arrive:\n{}",
            tui.screen()
        );
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        app.ok(&["tick", "--quiet-period", "0"]);
    } else {
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        assert!(
            wait_until(90, || app.runs().iter().any(|r| r["status"] == "ok")),
            "{:?} {:?}",
            app.runs(),
            app.pending()
        );
        assert_eq!(app.runs()[0]["delivery"], "resumed");
    }
    let log = stop(serve);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "once: {runs:?}\n{log}");
    // The continuation's reply ends the task (DONE): post-task may be queued for it, but
    // nothing more of the limit's.
    assert!(
        app.pending()
            .iter()
            .all(|p| p["hookId"] != "continue-after-limit"),
        "{:?}",
        app.pending()
    );
    assert_eq!(
        forks(&records(&app, &sid)),
        Vec::<String>::new(),
        "one chain"
    );
    assert!(
        std::fs::read_to_string(app.env.transcript(&sid).unwrap())
            .unwrap()
            .contains("Carry on with the task"),
        "in the same conversation"
    );
}

/// Whether the pinned Claude Code under test has a per-session inbox (2.1.332 on).
fn has_inbox() -> bool {
    hooks_testkit::claude_version() != "2.1.197"
}

/// A user whose daemon delivers into an open TUI where it can (the default), post-task's
/// delay `delay` seconds, the quiet period 1 s; a TUI whose first turn said DONE, and its
/// session.
fn done_in_a_tui_delivering(delay: &str) -> (App, std::process::Child, Tui, String) {
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", delay]);
    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let tui = Tui::start(&app.env, &app.proj);
    tui.type_line("build the feature SAY_DONE");
    let sid = session_of(&app);
    // The heads-up says where it will come: into this TUI where it has a way in, else
    // after the person closes it.
    let told = if has_inbox() {
        "post-task in"
    } else {
        "post-task after you close this conversation"
    };
    assert!(tui.wait_for(30, told), "told {told:?}:\n{}", tui.screen());
    (app, serve, tui, sid)
}

/// `DONE` in a TUI left open and idle: where the running Claude Code offers a way in
/// (2.1.332's inbox) the follow-up arrives in that TUI as one turn the person sees, soon
/// after it is due, and is recorded with its cost while the TUI stays open; `/exit` then
/// runs nothing more. Where it offers none (2.1.197) it runs once after the close, as
/// before. Either way the transcript holds one chain.
#[test]
fn a_follow_up_due_while_the_tui_is_open_and_idle_arrives_in_it() {
    let (app, serve, tui, sid) = done_in_a_tui_delivering("2");
    let due = hooks_core::stamp::parse(app.pending()[0]["dueAt"].as_str().unwrap()).unwrap();
    let has_inbox = has_inbox();
    if has_inbox {
        assert!(
            wait_until(60, || app
                .runs()
                .iter()
                .any(|r| r["finishedAt"].is_string())),
            "delivered into the open TUI: {:?} {:?}\n{}",
            app.runs(),
            app.pending(),
            tui.screen()
        );
        assert!(tui.alive(), "while the TUI stays open");
        assert!(
            tui.wait_for(10, "tidy-up pass"),
            "the person sees the follow-up in their TUI:\n{}",
            tui.screen()
        );
        assert!(
            tui.screen().contains("hooks-app follow-up: post-task"),
            "and whose it is:\n{}",
            tui.screen()
        );
        let r = app.runs()[0].clone();
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["completed"], true, "{r}");
        assert!(
            r["costUsd"].as_f64().is_some_and(|c| c > 0.0),
            "priced: {r}"
        );
        assert!(r["usage"]["outputTokens"].as_u64().is_some(), "{r}");
        assert!(r["pid"].is_null(), "no process of ours: {r}");
        assert_eq!(r["delivery"], "open", "{r}");
        assert!(
            r["reply"].as_str().is_some_and(|t| t.contains("COMPLETED")),
            "{r}"
        );
        let started = hooks_core::stamp::parse(r["startedAt"].as_str().unwrap()).unwrap();
        let late = (started - due).whole_milliseconds();
        eprintln!("delivered {late} ms after it was due");
        assert!(started >= due, "never before it was due: {r}");
        // The turn that answered it is the follow-up's, as the real transcript shows: a
        // DONE said for it would queue nothing, even for a hook that follows up each task.
        app.ok(&["hooks", "update", "post-task", "--repeat", "each-task"]);
        let t = app.env.transcript(&sid).expect("the transcript");
        let o = app.ok(&[
            "notify",
            "--session",
            &sid,
            "--transcript",
            t.to_str().unwrap(),
        ]);
        assert!(o.contains("a follow-up's own turn"), "{o}");
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        app.ok(&["tick", "--quiet-period", "0"]);
    } else {
        assert!(
            wait_until(30, || waiting_reason(&app)
                .is_some_and(|r| r.starts_with("conversation open in claude"))),
            "no way in: it waits for the close: {:?}",
            app.pending()
        );
        assert!(app.runs().is_empty());
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
        assert!(
            wait_until(60, || app.runs().iter().any(|r| r["status"] == "ok")),
            "{:?} {:?}",
            app.runs(),
            app.pending()
        );
        assert_eq!(app.runs()[0]["delivery"], "resumed");
    }
    let log = stop(serve);
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "once, whichever way: {runs:?}\n{log}");
    assert!(app.pending().is_empty(), "{:?}", app.pending());
    let recs = records(&app, &sid);
    assert_eq!(forks(&recs), Vec::<String>::new(), "one chain");
    assert!(
        app.api
            .bodies()
            .last()
            .unwrap()
            .to_string()
            .contains("tidy-up pass"),
        "the follow-up's prompt reached the model"
    );
}

/// The person is writing (text in the input box, not sent) when the follow-up comes due:
/// nothing they typed is lost or merged. Where it arrives in the open TUI, it is a turn of
/// its own holding only the hook's prompt, and what the person then sends is a turn of its
/// own holding only their words; without a way in, their words are sent and answered before
/// the follow-up runs after the close.
#[test]
fn what_a_person_is_typing_when_the_follow_up_arrives_is_neither_lost_nor_merged() {
    let has_inbox = has_inbox();
    let (app, serve, tui, sid) = done_in_a_tui_delivering("3");
    tui.type_text("my own words, not sent yet");
    if has_inbox {
        assert!(
            wait_until(60, || app
                .runs()
                .iter()
                .any(|r| r["finishedAt"].is_string())),
            "delivered while the person writes: {:?} {:?}\n{}",
            app.runs(),
            app.pending(),
            tui.screen()
        );
        assert_eq!(app.runs()[0]["delivery"], "open", "{:?}", app.runs());
        assert!(
            tui.screen().contains("my own words, not sent yet"),
            "the draft is still in the input box:\n{}",
            tui.screen()
        );
    }
    tui.enter();
    assert!(
        wait_until(30, || app.api.saw("my own words, not sent yet")),
        "the person's words are sent:\n{}",
        tui.screen()
    );
    if !has_inbox {
        assert!(
            wait_until(30, || records(&app, &sid)
                .iter()
                .filter(|r| r["type"] == "assistant")
                .count()
                >= 2),
            "the person's turn is answered"
        );
    }
    tui.type_line("/exit");
    assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    assert!(
        wait_until(60, || app
            .runs()
            .iter()
            .any(|r| r["finishedAt"].is_string())),
        "{:?}",
        app.pending()
    );
    // Every user line holds the person's words or the hook's prompt, never both, and each
    // is there once.
    let recs = records(&app, &sid);
    let users: Vec<String> = recs
        .iter()
        .filter(|r| r["type"] == "user")
        .map(|r| r["message"]["content"].to_string())
        .collect();
    let mine = users
        .iter()
        .filter(|u| u.contains("my own words, not sent yet"))
        .count();
    let prompts = users.iter().filter(|u| u.contains("tidy-up pass")).count();
    let merged = users
        .iter()
        .filter(|u| u.contains("my own words") && u.contains("tidy-up pass"))
        .count();
    assert_eq!((mine, prompts, merged), (1, 1, 0), "{users:#?}");
    assert_eq!(app.runs().len(), 1, "one follow-up: {:?}", app.runs());
    stop(serve);
}

/// The person types on while the follow-up comes due: their turn (a slow reply streaming)
/// is never interrupted or merged; the follow-up arrives once the TUI is idle again, after
/// their turn, as a turn of its own. Where there is no way in (2.1.197) it is resumed after
/// the close, after the person's turn all the same.
#[test]
fn a_busy_tui_is_not_interrupted_the_follow_up_waits_for_idle() {
    let has_inbox = has_inbox();
    let (app, serve, tui, sid) = done_in_a_tui_delivering("3");
    // At once, before it is due: a turn that streams for 8 s.
    app.api.set_slow(Duration::from_secs(8));
    tui.type_line("and one more thing SLOW_REPLY");
    assert!(wait_until(30, || app.api.saw("one more thing SLOW_REPLY")));
    let waits = if has_inbox {
        "waits for the turn to end"
    } else {
        "conversation open in claude"
    };
    assert!(
        wait_until(30, || waiting_reason(&app)
            .is_some_and(|r| r.starts_with(waits))),
        "due while busy: it waits ({waits}): {:?}",
        app.pending()
    );
    assert!(app.runs().is_empty(), "nothing delivered mid-turn");
    app.api.set_slow(Duration::ZERO);
    if !has_inbox {
        // No way in: resumed once after the close.
        assert!(
            wait_until(30, || records(&app, &sid)
                .iter()
                .filter(|r| r["type"] == "assistant")
                .count()
                >= 2),
            "the person's slow turn is answered"
        );
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    }
    assert!(
        wait_until(60, || app
            .runs()
            .iter()
            .any(|r| r["finishedAt"].is_string())),
        "delivered once idle: {:?} {:?}\n{}",
        app.runs(),
        app.pending(),
        tui.screen()
    );
    let r = app.runs()[0].clone();
    let how = if has_inbox { "open" } else { "resumed" };
    assert_eq!(
        (r["status"].as_str(), r["delivery"].as_str()),
        (Some("ok"), Some(how)),
        "{r}"
    );
    // The person's turn is whole, and comes before the follow-up's.
    let recs = records(&app, &sid);
    let text = |r: &Value| r["message"]["content"].to_string();
    let mine = recs
        .iter()
        .position(|r| r["type"] == "user" && text(r).contains("one more thing SLOW_REPLY"))
        .expect("the person's prompt");
    let follow = recs
        .iter()
        .position(|r| r["type"] == "user" && text(r).contains("tidy-up pass"))
        .expect("the follow-up's prompt");
    assert!(mine < follow, "the follow-up comes after the person's turn");
    assert!(
        recs[mine..follow].iter().any(|r| r["type"] == "assistant"),
        "the person's turn was answered before the follow-up began"
    );
    assert!(
        !text(&recs[mine]).contains("tidy-up pass"),
        "nothing merged into what the person typed"
    );
    assert_eq!(forks(&recs), Vec::<String>::new());
    if has_inbox {
        tui.type_line("/exit");
        assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    }
    let log = stop(serve);
    assert_eq!(app.runs().len(), 1, "{log}");
}

/// A person's "no" holds. With `crossSessionInbound: "hold"` (as with bypassed permissions)
/// Claude Code 2.1.332 holds a message its inbox took until the person approves it. The
/// person never does and closes the TUI: the follow-up is recorded as declined and is not
/// resumed after the close, which would run what they held back. (2.1.197 has no inbox: it
/// is resumed after the close, as there is no way in to decline.)
#[test]
fn a_follow_up_held_in_the_tui_and_never_approved_is_not_resumed_after_the_close() {
    let has_inbox = has_inbox();
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    app.ok(&["install", "--scope", "user", "--daemon", "none"]);
    app.ok(&["hooks", "update", "post-task", "--delay", "2"]);
    let settings = app.env.claude_home().join("settings.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    v["crossSessionInbound"] = "hold".into();
    std::fs::write(&settings, v.to_string()).unwrap();
    let serve = app.spawn(&["serve", "--quiet-period", "1"]);
    let tui = Tui::start(&app.env, &app.proj);
    tui.type_line("build the feature SAY_DONE");
    let sid = session_of(&app);
    if has_inbox {
        assert!(
            wait_until(60, || app.runs().iter().any(|r| r["delivery"] == "open")),
            "handed to the open TUI: {:?} {:?}\n{}",
            app.runs(),
            app.pending(),
            tui.screen()
        );
        assert!(
            tui.wait_for(30, "Held peer message"),
            "held for the person: {}",
            tui.screen()
        );
    }
    tui.type_line("/exit");
    assert!(wait_until(30, || !tui.alive()), "{}", tui.screen());
    if has_inbox {
        assert!(
            wait_until(30, || app
                .runs()
                .iter()
                .any(|r| r["finishedAt"].is_string())),
            "{:?}",
            app.runs()
        );
        app.ok(&["tick", "--quiet-period", "0"]);
        let log = stop(serve);
        let runs = app.runs();
        assert_eq!(runs.len(), 1, "never resumed after the no: {runs:?}\n{log}");
        let status = runs[0]["status"].as_str().unwrap_or_default();
        assert!(
            status.starts_with("skipped:") && status.contains("declined"),
            "{}",
            runs[0]
        );
        assert!(
            !app.api.saw("tidy-up pass"),
            "the held prompt never reached the model"
        );
    } else {
        assert!(
            wait_until(60, || app.runs().iter().any(|r| r["status"] == "ok")),
            "{:?} {:?}",
            app.runs(),
            app.pending()
        );
        stop(serve);
        assert_eq!(app.runs()[0]["delivery"], "resumed");
    }
    assert!(app.pending().is_empty(), "{:?}", app.pending());
    let recs = records(&app, &sid);
    assert_eq!(forks(&recs), Vec::<String>::new(), "one chain");
}
