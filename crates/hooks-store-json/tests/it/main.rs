//! The JSON store on real files in temp dirs, and from several real processes.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use hooks_core::ports::*;
use hooks_core::*;
use hooks_store_json::{BACKUP_FILE, JsonStore, STORE_FILE};
use serde_json::Value;
use time::{Duration, OffsetDateTime};

mod processes;
mod sessions;
mod support;

use support::*;

/// The store contract, one test a rule.
mod contract_on_the_json_store {
    use super::*;
    hooks_core::hook_store_contract!(|| {
        let d = tempfile::tempdir().unwrap();
        let s = JsonStore::open(d.path(), now()).unwrap();
        (d, Arc::new(s) as Arc<dyn HookStore>)
    });
    // Two handles on one folder, as two processes hold it.
    hooks_core::store_signals_contract!(|| {
        let d = tempfile::tempdir().unwrap();
        let a = JsonStore::open(d.path(), now()).unwrap();
        let b = JsonStore::open(d.path(), now()).unwrap();
        (d, Arc::new(a), Arc::new(b))
    });
}

#[tokio::test]
async fn seeds_post_task_only_when_the_file_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested/data");
    let store = JsonStore::open(&data, now()).unwrap();
    let hooks = store.snapshot().await.unwrap().hooks;
    assert_eq!(hooks.len(), 2);
    // The second seed: continue-after-limit, off, on the failure event.
    let c = hooks
        .iter()
        .find(|h| h.id == continue_after_limit_id())
        .expect("continue-after-limit is seeded");
    assert_eq!(
        (
            c.enabled,
            c.event,
            c.delay.seconds(),
            c.errors.to_string().as_str()
        ),
        (
            false,
            Event::ConversationFailed,
            60,
            "rate_limit,overloaded,server_error"
        )
    );
    let h = hooks.iter().find(|h| h.id == post_task_id()).unwrap();
    assert_eq!(
        (
            h.id.as_str(),
            h.delay.seconds(),
            h.prompt_file.as_str(),
            h.enabled,
            h.skip_cron,
            h.skip_subagents,
            h.max_context.k()
        ),
        (
            "post-task",
            10,
            ".claude/agents/hooks/post-task.md",
            true,
            true,
            true,
            60
        )
    );
    assert_eq!(h.created_at, Some(now()));
    // Deleting it and reopening does not bring it back: the file exists.
    store.delete_hook(&post_task_id()).await.unwrap();
    store.delete_hook(&continue_after_limit_id()).await.unwrap();
    let again = JsonStore::open(&data, now()).unwrap();
    assert!(again.snapshot().await.unwrap().hooks.is_empty());
    // Modes: folder 0700, file 0600.
    assert_eq!(
        fs::metadata(&data).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        fs::metadata(data.join(STORE_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[tokio::test]
async fn loads_the_original_format() {
    let (_d, store) = store_with(&fs::read_to_string(fixture("original-v1.json")).unwrap());
    let snap = store.snapshot().await.unwrap();
    let pt = snap
        .hooks
        .iter()
        .find(|h| h.id.as_str() == "post-task")
        .unwrap();
    assert_eq!(pt.delay.seconds(), 120, "delayMinutes 2 becomes 120 s");
    assert_eq!(
        pt.last_status,
        Some(Status::skipped("context 71k over the 60k cap"))
    );
    let hist: Vec<_> = pt
        .history
        .entries()
        .iter()
        .map(|e| e.session.as_str())
        .collect();
    assert_eq!(hist, ["sess-a", "sess-b"]);
    let cl = snap
        .hooks
        .iter()
        .find(|h| h.id.as_str() == "changelog")
        .unwrap();
    assert_eq!(
        cl.prompt_file.as_str(),
        ".claude/agents/hooks/changelog.md",
        "leading / stripped"
    );
    assert_eq!(
        cl.event,
        Event::ConversationDone,
        "empty event means conversation-done"
    );
    assert_eq!(
        cl.created_at.map(|t| t.unix_timestamp()),
        Some(1_795_573_800)
    );
    // Pending: the +0000 entry, the unparseable one (due at once), the future one; the
    // invalid session id is kept in the file but never offered.
    let sessions: Vec<_> = snap.pending.iter().map(|p| p.session_id.as_str()).collect();
    assert_eq!(sessions, ["sess-c", "sess-d", "sess-e"]);
    assert_eq!(
        snap.pending[1].due_at,
        DueAt::Unparseable("next tuesday".into())
    );
    assert_eq!(store.invalid_pending().unwrap().len(), 1);
    let claimed = store
        .claim_due(now(), "me", Duration::seconds(60), 10)
        .await
        .unwrap();
    let mut got: Vec<_> = claimed.iter().map(|p| p.session_id.to_string()).collect();
    got.sort();
    assert_eq!(
        got,
        ["sess-c", "sess-d"],
        "an unparseable dueAt counts as due"
    );
}

#[tokio::test]
async fn a_rewrite_keeps_unknown_fields_and_migrates() {
    let (d, store) = store_with(&fs::read_to_string(fixture("original-v1.json")).unwrap());
    store
        .update_hook(&HookId::parse("post-task").unwrap(), &{
            let mut o = HookPatch::default();
            o.enabled = Some(false);
            o
        })
        .await
        .unwrap();
    store
        .update_hook(&HookId::parse("changelog").unwrap(), &{
            let mut o = HookPatch::default();
            o.enabled = Some(true);
            o
        })
        .await
        .unwrap();
    let v = read_json(&d.path().join(STORE_FILE));
    assert_eq!(v["schema"], "kept-as-is", "unknown top-level field kept");
    assert_eq!(
        v["hooks"]["changelog"]["color"], "teal",
        "unknown hook field kept"
    );
    assert_eq!(v["hooks"]["changelog"]["ui"]["pinned"], true);
    assert_eq!(v["hooks"]["post-task"]["delaySeconds"], 120);
    assert!(
        v["hooks"]["post-task"].get("delayMinutes").is_none(),
        "migrated field is dropped, as the original does"
    );
    assert_eq!(
        v["hooks"]["post-task"]["history"]["2026-11-22T11:30:00+0100"],
        "sess-b"
    );
    assert_eq!(
        v["hooks"]["changelog"]["createdAt"], "2026-11-25T08:00:00+0530",
        "timestamps keep their stored form"
    );
    let pend = v["pending"].as_array().unwrap();
    assert_eq!(
        pend.len(),
        4,
        "no pending entry lost, invalid ones included"
    );
    assert_eq!(
        pend[1]["dueAt"], "next tuesday",
        "an unparseable dueAt is kept as it was"
    );
    assert_eq!(pend[3]["sessionId"], "../../etc/passwd");
}

#[tokio::test]
async fn entries_from_before_wait_kinds_are_read_by_kind_and_counters_split() {
    // Written by the version before: waits with words and an `open` flag, a limit's
    // attempts counted in `retries`.
    let text = r#"{"hooks": {"h": {"id": "h", "name": "h", "enabled": true,
      "promptFile": ".claude/agents/hooks/h.md", "delayMinutes": 1}}, "pending": [
      {"hookId": "h", "sessionId": "limited", "dueAt": "2026-12-01T02:01:00+0000", "retries": 2,
       "error": "rate_limit",
       "waiting": {"reason": "rate limited until 2026-12-01T02:01:00+0000 (attempt 3 of 5)",
                   "since": "2026-12-01T00:00:00+0000"}},
      {"hookId": "h", "sessionId": "untaken", "dueAt": "2026-12-02T00:00:00+0000", "retries": 0,
       "waiting": {"reason": "not taken by the open conversation (no inbox); resumed once it is closed",
                   "since": "2026-12-01T00:00:00+0000", "open": true}},
      {"hookId": "h", "sessionId": "open", "dueAt": "2026-12-02T00:00:00+0000", "retries": 1,
       "waiting": {"reason": "conversation open in claude, pid 7, interactive, idle",
                   "since": "2026-12-01T00:00:00+0000", "open": true}},
      {"hookId": "h", "sessionId": "paused", "dueAt": "2026-12-01T01:00:00+0000", "retries": 0,
       "waiting": {"reason": "paused until `hooks-app unpause` (by me)",
                   "since": "2026-12-01T00:00:00+0000"}}
    ]}"#;
    let (d, store) = store_with(text);
    let got = |snap: &Snapshot| {
        snap.pending
            .iter()
            .map(|p| {
                let kind = p.waiting.as_ref().map(|w| w.kind);
                (
                    p.session_id.to_string(),
                    kind,
                    p.retries,
                    p.attempts,
                    p.not_taken,
                )
            })
            .collect::<Vec<_>>()
    };
    let want = [
        ("limited".to_string(), Some(WaitKind::Limit), 0, 2, 0),
        ("untaken".to_string(), Some(WaitKind::NotTaken), 0, 0, 1),
        ("open".to_string(), Some(WaitKind::Open), 1, 0, 0),
        ("paused".to_string(), Some(WaitKind::Paused), 0, 0, 0),
    ];
    assert_eq!(got(&store.snapshot().await.unwrap()), want);
    // Put back by this version, an entry is stored with its kind and counters, and read
    // back the same; the original module's fields stay.
    let later = stamp::parse("2026-12-03T00:00:00+0000").unwrap();
    let claimed = store
        .claim_due(later, "me", Duration::minutes(1), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 4);
    for e in &claimed {
        let to = Requeue::of(e, later, e.waiting.clone());
        store.requeue(&e.key(), "me", &to).await.unwrap();
    }
    let file = read_json(&d.path().join(STORE_FILE));
    let limited = &file["pending"][0];
    assert_eq!(
        (
            &limited["retries"],
            &limited["attempts"],
            &limited["waiting"]["kind"]
        ),
        (&Value::from(0), &Value::from(2), &Value::from("limit")),
        "{limited}"
    );
    assert_eq!(file["pending"][1]["waiting"]["open"], Value::from(true));
    let again = JsonStore::open(d.path(), now()).unwrap();
    assert_eq!(got(&again.snapshot().await.unwrap()), want);
}

