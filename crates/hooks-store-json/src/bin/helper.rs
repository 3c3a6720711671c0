//! Test helper: drives a store from its own process, so tests can run several at once or
//! kill one mid-write. Built only with the `failpoints` feature.
//!
//! - `enqueue DIR FIRST COUNT`: COUNT enqueues, one write each, of sessions `sFIRST…`;
//! - `claim DIR OWNER`: claims and completes due entries until none are left, printing
//!   each claimed session id on its own line;
//! - `stamp DIR HOOK FIRST COUNT`: stamps (HOOK, `sN`) for N in FIRST..FIRST+COUNT and
//!   prints `sN won` or `sN lost` for each;
//! - `create DIR NAME`: creates one hook (with `HOOKS_FAILPOINT=after-temp-write`, dies
//!   between the temp write and the rename).

use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::process::ExitCode;
use std::task::{Context, Poll, Waker};

use hooks_core::ports::{HookStore, SessionStore, StampResult};
use hooks_core::*;
use hooks_store_json::{JsonStore, SessionFiles};
use time::{Duration, OffsetDateTime};

/// The store's futures never wait on anything, so polling once completes them.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let now = OffsetDateTime::now_utc();
    let run = || -> Result<(), String> {
        let dir = Path::new(args.get(1).ok_or("missing DIR")?);
        let store = JsonStore::open(dir, now).map_err(|e| e.to_string())?;
        match args.first().map(String::as_str) {
            Some("enqueue") => {
                let first: usize = args.get(2).and_then(|s| s.parse().ok()).ok_or("FIRST")?;
                let count: usize = args.get(3).and_then(|s| s.parse().ok()).ok_or("COUNT")?;
                for i in first..first + count {
                    let entry = {
                        let mut o = PendingEntry::new(
                            post_task_id(),
                            SessionId::parse(&format!("s{i}")).map_err(|e| e.to_string())?,
                            DueAt::At(now),
                        );
                        o.error = None;
                        o.queued_at = Some(now);
                        o.retries = 0;
                        o.claim = None;
                        o.waiting = None;
                        o
                    };
                    block_on(store.enqueue(vec![entry])).map_err(|e| e.to_string())?;
                }
            }
            Some("claim") => {
                let owner = args.get(2).ok_or("OWNER")?;
                loop {
                    let now = OffsetDateTime::now_utc();
                    let got = block_on(store.claim_due(now, owner, Duration::minutes(5), 7))
                        .map_err(|e| e.to_string())?;
                    if got.is_empty() {
                        break;
                    }
                    for e in got {
                        println!("{}", e.session_id);
                        block_on(store.complete(&e.key(), owner, None))
                            .map_err(|e| e.to_string())?;
                    }
                }
            }
            Some("stamp") => {
                let files = SessionFiles::new(dir);
                let hook = HookId::parse(args.get(2).ok_or("HOOK")?).map_err(|e| e.to_string())?;
                let first: u32 = args.get(3).and_then(|s| s.parse().ok()).ok_or("FIRST")?;
                let count: u32 = args.get(4).and_then(|s| s.parse().ok()).ok_or("COUNT")?;
                for i in first..first + count {
                    let s = SessionId::parse(&format!("s{i}")).map_err(|e| e.to_string())?;
                    let at = OffsetDateTime::now_utc();
                    match block_on(SessionStore::stamp(&files, &s, &hook, at))
                        .map_err(|e| e.to_string())?
                    {
                        StampResult::Won => println!("{s} won"),
                        StampResult::Lost { .. } => println!("{s} lost"),
                    }
                }
            }
            Some("create") => {
                let name = args.get(2).ok_or("NAME")?;
                let pf =
                    PromptFile::parse(".claude/agents/hooks/x.md").map_err(|e| e.to_string())?;
                let spec = HookSpec::new(name, pf).map_err(|e| e.to_string())?;
                block_on(store.create_hook(spec, now)).map_err(|e| e.to_string())?;
            }
            _ => return Err("usage: enqueue|claim|stamp|create DIR …".into()),
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
