//! A follow-up delivered into a conversation open in Claude Code's TUI, as one turn of it.
//!
//! Claude Code 2.1.332 gives each interactive session an inbox: a Unix socket named in
//! its `sessions/<pid>.json` (`messagingSocketPath`) that takes one JSON object a line,
//! `{"type":"user","message":{"role":"user","content":…},"session_id":…}`. An idle TUI takes
//! the message at once as a turn the person sees; nothing is written back. So the turn is
//! followed in the transcript: taken when a user line holding the prompt appears after the
//! point the delivery began, over when the last assistant line after it ends the turn and
//! the file has been still for a moment. Its usage, replies and last text become the run's
//! outcome (the core prices it).
//!
//! Once the inbox has the line the follow-up is handed over, and the person decides: Claude
//! Code may hold a message for approval (`crossSessionInbound: "hold"`, or any message to a
//! session that bypasses permissions), and an approval may come minutes later. So the turn
//! is waited for until the run's timeout or the TUI's close; never taken, it is
//! [`Status::Skipped`] (declined, or closed first) and never resumed as well, which would run
//! it twice or after a "no". Only an inbox that could not be reached is a
//! [`Status::Requeued`] outcome: nothing was handed over, and the entry waits for the close
//! to be resumed.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hooks_core::live::OpenDelivery;
use hooks_core::ports::RunHandle;
use hooks_core::{ProcessRef, RunOutcome, Status, Usage};
use serde_json::Value;

/// How often the transcript is looked at.
const POLL: Duration = Duration::from_millis(200);
/// How long the transcript must be still after a turn's last reply.
const SETTLE: Duration = Duration::from_millis(600);

/// A delivery under way.
pub struct OpenRun {
    pub delivery: OpenDelivery,
    pub session_id: String,
    /// The hook whose follow-up this is: the message's first line names it.
    pub hook_id: String,
    pub prompt: String,
    /// How long the whole delivery may take: the conversation's taking it (a person may
    /// be asked first) and its turn.
    pub timeout: Duration,
}

#[async_trait]
impl RunHandle for OpenRun {
    fn process(&self) -> Option<ProcessRef> {
        None
    }

    async fn wait(self: Box<Self>) -> RunOutcome {
        tokio::task::spawn_blocking(move || deliver(&self))
            .await
            .unwrap_or_else(|e| failed(format!("the delivery stopped: {e}")))
    }
}

fn failed(why: String) -> RunOutcome {
    RunOutcome::new(Status::error(why))
}

fn not_reached(why: String) -> RunOutcome {
    RunOutcome::new(Status::Requeued(why))
}

/// Handed over and never taken: the person's part, so no run follows.
fn never_taken(why: &str) -> RunOutcome {
    RunOutcome::new(Status::skipped(format!(
        "{why}: held for the person's approval and declined, or closed first; handed over, so not resumed"
    )))
}

fn alive(pid: u32) -> bool {
    hooks_platform::process::process(pid).is_some_and(|p| p.alive)
}

fn deliver(run: &OpenRun) -> RunOutcome {
    let d = &run.delivery;
    let started = Instant::now();
    let from = std::fs::metadata(&d.transcript).map_or(0, |m| m.len());
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": hooks_core::live::delivered_message(&run.hook_id, &run.prompt)},
        "session_id": run.session_id,
        "priority": "next",
        "from": "hooks-app",
    });
    let sent =
        std::os::unix::net::UnixStream::connect(&d.inbox).and_then(|mut s| writeln!(s, "{line}"));
    if let Err(e) = sent {
        return not_reached(format!("its inbox could not be reached: {e}"));
    }
    // The prompt's first line, as the transcript's user line will hold it.
    let needle: String = run
        .prompt
        .trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    let mut last_size = from;
    let mut still_since = Instant::now();
    loop {
        std::thread::sleep(POLL);
        let turn = read_turn(&d.transcript, from, &needle);
        let size = std::fs::metadata(&d.transcript).map_or(0, |m| m.len());
        if size != last_size {
            last_size = size;
            still_since = Instant::now();
        }
        match turn {
            None if started.elapsed() > run.timeout => {
                return never_taken(&format!(
                    "the open conversation did not take it in {} s",
                    run.timeout.as_secs()
                ));
            }
            None if !alive(d.pid) => {
                return never_taken("the conversation was closed without taking it");
            }
            None => continue,
            Some(t) => {
                if t.ended && still_since.elapsed() >= SETTLE {
                    return t.outcome(started.elapsed());
                }
                if !alive(d.pid) {
                    let mut o = t.outcome(started.elapsed());
                    o.status = Some(Status::error(
                        "the conversation was closed during the follow-up's turn",
                    ));
                    return o;
                }
                if started.elapsed() > run.timeout {
                    let mut o = t.outcome(started.elapsed());
                    o.status = Some(Status::error(format!(
                        "timed out after {} s in the open conversation",
                        run.timeout.as_secs()
                    )));
                    return o;
                }
            }
        }
    }
}