#[tokio::test]
async fn history_over_200_in_a_file_is_capped_on_load() {
    let mut hist = serde_json::Map::new();
    for i in 0..230 {
        let t = now() - Duration::hours(230 - i);
        hist.insert(hooks_core::stamp::format(t), Value::from(format!("s{i}")));
    }
    let text = serde_json::json!({"hooks": {"h": {"id": "h", "name": "H", "event": "conversation-done", "delaySeconds": 5,
        "promptFile": ".claude/agents/hooks/h.md", "enabled": true, "skipCron": true, "skipSubagents": true,
        "maxContextK": 0, "createdAt": null, "lastStatus": null, "history": hist}}, "pending": []});
    let (d, store) = store_with(&text.to_string());
    let h = store
        .get_hook(&HookId::parse("h").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.history.len(), 200);
    assert_eq!(
        h.history.entries()[0].session,
        "s30",
        "the 30 oldest are not kept"
    );
    store
        .record(
            &h.id,
            &SessionId::parse("new").unwrap(),
            HookRecord {
                status: Status::Ok,
                fired_at: Some(now()),
            },
        )
        .await
        .unwrap();
    let v = read_json(&d.path().join(STORE_FILE));
    assert_eq!(v["hooks"]["h"]["history"].as_object().unwrap().len(), 200);
}

