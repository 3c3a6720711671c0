//! Durable store operations per second at 100, 1,000 and 10,000 pending, and the machine's
//! own floor (write, fsync, rename, fsync the folder). Prints one JSON object; run by
//! `cargo xtask bench`. `--quick` does fewer operations.

use std::future::Future;
use std::io::Write;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use hooks_core::ports::HookStore;
use hooks_core::*;
use hooks_store_json::JsonStore;
use time::{Duration, OffsetDateTime};

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn entry(s: &str, due: OffsetDateTime) -> PendingEntry {
    {
        let mut o = PendingEntry::new(
            post_task_id(),
            SessionId::parse(s).expect("session id"),
            DueAt::At(due),
        );
        o.error = None;
        o.queued_at = Some(due);
        o.retries = 0;
        o.claim = None;
        o.waiting = None;
        o
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let ops = if quick { 20 } else { 200 };
    let now = OffsetDateTime::now_utc();
    let later = now + Duration::days(1);
    let mut rows = Vec::new();
    for n in [100usize, 1_000, 10_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonStore::open(dir.path(), now).expect("open");
        block_on(store.enqueue((0..n).map(|i| entry(&format!("bg{i}"), later)).collect()))
            .expect("fill");
        let t = Instant::now();
        for i in 0..ops {
            block_on(store.enqueue(vec![entry(&format!("e{i}"), later)])).expect("enqueue");
        }
        let enqueue = t.elapsed().as_secs_f64() / ops as f64;
        block_on(
            store.enqueue(
                (0..ops)
                    .map(|i| entry(&format!("d{i}"), now - Duration::seconds(1)))
                    .collect(),
            ),
        )
        .expect("due");
        let t = Instant::now();
        for _ in 0..ops {
            let got =
                block_on(store.claim_due(now, "bench", Duration::seconds(90), 1)).expect("claim");
            let key = got.first().expect("a due entry").key();
            block_on(store.complete(&key, "bench", None)).expect("complete");
        }
        let claim = t.elapsed().as_secs_f64() / ops as f64;
        let bytes = std::fs::metadata(store.path())
            .map(|m| m.len())
            .unwrap_or(0);
        rows.push(format!(
            "{{\"pending\":{n},\"fileBytes\":{bytes},\"enqueuePerSec\":{:.1},\"enqueueMsPerOp\":{:.3},\"claimCompletePerSec\":{:.1},\"claimCompleteMsPerOp\":{:.3}}}",
            1.0 / enqueue,
            enqueue * 1000.0,
            1.0 / claim,
            claim * 1000.0
        ));
    }
    // The floor: what one durable replace of a small file costs on this file system.
    let dir = tempfile::tempdir().expect("temp dir");
    let t = Instant::now();
    for i in 0..ops {
        let tmp = dir.path().join(format!("t{i}"));
        let mut f = std::fs::File::create(&tmp).expect("create");
        f.write_all(&[b'x'; 4096]).expect("write");
        f.sync_all().expect("fsync");
        std::fs::rename(&tmp, dir.path().join("f")).expect("rename");
        std::fs::File::open(dir.path())
            .and_then(|d| d.sync_all())
            .expect("fsync dir");
    }
    let floor = t.elapsed().as_secs_f64() / ops as f64;
    println!(
        "{{\"store\":[{}],\"durableReplacePerSec\":{:.1},\"durableReplaceMsPerOp\":{:.3},\"ops\":{ops}}}",
        rows.join(","),
        1.0 / floor,
        floor * 1000.0
    );
}