/// The delivered turn as the transcript has it so far.
struct Turn {
    /// Per assistant message id, its usage (the last line of it) in order of appearance.
    messages: Vec<(String, Option<Usage>)>,
    last_text: Option<String>,
    ended: bool,
    api_error: Option<(u16, String)>,
}

impl Turn {
    fn outcome(&self, took: Duration) -> RunOutcome {
        let usage = self.messages.iter().filter_map(|(_, u)| *u).reduce(|a, b| {
            let mut o = Usage::default();
            o.input_tokens = add(a.input_tokens, b.input_tokens);
            o.cache_creation_input_tokens =
                add(a.cache_creation_input_tokens, b.cache_creation_input_tokens);
            o.cache_read_input_tokens = add(a.cache_read_input_tokens, b.cache_read_input_tokens);
            o.output_tokens = add(a.output_tokens, b.output_tokens);
            o
        });
        let completed = self.last_text.as_deref().map(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim)
                == Some("COMPLETED")
        });
        let (status, api_error_status, text) = match &self.api_error {
            Some((code, text)) => (Status::error(text.clone()), Some(*code), Some(text.clone())),
            None => (Status::Ok, None, self.last_text.clone()),
        };
        {
            let mut o = RunOutcome::new(status);
            o.exit_code = None;
            o.completed = completed;
            o.num_turns = Some(self.messages.len() as u64);
            o.cost_usd = None;
            o.usage = usage;
            o.duration_ms = Some(took.as_millis() as u64);
            o.session_id = None;
            o.result_text = text;
            o.api_error_status = api_error_status;
            o
        }
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Reads the transcript from byte `from`: `None` until a user line holding `needle` is
/// there; then the assistant lines after it.
fn read_turn(path: &str, from: u64, needle: &str) -> Option<Turn> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = hooks_platform::open_regular(std::path::Path::new(path), false).ok()?;
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = Vec::new();
    // Bounded: a turn's lines, not a whole conversation.
    f.take(64 * 1024 * 1024).read_to_end(&mut buf).ok()?;
    let mut turn: Option<Turn> = None;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut texts_of_last: Vec<String> = Vec::new();
    let mut last_id: Option<String> = None;
    for raw in buf.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        if v["isSidechain"] == true {
            continue;
        }
        match (v["type"].as_str(), &mut turn) {
            (Some("user"), None)
                if texts(&v["message"]["content"])
                    .iter()
                    .any(|t| t.contains(needle)) =>
            {
                turn = Some(Turn {
                    messages: Vec::new(),
                    last_text: None,
                    ended: false,
                    api_error: None,
                });
            }
            (Some("user"), Some(t)) => {
                let content = &v["message"]["content"];
                let tool_result = content
                    .as_array()
                    .is_some_and(|b| b.iter().any(|x| x["type"] == "tool_result"));
                if tool_result {
                    // Tools run: the turn goes on.
                    t.ended = false;
                } else {
                    // The person's next prompt: the follow-up's turn ended before it, and
                    // nothing after it is the follow-up's.
                    t.ended = true;
                    break;
                }
            }
            (Some("assistant"), Some(t)) => {
                let m = &v["message"];
                if v["isApiErrorMessage"] == true {
                    let text = texts(&m["content"]).join("\n");
                    let code = v["apiErrorStatus"]
                        .as_u64()
                        .and_then(|c| u16::try_from(c).ok());
                    t.api_error = Some((code.unwrap_or(0), text));
                    t.ended = true;
                    continue;
                }
                let id = m["id"].as_str().unwrap_or_default().to_owned();
                let usage = m.get("usage").map(|u| {
                    let mut o = Usage::default();
                    o.input_tokens = u["input_tokens"].as_u64();
                    o.cache_creation_input_tokens = u["cache_creation_input_tokens"].as_u64();
                    o.cache_read_input_tokens = u["cache_read_input_tokens"].as_u64();
                    o.output_tokens = u["output_tokens"].as_u64();
                    o
                });
                match index.get(&id) {
                    Some(&i) => t.messages[i].1 = usage.or(t.messages[i].1),
                    None => {
                        index.insert(id.clone(), t.messages.len());
                        t.messages.push((id.clone(), usage));
                    }
                }
                if last_id.as_deref() != Some(id.as_str()) {
                    texts_of_last.clear();
                    last_id = Some(id);
                }
                texts_of_last.extend(texts(&m["content"]));
                if !texts_of_last.is_empty() {
                    t.last_text = Some(texts_of_last.join("\n"));
                }
                t.ended = matches!(
                    m["stop_reason"].as_str(),
                    Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal")
                );
            }
            _ => {}
        }
    }
    turn
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    fn run(dir: &std::path::Path, timeout: Duration) -> OpenRun {
        OpenRun {
            delivery: OpenDelivery {
                inbox: dir.join("inbox.sock").display().to_string(),
                pid: std::process::id(),
                transcript: dir.join("s.jsonl").display().to_string(),
            },
            session_id: "s".into(),
            hook_id: "post-task".into(),
            prompt: "Do a short tidy-up pass.\nEnd with COMPLETED.".into(),
            timeout,
        }
    }

    fn assistant(id: &str, text: &str, stop: &str, out: u64) -> String {
        serde_json::json!({"type": "assistant", "message": {"id": id, "model": "claude-x",
            "content": [{"type": "text", "text": text}], "stop_reason": stop,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 1000, "output_tokens": out}}})
        .to_string()
    }

    #[test]
    fn a_delivered_turn_is_read_back_from_the_transcript() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("s.jsonl");
        std::fs::write(
            &t,
            "{\"type\":\"user\",\"message\":{\"content\":\"Do a short tidy-up pass.\"}}\n",
        )
        .unwrap();
        let listener = std::os::unix::net::UnixListener::bind(d.path().join("inbox.sock")).unwrap();
        let transcript = t.clone();
        // The open conversation: takes the line, then writes the turn (a tool call, its
        // result, the reply) after what was there.
        let tui = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut line = String::new();
            std::io::BufReader::new(s).read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            // The person sees whose message it is, then the prompt.
            assert_eq!(
                v["message"]["content"],
                "[hooks-app follow-up: post-task. Sent by hooks-app, not typed by you; `hooks-app pause` stops these.]\n\nDo a short tidy-up pass.\nEnd with COMPLETED."
            );
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&transcript)
                .unwrap();
            let user = serde_json::json!({"type": "user", "isMeta": true, "origin": {"kind": "peer"},
                "message": {"role": "user", "content": format!("Another session: {}", v["message"]["content"].as_str().unwrap())}});
            writeln!(f, "{user}").unwrap();
            writeln!(f, "{}", assistant("m1", "looking", "tool_use", 5)).unwrap();
            writeln!(f, "{}", serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}})).unwrap();
            writeln!(
                f,
                "{}",
                assistant("m2", "Tidied.\nCOMPLETED", "end_turn", 7)
            )
            .unwrap();
            // The person's next prompt and its reply are not the follow-up's.
            writeln!(
                f,
                "{}",
                serde_json::json!({"type": "user", "message": {"content": "thanks"}})
            )
            .unwrap();
            writeln!(f, "{}", assistant("m3", "you are welcome", "end_turn", 99)).unwrap();
            v
        });
        let o = deliver(&run(d.path(), Duration::from_secs(10)));
        let sent = tui.join().unwrap();
        assert_eq!(sent["session_id"], "s");
        assert_eq!(sent["type"], "user");
        assert_eq!(o.status, Some(Status::Ok), "{o:?}");
        assert_eq!(o.completed, Some(true));
        assert_eq!(o.num_turns, Some(2));
        let u = o.usage.unwrap();
        assert_eq!(
            (u.output_tokens, u.cache_read_input_tokens),
            (Some(12), Some(2000))
        );
        assert_eq!(o.result_text.as_deref(), Some("Tidied.\nCOMPLETED"));
    }

    #[test]
    fn an_inbox_that_cannot_be_reached_is_no_run_and_hands_nothing_over() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.jsonl"), "").unwrap();
        let o = deliver(&run(d.path(), Duration::from_secs(5)));
        assert!(
            matches!(o.status, Some(Status::Requeued(ref w)) if w.contains("inbox")),
            "{o:?}"
        );
        assert_eq!(o.cost_usd, None);
    }

    /// The attack of a held message: the inbox takes the line and the person is asked.
    /// Never taken, it is the person's "no" (or a close): skipped, never a requeue that
    /// would resume it after the close.
    #[test]
    fn a_delivery_handed_over_and_never_taken_is_skipped_not_requeued() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.jsonl"), "").unwrap();
        let _listener =
            std::os::unix::net::UnixListener::bind(d.path().join("inbox.sock")).unwrap();
        let o = deliver(&run(d.path(), Duration::from_millis(500)));
        assert!(
            matches!(o.status, Some(Status::Skipped(ref w)) if w.contains("not resumed")),
            "{o:?}"
        );
        assert_eq!(o.cost_usd, None);
        // The TUI closes while the message is held: the same, at once.
        let mut tui = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let mut r = run(d.path(), Duration::from_secs(600));
        r.delivery.pid = tui.id();
        let closer = std::thread::spawn(move || {
            tui.kill().unwrap();
            tui.wait().unwrap();
        });
        let o = deliver(&r);
        closer.join().unwrap();
        assert!(
            matches!(o.status, Some(Status::Skipped(ref w)) if w.contains("closed without taking it")),
            "{o:?}"
        );
    }

    /// Approved well after it was held (the old 20 s wait long passed in the field): the
    /// turn is the follow-up's one run, recorded as such.
    #[test]
    fn a_held_delivery_approved_late_is_its_one_run() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("s.jsonl");
        std::fs::write(&t, "").unwrap();
        let listener = std::os::unix::net::UnixListener::bind(d.path().join("inbox.sock")).unwrap();
        let (approve, approved) = std::sync::mpsc::channel::<()>();
        let tui = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut line = String::new();
            std::io::BufReader::new(s).read_line(&mut line).unwrap();
            // Held until the person answers.
            approved.recv().unwrap();
            let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
            let user = serde_json::json!({"type": "user", "isMeta": true,
                "message": {"role": "user", "content": "Do a short tidy-up pass."}});
            writeln!(f, "{user}").unwrap();
            writeln!(
                f,
                "{}",
                assistant("m1", "Tidied.\nCOMPLETED", "end_turn", 7)
            )
            .unwrap();
        });
        let r = run(d.path(), Duration::from_secs(600));
        let delivery = std::thread::spawn(move || deliver(&r));
        // The delivery is still waiting on the person after several looks.
        std::thread::sleep(POLL * 5);
        assert!(!delivery.is_finished(), "still waiting on the person");
        approve.send(()).unwrap();
        let o = delivery.join().unwrap();
        tui.join().unwrap();
        assert_eq!(o.status, Some(Status::Ok), "{o:?}");
        assert_eq!(o.result_text.as_deref(), Some("Tidied.\nCOMPLETED"));
    }
}