#[tokio::test]
async fn a_corrupt_file_is_refused_and_never_overwritten() {
    let text = "{\n  \"hooks\": {\n    \"x\": oops\n  }\n}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STORE_FILE);
    fs::write(&path, text).unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let e = store.snapshot().await.unwrap_err().to_string();
    assert!(
        e.contains(STORE_FILE) && e.contains("line 3, column 10"),
        "{e}"
    );
    let pe = due_entry("s", now());
    assert!(matches!(
        store.enqueue(vec![pe]).await,
        Err(StoreError::Corrupt(_))
    ));
    let spec = HookSpec::new("x", PromptFile::parse(".claude/agents/hooks/x.md").unwrap()).unwrap();
    assert!(store.create_hook(spec, now()).await.is_err());
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        text,
        "the corrupt file is left exactly as it was"
    );
    // An invalid hook is named with its field.
    let (_d2, bad) = store_with(r#"{"hooks": {"h": {"promptFile": "../x.md"}}, "pending": []}"#);
    let e = bad.snapshot().await.unwrap_err().to_string();
    assert!(e.contains("\"h\"") && e.contains("promptFile"), "{e}");
}

#[tokio::test]
async fn the_last_good_copy_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let before = fs::read(dir.path().join(STORE_FILE)).unwrap();
    store
        .update_hook(&post_task_id(), &{
            let mut o = HookPatch::default();
            o.enabled = Some(false);
            o
        })
        .await
        .unwrap();
    assert_eq!(
        fs::read(dir.path().join(BACKUP_FILE)).unwrap(),
        before,
        ".bak holds the previous version"
    );
    assert_ne!(fs::read(dir.path().join(STORE_FILE)).unwrap(), before);
}

#[tokio::test]
async fn run_log_is_append_only_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let rec = {
        let mut o = RunRecord::new(post_task_id(), SessionId::parse("s1").unwrap(), now());
        o.run_id = None;
        o.owner = None;
        o.process = None;
        o.finished_at = Some(now() + Duration::seconds(3));
        o.outcome = {
            let mut o = RunOutcome::new(Status::Ok);
            o.exit_code = Some(0);
            o.completed = Some(true);
            o.cost_usd = Some(0.02831);
            o
        };
        o.estimated_cost_usd = None;
        o.model = None;
        o.delivered = false;
        o
    };
    store.append_run(&rec).await.unwrap();
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("runs.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"not json\n").unwrap();
    store.append_run(&rec).await.unwrap();
    let text = fs::read_to_string(dir.path().join("runs.jsonl")).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        serde_json::json!({"hookId": "post-task", "sessionId": "s1", "startedAt": "2026-12-02T08:17:57+0000",
            "finishedAt": "2026-12-02T08:18:00+0000", "status": "ok", "exitCode": 0, "completed": true,
            "numTurns": null, "costUsd": 0.02831, "usage": null, "durationMs": null})
    );
    assert_eq!(
        store.runs(&RunFilter::default()).await.unwrap().len(),
        2,
        "a garbage line does not hide the others"
    );
    assert_eq!(
        fs::metadata(dir.path().join("runs.jsonl"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

/// The run log grows without end; what a listing asks for (the newest runs, those since
/// a day) is read from its end, whatever lies before. Here 64 GiB of a sparse file lie
/// before the recent runs: reading it whole could not be done.
#[tokio::test]
async fn the_run_log_is_read_from_its_end_as_far_as_a_listing_asks() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let log = dir.path().join("runs.jsonl");
    let old = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .unwrap();
    old.set_len(64 << 30).unwrap();
    std::io::Write::write_all(&mut &old, b"\n").unwrap();
    drop(old);
    for i in 0..10 {
        let at = now() + Duration::minutes(i * 10);
        let rec = {
            let mut o = RunRecord::new(
                post_task_id(),
                SessionId::parse(&format!("s{i}")).unwrap(),
                at,
            );
            o.run_id = Some(format!("r{i}"));
            o.owner = None;
            o.process = None;
            o.finished_at = Some(at + Duration::seconds(30));
            o.outcome = {
                let mut o = RunOutcome::new(Status::Ok);
                o.cost_usd = Some(0.01);
                o
            };
            o.estimated_cost_usd = None;
            o.model = None;
            o.delivered = false;
            o
        };
        store.append_run(&rec).await.unwrap();
    }
    let newest = store
        .runs(&RunFilter {
            limit: Some(3),
            ..RunFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(
        newest
            .iter()
            .map(|r| r.run_id.as_deref().unwrap())
            .collect::<Vec<_>>(),
        ["r7", "r8", "r9"]
    );
    let since = store
        .runs(&RunFilter {
            since: Some(now() + Duration::minutes(75)),
            ..RunFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(
        since
            .iter()
            .map(|r| r.run_id.as_deref().unwrap())
            .collect::<Vec<_>>(),
        ["r8", "r9"]
    );
}

#[tokio::test]
async fn an_enqueue_writes_its_entries_in_after_the_last_and_leaves_every_other_byte() {
    let compact = r#"{"hooks":{"post-task":{"id":"post-task","name":"P","event":"conversation-done","delaySeconds":10,"promptFile":".claude/agents/hooks/post-task.md","enabled":true,"history":{"2026-11-01T00:00:00+0000":"old"}}},"pending":[{"hookId":"post-task","sessionId":"a1","dueAt":"2099-01-01T00:00:00+0000","retries":0}],"x-keep":[1,2]}"#;
    let original = fs::read_to_string(fixture("original-v1.json")).unwrap();
    // Over 256 KiB: read through a mapping rather than into memory.
    let large = large_store("\"2026-11-01T00:00:00+0000\":\"run\"");
    for text in [original.as_str(), compact, large.as_str()] {
        let (dir, store) = store_with(text);
        let before: Value = serde_json::from_str(text).unwrap();
        let n = before["pending"].as_array().unwrap().len();
        store
            .enqueue(vec![due_entry("new-1", now()), due_entry("new-2", now())])
            .await
            .unwrap();
        let after = fs::read_to_string(dir.path().join(STORE_FILE)).unwrap();
        let v: Value = serde_json::from_str(&after).unwrap_or_else(|e| panic!("{e}: {after}"));
        let pending = v["pending"].as_array().unwrap();
        assert_eq!(pending.len(), n + 2, "{after}");
        assert_eq!(&pending[..n], &before["pending"].as_array().unwrap()[..]);
        assert_eq!(pending[n]["sessionId"], "new-1");
        assert_eq!(pending[n + 1]["sessionId"], "new-2");
        // Everything but the new entries is byte for byte what was there.
        let last = before["pending"][n - 1]["sessionId"].as_str().unwrap();
        let cut = text.find(&format!("\"{last}\"")).unwrap();
        let at = cut + text[cut..].find('}').unwrap() + 1;
        assert_eq!(&after[..at], &text[..at]);
        assert!(after.ends_with(&text[at..]), "{after}");
        // Laid out like its neighbours.
        let inserted = &after[at..after.len() - (text.len() - at)];
        assert_eq!(
            inserted.contains('\n'),
            text[..at].contains("\n    {"),
            "{inserted:?}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join(BACKUP_FILE)).unwrap(),
            text,
            ".bak is the file as it was"
        );
        // And a second enqueue of the same pair changes nothing.
        store
            .enqueue(vec![due_entry("new-1", now())])
            .await
            .unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join(STORE_FILE)).unwrap(),
            after
        );
    }
}

/// A store of over 256 KiB: one hook whose history has 12,000 entries, each `entry`, and
/// one pending entry.
fn large_store(entry: &str) -> String {
    let history = vec![entry; 12_000].join(",\n      ");
    format!(
        "{{\n  \"hooks\": {{\n    \"post-task\": {{\n      \"id\": \"post-task\", \"name\": \"P\", \"event\": \"conversation-done\", \"delaySeconds\": 10,\n      \"promptFile\": \".claude/agents/hooks/post-task.md\", \"enabled\": true,\n      \"history\": {{\n      {history}\n      }}\n    }}\n  }},\n  \"pending\": [\n    {{\"hookId\": \"post-task\", \"sessionId\": \"a1\", \"dueAt\": \"2099-01-01T00:00:00+0000\", \"retries\": 0}}\n  ]\n}}\n"
    )
}

#[tokio::test]
async fn an_enqueue_refuses_a_large_file_broken_deep_in_a_history() {
    // The enqueue path skips histories quickly but still checks every byte of them: a
    // file that does not parse is never written over, and its last good copy is kept.
    let good = "\"2026-11-01T00:00:00+0000\":\"run\"";
    for broken in [
        "\"2026-11-01T00:00:00+0000\":run",
        "\"2026-11-01T00:00:00+0000\":\"r\\qun\"",
        "\"2026-11-01T00:00:00+0000\":\"r\tun\"",
        "\"2026-11-01T00:00:00+0000\" \"run\"",
        "\"2026-11-01T00:00:00+0000\":\"run\",",
    ] {
        let text = large_store(good).replacen(
            &format!("{good},\n      {good}"),
            &format!("{good},\n      {broken}"),
            1,
        );
        assert_ne!(text, large_store(good));
        let (dir, store) = store_with(&text);
        fs::write(dir.path().join(BACKUP_FILE), "last good").unwrap();
        let e = store.enqueue(vec![due_entry("new-1", now())]).await;
        assert!(matches!(e, Err(StoreError::Corrupt(_))), "{broken}: {e:?}");
        assert_eq!(
            fs::read_to_string(dir.path().join(STORE_FILE)).unwrap(),
            text
        );
        assert_eq!(
            fs::read_to_string(dir.path().join(BACKUP_FILE)).unwrap(),
            "last good"
        );
    }
}

#[tokio::test]
async fn a_cost_cap_is_stored_as_max_cost_usd_and_only_where_set() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let file = || read_json(&dir.path().join(STORE_FILE));
    assert!(
        file()["hooks"]["post-task"].get("maxCostUsd").is_none(),
        "a hook without a cap gets no field"
    );
    let cap = |usd: &str| {
        let mut o = HookPatch::default();
        o.max_cost = Some(CostCap::parse(usd).unwrap());
        o
    };
    let h = store
        .update_hook(&post_task_id(), &cap("0.5"))
        .await
        .unwrap();
    assert_eq!(h.max_cost.usd(), Some(0.5));
    assert_eq!(file()["hooks"]["post-task"]["maxCostUsd"], 0.5);
    let h = store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(h.max_cost.usd(), Some(0.5), "read back");
    store.update_hook(&post_task_id(), &cap("0")).await.unwrap();
    assert_eq!(
        file()["hooks"]["post-task"]["maxCostUsd"],
        0,
        "removed as 0"
    );

    let (_d, bad) = store_with(
        r#"{"hooks": {"h": {"event": "conversation-done", "promptFile": ".claude/agents/hooks/h.md", "maxCostUsd": -2}}, "pending": []}"#,
    );
    let e = bad.snapshot().await.unwrap_err().to_string();
    assert!(
        e.contains("\"h\"") && e.contains("maxCostUsd") && e.contains("from 0 to 10000"),
        "{e}"
    );
}

#[tokio::test]
async fn a_lateness_limit_is_kept_once_however_often_the_hook_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let file = || read_json(&dir.path().join(STORE_FILE));
    assert!(
        file()["hooks"]["post-task"]
            .get("maxLatenessSeconds")
            .is_none()
    );
    let late = {
        let mut o = HookPatch::default();
        o.max_lateness = Some(MaxLateness::parse("600").unwrap());
        o
    };
    store.update_hook(&post_task_id(), &late).await.unwrap();
    // Rewritten again and again (a rename, a toggle): the field stays one field.
    for name in ["one", "two"] {
        let p = {
            let mut o = HookPatch::default();
            o.name = Some(name.into());
            o
        };
        store.update_hook(&post_task_id(), &p).await.unwrap();
    }
    let off = {
        let mut o = HookPatch::default();
        o.enabled = Some(false);
        o
    };
    store.update_hook(&post_task_id(), &off).await.unwrap();
    let text = std::fs::read_to_string(dir.path().join(STORE_FILE)).unwrap();
    assert_eq!(text.matches("\"maxLatenessSeconds\"").count(), 1, "{text}");
    assert_eq!(file()["hooks"]["post-task"]["maxLatenessSeconds"], 600);
    let h = store.get_hook(&post_task_id()).await.unwrap().unwrap();
    assert_eq!(h.max_lateness.seconds(), 600, "read back");
}
