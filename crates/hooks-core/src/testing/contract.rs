//! The store contract: what every [`HookStore`], [`SessionStore`] and [`StoreSignals`]
//! adapter must do, one public check a rule, each named for the rule it holds.
//!
//! An adapter's tests expand the checks into one `#[tokio::test]` each, so a failure names
//! the rule it broke:
//!
//! ```text
//! mod contract {
//!     use super::*;
//!     // `make` returns what must live as long as the test (a temporary folder, or `()`)
//!     // and a fresh store.
//!     hooks_core::hook_store_contract!(|| ((), MyStore::new() as Arc<dyn HookStore>));
//!     hooks_core::session_store_contract!(|| ((), MySessions::new() as Arc<dyn SessionStore>));
//!     // Two handles on one fresh store, as two processes would hold it.
//!     hooks_core::store_signals_contract!(|| {
//!         let (keep, url) = fresh_database();
//!         (keep, Arc::new(MyStore::open(&url)), Arc::new(MyStore::open(&url)))
//!     });
//! }
//! ```
//!
//! Each check panics with a message naming the rule when the store breaks it. The queue's
//! rules are in [`crate::queue`]; a store that keeps its queue as a list can call those
//! helpers under its lock and keep most of them by construction.

use time::{Duration, OffsetDateTime};

use crate::stamp::Timestamp;

use crate::decide::{EnqueueDecision, SkipReason};
use crate::live::*;
use crate::model::*;
use crate::ports::*;

fn t0() -> OffsetDateTime {
    // A fixed, whole-second instant (the store form keeps seconds).
    OffsetDateTime::from_unix_timestamp(1_796_000_000).expect("valid instant")
}

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).expect("valid session id")
}

fn entry(hook: &HookId, session: &str, due: OffsetDateTime) -> PendingEntry {
    PendingEntry {
        error: None,
        hook_id: hook.clone(),
        session_id: sid(session),
        due_at: DueAt::At(due),
        queued_at: Some(due),
        retries: 0,
        attempts: 0,
        not_taken: 0,
        claim: None,
        waiting: None,
    }
}

async fn new_hook(store: &dyn HookStore, name: &str) -> Hook {
    let pf = PromptFile::parse(".claude/agents/hooks/x.md").expect("valid prompt file");
    let spec = HookSpec::new(name, pf).expect("valid spec");
    store.create_hook(spec, t0()).await.expect("create hook")
}

/// Expands into one `#[tokio::test]` for each [`HookStore`] check of the contract, each on
/// a fresh store from `$make`: a closure returning `(keep, Arc<dyn HookStore>)`, where
/// `keep` lives as long as the test (a temporary folder, a database). Invoke it inside a
/// module of its own: the tests are named after the checks. One check runs on tokio's
/// multi-threaded runtime: the adapter's dev-dependency on tokio needs the
/// `rt-multi-thread` and `macros` features.
#[macro_export]
macro_rules! hook_store_contract {
    ($make:expr) => {
        $crate::hook_store_contract!(@checks $make;
            crud,
            unique_ids,
            import_writes_the_whole_hook,
            enqueue_dedupe,
            enqueue_event,
            enqueue_event_decides_only_the_hooks_for_the_conversations_agent,
            enqueue_event_follows_up_each_task_of_a_hook_that_repeats,
            delete_drops_entries,
            claim_exclusive,
            claims_take_the_earliest_due_first,
            claim_expiry_and_takeover,
            one_claim_per_session,
            fencing,
            release_is_fenced_by_owner,
            requeue_and_release,
            requeue_keeps_every_counter_and_the_wait,
            entries_come_back_as_queued,
            summary_agrees_with_the_queue,
            drop_unclaimed,
            history_cap,
            history_has_its_time,
            run_log,
            waits_and_wakes,
            wakes_leave_limit_waits_and_never_put_an_entry_off,
            run_log_folds_a_run,
            budget,
            pause_holds_what_was_set,
            a_scheduled_hook_keeps_its_event_and_no_event_queues_it,
        );
        // One handle used from several threads at once.
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn claims_and_enqueues_at_once() {
            let (_keep, store) = ($make)();
            $crate::testing::contract::claims_and_enqueues_at_once(
                store.clone(),
                store,
                &|task| ::std::boxed::Box::pin(async move {
                    ::tokio::spawn(task).await.expect("a contract task panicked")
                }),
            )
            .await;
        }
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (_keep, store) = ($make)();
                $crate::testing::contract::$check(&*store).await;
            }
        )+
    };
}

/// Expands into one `#[tokio::test]` for each [`SessionStore`] check, as
/// [`hook_store_contract!`](crate::hook_store_contract) does for hook stores.
#[macro_export]
macro_rules! session_store_contract {
    ($make:expr) => {
        $crate::session_store_contract!(@checks $make;
            sessions_remember_merges,
            sessions_stamp_is_test_and_set,
            sessions_run_lease,
            sessions_list_and_prune,
        );
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (_keep, store) = ($make)();
                $crate::testing::contract::$check(&*store).await;
            }
        )+
    };
}

/// Expands into one `#[tokio::test]` for each [`StoreSignals`] check, and the check that two
/// handles claim and enqueue at once ([`claims_and_enqueues_at_once`]). `$make` returns
/// `(keep, a, b)`: two handles on one fresh store, as two processes would hold it, each an
/// `Arc` of a type that is both a [`HookStore`] and [`StoreSignals`].
#[macro_export]
macro_rules! store_signals_contract {
    ($make:expr) => {
        $crate::store_signals_contract!(@checks $make;
            signals_a_write_that_changes_nothing_changes_no_fingerprint,
            signals_another_handles_write_wakes_the_watcher,
            signals_a_fresh_store_exists_and_has_nothing_to_clean,
        );
        // Two handles, as two processes hold them, used at once.
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn two_handles_claim_and_enqueue_at_once() {
            let (_keep, a, b) = ($make)();
            $crate::testing::contract::claims_and_enqueues_at_once(
                a,
                b,
                &|task| ::std::boxed::Box::pin(async move {
                    ::tokio::spawn(task).await.expect("a contract task panicked")
                }),
            )
            .await;
        }
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (_keep, a, b) = ($make)();
                $crate::testing::contract::$check(&*a, &*a, &*b).await;
            }
        )+
    };
}

/// Every setting of a hook, in one comparable value: what a store must keep of each.
#[derive(Debug, PartialEq)]
struct Settings {
    name: String,
    event: Event,
    delay: u32,
    prompt_file: String,
    enabled: bool,
    skip_cron: bool,
    skip_subagents: bool,
    max_context_k: u32,
    max_cost_usd: Option<f64>,
    max_lateness: u32,
    errors: Vec<&'static str>,
    deliver: Delivery,
    agent: AgentScope,
    repeat: Repeat,
}

fn settings_of(h: &Hook) -> Settings {
    Settings {
        name: h.name.clone(),
        event: h.event,
        delay: h.delay.seconds(),
        prompt_file: h.prompt_file.to_string(),
        enabled: h.enabled,
        skip_cron: h.skip_cron,
        skip_subagents: h.skip_subagents,
        max_context_k: h.max_context.k(),
        max_cost_usd: h.max_cost.usd(),
        max_lateness: h.max_lateness.seconds(),
        errors: h.errors.names(),
        deliver: h.deliver,
        agent: h.agent.clone(),
        repeat: h.repeat,
    }
}

/// A hook spec whose every setting differs from the default one.
fn unusual_spec(name: &str) -> HookSpec {
    let pf = PromptFile::parse(".claude/agents/hooks/unusual.md").expect("valid prompt file");
    let mut spec = HookSpec::new(name, pf).expect("valid spec");
    spec.event = Event::ConversationFailed;
    spec.delay = Delay::from_seconds(42).expect("delay");
    spec.enabled = false;
    spec.skip_cron = false;
    spec.skip_subagents = false;
    spec.max_context = ContextCap::from_k(80).expect("context cap");
    spec.max_cost = CostCap::from_usd(0.25).expect("cost");
    spec.max_lateness = MaxLateness::from_seconds(300).expect("lateness");
    spec.errors = FailureKinds::new(&["rate_limit", "overloaded"]).expect("kinds");
    spec.deliver = Delivery::Closed;
    spec.agent = AgentScope::Only("codex".into());
    spec.repeat = Repeat::EachTask;
    spec
}

/// Create, get, update (every field) and delete a hook; a missing one is `HookNotFound`.
/// Every setting comes back as written, from create and from each field of a patch.
pub async fn crud(store: &dyn HookStore) {
    let spec = unusual_spec("Tidy up");
    let h = store
        .create_hook(spec.clone(), t0())
        .await
        .expect("create hook");
    assert_eq!(
        h.id.as_str(),
        "tidy-up",
        "create: the id is the slug of the name"
    );
    let mut want = spec.into_hook(h.id.clone(), t0());
    assert_eq!(
        settings_of(&h),
        settings_of(&want),
        "create keeps every setting of the spec"
    );
    let got = store
        .get_hook(&h.id)
        .await
        .expect("get")
        .expect("created hook is there");
    assert_eq!(
        settings_of(&got),
        settings_of(&want),
        "every setting of a created hook is read back"
    );
    assert_eq!(got, h, "get returns what create returned");
    let patch = HookPatch {
        name: Some("Tidied".into()),
        event: Some(Event::ConversationDone),
        delay: Some(Delay::from_seconds(7).expect("delay")),
        prompt_file: Some(PromptFile::parse(".claude/agents/hooks/other.md").expect("file")),
        enabled: Some(true),
        skip_cron: Some(true),
        skip_subagents: Some(true),
        max_context: Some(ContextCap::from_k(120).expect("context cap")),
        max_cost: Some(CostCap::from_usd(0.5).expect("cost")),
        max_lateness: Some(MaxLateness::from_seconds(600).expect("lateness")),
        errors: Some(FailureKinds::new(&["overloaded"]).expect("kinds")),
        deliver: Some(Delivery::Auto),
        agent: Some(AgentScope::Only("claude".into())),
        repeat: Some(Repeat::Once),
    };
    let upd = store.update_hook(&h.id, &patch).await.expect("update");
    // Written out, not `HookPatch::apply`: the check holds that too.
    want.name = "Tidied".into();
    want.event = Event::ConversationDone;
    want.delay = Delay::from_seconds(7).expect("delay");
    want.prompt_file = PromptFile::parse(".claude/agents/hooks/other.md").expect("file");
    want.enabled = true;
    want.skip_cron = true;
    want.skip_subagents = true;
    want.max_context = ContextCap::from_k(120).expect("context cap");
    want.max_cost = CostCap::from_usd(0.5).expect("cost");
    want.max_lateness = MaxLateness::from_seconds(600).expect("lateness");
    want.errors = FailureKinds::new(&["overloaded"]).expect("kinds");
    want.deliver = Delivery::Auto;
    want.agent = AgentScope::Only("claude".into());
    want.repeat = Repeat::Once;
    assert_eq!(
        (upd.id.as_str(), settings_of(&upd)),
        ("tidy-up", settings_of(&want)),
        "update applies the patch, every field of it, and keeps the id"
    );
    assert_eq!(
        settings_of(&store.get_hook(&h.id).await.expect("get").expect("hook")),
        settings_of(&want),
        "every patched setting is read back"
    );
    assert_eq!(
        store.get_hook(&h.id).await.expect("get").expect("hook"),
        upd,
        "update is durable"
    );
    // Each field on its own, back the other way: a patch sets what it names and only that.
    let back = unusual_spec("Tidy up");
    type Set = fn(&mut Hook, &HookSpec);
    let one_by_one: [(&str, HookPatch, Set); 6] = [
        (
            "enabled",
            HookPatch {
                enabled: Some(back.enabled),
                ..Default::default()
            },
            |h, b| h.enabled = b.enabled,
        ),
        (
            "skipCron",
            HookPatch {
                skip_cron: Some(back.skip_cron),
                ..Default::default()
            },
            |h, b| h.skip_cron = b.skip_cron,
        ),
        (
            "skipSubagents",
            HookPatch {
                skip_subagents: Some(back.skip_subagents),
                ..Default::default()
            },
            |h, b| h.skip_subagents = b.skip_subagents,
        ),
        (
            "maxContext",
            HookPatch {
                max_context: Some(back.max_context),
                ..Default::default()
            },
            |h, b| h.max_context = b.max_context,
        ),
        (
            "deliver",
            HookPatch {
                deliver: Some(back.deliver),
                ..Default::default()
            },
            |h, b| h.deliver = b.deliver,
        ),
        (
            "repeat",
            HookPatch {
                repeat: Some(back.repeat),
                ..Default::default()
            },
            |h, b| h.repeat = b.repeat,
        ),
    ];
    for (field, one, set) in one_by_one {
        set(&mut want, &back);
        store
            .update_hook(&h.id, &one)
            .await
            .expect("update one field");
        assert_eq!(
            settings_of(&store.get_hook(&h.id).await.expect("get").expect("hook")),
            settings_of(&want),
            "a patch of {field} alone sets it and keeps the rest"
        );
    }
    let missing = HookId::parse("nope").expect("id");
    assert!(
        matches!(
            store.update_hook(&missing, &patch).await,
            Err(StoreError::HookNotFound(_))
        ),
        "update of a missing hook is HookNotFound"
    );
    store.delete_hook(&h.id).await.expect("delete");
    assert_eq!(
        store.get_hook(&h.id).await.expect("get"),
        None,
        "delete removes the hook"
    );
    assert!(
        matches!(
            store.delete_hook(&h.id).await,
            Err(StoreError::HookNotFound(_))
        ),
        "deleting twice is HookNotFound"
    );
}

/// Two hooks of one name get two ids.
pub async fn unique_ids(store: &dyn HookStore) {
    let a = new_hook(store, "Same Name").await;
    let b = new_hook(store, "same  name!").await;
    let c = new_hook(store, "Same-Name").await;
    let ids = [a.id.as_str(), b.id.as_str(), c.id.as_str()];
    assert_eq!(
        ids,
        ["same-name", "same-name-2", "same-name-3"],
        "slug ids are made unique"
    );
}

/// A (hook, session) pair is queued once; a deleted hook's entries are refused.
pub async fn enqueue_dedupe(store: &dyn HookStore) {
    let h = new_hook(store, "dedupe").await;
    let r = store
        .enqueue(vec![
            entry(&h.id, "s1", t0()),
            entry(&h.id, "s2", t0()),
            entry(&h.id, "s1", t0()),
        ])
        .await
        .expect("enqueue");
    assert_eq!(
        r,
        [
            EnqueueResult::Queued,
            EnqueueResult::Queued,
            EnqueueResult::AlreadyPending
        ]
    );
    let again = store
        .enqueue(vec![entry(&h.id, "s1", t0())])
        .await
        .expect("enqueue");
    assert_eq!(
        again,
        [EnqueueResult::AlreadyPending],
        "a queued pair is refused"
    );
    let ghost = HookId::parse("ghost").expect("id");
    let g = store
        .enqueue(vec![entry(&ghost, "s3", t0())])
        .await
        .expect("enqueue");
    assert_eq!(
        g,
        [EnqueueResult::HookDeleted],
        "an entry for a missing hook is refused"
    );
    let snap = store.snapshot().await.expect("snapshot");
    let mine: Vec<_> = snap.pending.iter().filter(|p| p.hook_id == h.id).collect();
    assert_eq!(mine.len(), 2, "exactly the accepted entries are pending");
}

/// `enqueue_event` queues the enabled hooks the event matches, one decision each.
pub async fn enqueue_event(store: &dyn HookStore) {
    let on = new_hook(store, "planned").await;
    let off = new_hook(store, "switched off").await;
    store
        .update_hook(
            &off.id,
            &HookPatch {
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .expect("disable");
    store
        .enqueue(vec![entry(&on.id, "old", t0())])
        .await
        .expect("enqueue");
    let req = |s: &str| done_request(s, None);
    let d = store
        .enqueue_event(&req("old"))
        .await
        .expect("enqueue_event");
    let get = |d: &[(HookId, EnqueueDecision)], id: &HookId| {
        d.iter().find(|(h, _)| h == id).map(|(_, x)| x.clone())
    };
    assert_eq!(
        get(&d, &on.id),
        Some(EnqueueDecision::Skip(SkipReason::AlreadyPending)),
        "the decision sees the queue under the lock"
    );
    assert_eq!(
        get(&d, &off.id),
        Some(EnqueueDecision::Skip(SkipReason::Disabled))
    );
    let d = store
        .enqueue_event(&req("new"))
        .await
        .expect("enqueue_event");
    assert_eq!(
        get(&d, &on.id),
        Some(EnqueueDecision::Queue {
            due_at: t0() + Duration::seconds(10)
        })
    );
    let snap = store.snapshot().await.expect("snapshot");
    let mine: Vec<_> = snap
        .pending
        .iter()
        .filter(|p| p.hook_id == on.id)
        .map(|p| p.session_id.as_str())
        .collect();
    assert_eq!(
        mine,
        ["old", "new"],
        "the Queue decision was carried out in the same call"
    );
    assert!(snap.pending.iter().all(|p| p.hook_id != off.id));
}

/// Deleting a hook drops its queued entries.
pub async fn delete_drops_entries(store: &dyn HookStore) {
    let a = new_hook(store, "a").await;
    let b = new_hook(store, "b").await;
    store
        .enqueue(vec![
            entry(&a.id, "s1", t0()),
            entry(&b.id, "s1", t0()),
            entry(&a.id, "s2", t0()),
        ])
        .await
        .expect("enqueue");
    assert_eq!(
        store.delete_hook(&a.id).await.expect("delete"),
        2,
        "delete reports the dropped entries"
    );
    let snap = store.snapshot().await.expect("snapshot");
    assert!(
        snap.pending.iter().all(|p| p.hook_id != a.id),
        "no entry of a deleted hook stays"
    );
    assert!(
        snap.pending.iter().any(|p| p.hook_id == b.id),
        "other hooks' entries stay"
    );
}

/// A due entry is claimed by one owner at a time.
pub async fn claim_exclusive(store: &dyn HookStore) {
    let h = new_hook(store, "claims").await;
    let later = t0() + Duration::minutes(5);
    store
        .enqueue(vec![
            entry(&h.id, "due1", t0()),
            entry(&h.id, "due2", t0()),
            entry(&h.id, "later", later),
        ])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(90);
    let a = store.claim_due(t0(), "A", ttl, 100).await.expect("claim");
    let mut got: Vec<_> = a.iter().map(|p| p.session_id.to_string()).collect();
    got.sort();
    assert_eq!(got, ["due1", "due2"], "only due entries are claimed");
    assert!(a.iter().all(|p| {
        p.claim
            .as_ref()
            .is_some_and(|c| c.owner == "A" && c.expires_at == t0() + ttl)
    }));
    let b = store
        .claim_due(t0() + Duration::seconds(1), "B", ttl, 100)
        .await
        .expect("claim");
    assert!(
        b.is_empty(),
        "claimed entries are invisible to other claimers"
    );
    let snap = store.snapshot().await.expect("snapshot");
    let claimed = snap
        .pending
        .iter()
        .filter(|p| p.claim.as_ref().is_some_and(|c| c.owner == "A"))
        .count();
    assert_eq!(claimed, 2, "the claim is stored");
    let limited = store.claim_due(later, "C", ttl, 0).await.expect("claim");
    assert!(limited.is_empty(), "the limit is respected");
}

/// An expired claim may be taken over.
pub async fn claim_expiry_and_takeover(store: &dyn HookStore) {
    let h = new_hook(store, "expiry").await;
    store
        .enqueue(vec![entry(&h.id, "s", t0())])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    assert_eq!(
        store
            .claim_due(t0(), "A", ttl, 10)
            .await
            .expect("claim")
            .len(),
        1
    );
    let before = store
        .claim_due(t0() + Duration::seconds(59), "B", ttl, 10)
        .await
        .expect("claim");
    assert!(before.is_empty(), "a live claim holds");
    let after = store
        .claim_due(t0() + Duration::seconds(61), "B", ttl, 10)
        .await
        .expect("claim");
    assert_eq!(after.len(), 1, "an expired claim can be taken over");
    assert_eq!(after[0].claim.as_ref().map(|c| c.owner.as_str()), Some("B"));
}

/// At most one entry of a session is claimed at a time.
pub async fn one_claim_per_session(store: &dyn HookStore) {
    let a = new_hook(store, "first").await;
    let b = new_hook(store, "second").await;
    store
        .enqueue(vec![entry(&a.id, "s", t0()), entry(&b.id, "s", t0())])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let one = store.claim_due(t0(), "A", ttl, 10).await.expect("claim");
    assert_eq!(one.len(), 1, "one entry per session per pass");
    let other = store.claim_due(t0(), "B", ttl, 10).await.expect("claim");
    assert!(
        other.is_empty(),
        "a session with a live claim gets no second one, across owners"
    );
    store
        .complete(&one[0].key(), "A", None)
        .await
        .expect("complete");
    let next = store.claim_due(t0(), "B", ttl, 10).await.expect("claim");
    assert_eq!(
        next.len(),
        1,
        "once the first is done the second can be claimed"
    );
}

/// Every write on a claimed entry is fenced by its owner.
pub async fn fencing(store: &dyn HookStore) {
    let h = new_hook(store, "fence").await;
    store
        .enqueue(vec![entry(&h.id, "s", t0())])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let key = store.claim_due(t0(), "A", ttl, 10).await.expect("claim")[0].key();
    assert!(
        matches!(
            store.complete(&key, "B", None).await,
            Err(StoreError::Fenced(_))
        ),
        "complete by a non-owner is refused"
    );
    assert!(
        matches!(
            store
                .requeue(
                    &key,
                    "B",
                    &Requeue {
                        due_at: t0(),
                        retries: 1,
                        attempts: 0,
                        not_taken: 0,
                        waiting: None
                    }
                )
                .await,
            Err(StoreError::Fenced(_))
        ),
        "requeue by a non-owner is refused"
    );
    let taken = store
        .claim_due(t0() + Duration::seconds(61), "B", ttl, 10)
        .await
        .expect("claim");
    assert_eq!(taken.len(), 1);
    let rec = HookRecord {
        status: Status::Ok,
        fired_at: Some(t0()),
    };
    assert!(
        matches!(
            store.complete(&key, "A", Some(rec)).await,
            Err(StoreError::Fenced(_))
        ),
        "the old owner is fenced out after a take-over"
    );
    let hook = store.get_hook(&h.id).await.expect("get").expect("hook");
    assert_eq!(
        (hook.last_status, hook.history.len()),
        (None, 0),
        "a fenced complete writes nothing"
    );
    assert_eq!(
        store
            .renew(std::slice::from_ref(&key), "A", t0())
            .await
            .expect("renew"),
        [],
        "renew by the old owner holds nothing"
    );
    let rec = HookRecord {
        status: Status::Ok,
        fired_at: Some(t0()),
    };
    store
        .complete(&key, "B", Some(rec))
        .await
        .expect("the new owner completes");
    let hook = store.get_hook(&h.id).await.expect("get").expect("hook");
    assert_eq!(hook.last_status, Some(Status::Ok));
    assert_eq!(
        hook.history.entries().last().map(|e| e.session.as_str()),
        Some("s")
    );
    assert!(
        store.snapshot().await.expect("snapshot").pending.is_empty(),
        "complete removes the entry"
    );
    assert!(matches!(
        store.complete(&key, "B", None).await,
        Err(StoreError::EntryNotFound(_))
    ));
}

/// `drop_unclaimed` takes out what it is asked for and nobody holds, returns it in queue
/// order, and leaves a claimed entry, other entries and unknown keys alone.
pub async fn drop_unclaimed(store: &dyn HookStore) {
    let h = new_hook(store, "dropper").await;
    let later = t0() + Duration::seconds(600);
    store
        .enqueue(vec![
            entry(&h.id, "due", t0()),
            entry(&h.id, "later", later),
            entry(&h.id, "kept", later),
            entry(&h.id, "held", t0() - Duration::seconds(1)),
        ])
        .await
        .expect("enqueue");
    // "held" is claimed (one claim per session: "due" is another session, so claim only
    // the earliest due).
    let claimed = store
        .claim_due(t0(), "A", Duration::seconds(60), 1)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        claimed[0].session_id.as_str(),
        "held",
        "the earliest due is claimed"
    );
    let key = |s: &str| EntryKey {
        hook_id: h.id.clone(),
        session_id: SessionId::parse(s).expect("sid"),
    };
    let asked = [key("later"), key("held"), key("due"), key("nowhere")];
    let gone = store.drop_unclaimed(&asked, t0()).await.expect("drop");
    assert_eq!(
        gone.iter()
            .map(|e| e.session_id.as_str())
            .collect::<Vec<_>>(),
        ["due", "later"],
        "drop_unclaimed returns what it removed, in queue order, not the claimed one"
    );
    assert_eq!(
        gone[1].due_at,
        DueAt::At(later),
        "drop_unclaimed returns entries whole"
    );
    let left: Vec<String> = store
        .snapshot()
        .await
        .expect("snapshot")
        .pending
        .iter()
        .map(|p| p.session_id.as_str().to_owned())
        .collect();
    assert_eq!(left, ["kept", "held"], "drop_unclaimed leaves the rest");
    // Once the claim has expired it can be dropped too; nothing left to drop is no error.
    let after = t0() + Duration::seconds(61);
    let gone = store
        .drop_unclaimed(&[key("held")], after)
        .await
        .expect("drop");
    assert_eq!(
        gone.len(),
        1,
        "drop_unclaimed takes an entry whose claim expired"
    );
    assert!(
        store
            .drop_unclaimed(&[key("held")], after)
            .await
            .expect("drop")
            .is_empty(),
        "drop_unclaimed of a key no longer queued removes nothing"
    );
}

/// `requeue` moves and unclaims; `release` unclaims.
pub async fn requeue_and_release(store: &dyn HookStore) {
    let h = new_hook(store, "requeue").await;
    store
        .enqueue(vec![entry(&h.id, "s", t0()), entry(&h.id, "r", t0())])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let claimed = store.claim_due(t0(), "A", ttl, 10).await.expect("claim");
    let key_s = claimed
        .iter()
        .find(|p| p.session_id.as_str() == "s")
        .expect("s claimed")
        .key();
    let key_r = claimed
        .iter()
        .find(|p| p.session_id.as_str() == "r")
        .expect("r claimed")
        .key();
    let later = t0() + Duration::seconds(60);
    let to = Requeue {
        due_at: later,
        retries: 3,
        attempts: 0,
        not_taken: 0,
        waiting: None,
    };
    store.requeue(&key_s, "A", &to).await.expect("requeue");
    store
        .release(std::slice::from_ref(&key_r), "A")
        .await
        .expect("release");
    let snap = store.snapshot().await.expect("snapshot");
    let s = snap
        .pending
        .iter()
        .find(|p| p.session_id.as_str() == "s")
        .expect("s still queued");
    assert_eq!(
        (s.due_at.clone(), s.retries, s.claim.clone()),
        (DueAt::At(later), 3, None),
        "requeue moves and unclaims"
    );
    let r = snap
        .pending
        .iter()
        .find(|p| p.session_id.as_str() == "r")
        .expect("r still queued");
    assert_eq!(r.claim, None, "release unclaims");
    let again = store
        .claim_due(t0() + Duration::seconds(1), "B", ttl, 10)
        .await
        .expect("claim");
    assert_eq!(
        again
            .iter()
            .map(|p| p.session_id.as_str())
            .collect::<Vec<_>>(),
        ["r"],
        "released entries are claimable at once"
    );
}

/// `requeue` keeps each of an entry's counters and its wait, of every kind, as given: a
/// store that drops one mixes up caps (a limit's attempts are not a not-ready look) or
/// decides by a wait it no longer knows.
pub async fn requeue_keeps_every_counter_and_the_wait(store: &dyn HookStore) {
    let h = new_hook(store, "counters").await;
    let mut queued = entry(&h.id, "s", t0());
    queued.error = Some(crate::failure::FailureKind::Overloaded);
    store.enqueue(vec![queued.clone()]).await.expect("enqueue");
    let ttl = Duration::seconds(60);
    for (i, kind) in WaitKind::ALL.into_iter().enumerate() {
        let now = t0() + Duration::seconds(i as i64);
        let claimed = store.claim_due(now, "A", ttl, 10).await.expect("claim");
        assert_eq!(claimed.len(), 1, "requeued as due, it is claimable again");
        let n = i as u32;
        let to = Requeue {
            due_at: now + Duration::seconds(1),
            retries: n + 1,
            attempts: n + 2,
            not_taken: n + 3,
            waiting: Some(Waiting::new(kind, format!("waits as {kind}"), now)),
        };
        store
            .requeue(&claimed[0].key(), "A", &to)
            .await
            .expect("requeue");
        let snap = store.snapshot().await.expect("snapshot");
        let want = PendingEntry {
            due_at: DueAt::At(to.due_at),
            retries: to.retries,
            attempts: to.attempts,
            not_taken: to.not_taken,
            waiting: to.waiting.clone(),
            ..queued.clone()
        };
        assert_eq!(
            snap.pending,
            [want],
            "requeue keeps every counter and a wait of kind {kind}"
        );
    }
}

/// An entry comes back with every field as it was queued: when it was queued, the failure
/// it follows up, its counters and its wait.
pub async fn entries_come_back_as_queued(store: &dyn HookStore) {
    let h = new_hook(store, "whole").await;
    let mut full = entry(&h.id, "full", t0() + Duration::seconds(70));
    full.queued_at = Some(t0() - Duration::seconds(30));
    full.error = Some(crate::failure::FailureKind::RateLimit);
    full.retries = 2;
    full.attempts = 1;
    full.not_taken = 1;
    full.waiting = Some(Waiting::new(
        WaitKind::Limit,
        "rate limited until the reset (attempt 2 of 5)",
        t0() - Duration::seconds(5),
    ));
    let bare = entry(&h.id, "bare", t0());
    store
        .enqueue(vec![full.clone(), bare.clone()])
        .await
        .expect("enqueue");
    let snap = store.snapshot().await.expect("snapshot");
    assert_eq!(snap.pending, [full, bare], "entries come back as queued");
}

/// The store's summary at `now`, checked against the queue read whole.
async fn summary_as_read(store: &dyn HookStore, now: Timestamp, when: &str) -> QueueSummary {
    let got = store.summary(now).await.expect("summary");
    let snap = store.snapshot().await.expect("snapshot");
    assert_eq!(got, QueueSummary::of(&snap.pending, now), "summary {when}");
    got
}

/// `summary` agrees with the queue read whole: a store that answers from an index of its
/// own must see what is queued, when it wakes and what waits for a close.
pub async fn summary_agrees_with_the_queue(store: &dyn HookStore) {
    let now = t0();
    let got = summary_as_read(store, now, "of an empty queue").await;
    assert!(!got.any_pending, "an empty queue has nothing pending");
    let h = new_hook(store, "summary").await;
    let later = t0() + Duration::seconds(90);
    store
        .enqueue(vec![
            entry(&h.id, "later", later),
            entry(&h.id, "open", t0()),
        ])
        .await
        .expect("enqueue");
    let got = summary_as_read(store, now, "with two queued").await;
    assert!(got.any_pending, "two entries are pending");
    let claimed = store
        .claim_due(now, "A", Duration::seconds(60), 10)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1, "the entry due now is claimed");
    let to = Requeue {
        due_at: t0() + Duration::hours(1),
        retries: 0,
        attempts: 0,
        not_taken: 0,
        waiting: Some(Waiting::new(WaitKind::Open, "conversation open", now)),
    };
    store
        .requeue(&claimed[0].key(), "A", &to)
        .await
        .expect("requeue");
    let got = summary_as_read(store, now, "with a wait for a close").await;
    assert!(
        got.open_waits,
        "an entry waits for its conversation's close"
    );
    assert_eq!(
        got.next_wake,
        Some(later),
        "the next wake is the earliest due"
    );
}

/// A future the contract hands the test's runtime, to run on a thread of its own.
pub type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

/// Two handles on one store (or one handle twice) used at once from several threads:
/// workers on each enqueue entries of their own, claim what is due and complete it. Every
/// entry is claimed exactly once: none is lost, none is claimed twice, and the queue is
/// empty after. `spawn` starts a task on the runtime's threads and returns a future that
/// ends with it.
pub async fn claims_and_enqueues_at_once(
    a: std::sync::Arc<dyn HookStore>,
    b: std::sync::Arc<dyn HookStore>,
    spawn: &dyn Fn(Task) -> Task,
) {
    const WORKERS: usize = 4;
    const EACH: usize = 10;
    let h = new_hook(&*a, "at once").await;
    let claimed = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let ttl = Duration::minutes(10);
    let mut running = Vec::new();
    for w in 0..WORKERS {
        let store = if w % 2 == 0 { a.clone() } else { b.clone() };
        let (h, claimed) = (h.id.clone(), claimed.clone());
        running.push(spawn(Box::pin(async move {
            let owner = format!("worker-{w}");
            for i in 0..EACH {
                let s = format!("w{w}-{i}");
                let r = store
                    .enqueue(vec![entry(&h, &s, t0())])
                    .await
                    .expect("enqueue");
                assert_eq!(
                    r,
                    [EnqueueResult::Queued],
                    "an entry of its own session is added"
                );
                let got = store.claim_due(t0(), &owner, ttl, 1).await.expect("claim");
                for p in got {
                    claimed
                        .lock()
                        .expect("the list")
                        .push(p.session_id.to_string());
                    store
                        .complete(&p.key(), &owner, None)
                        .await
                        .expect("complete");
                }
            }
        })));
    }
    for r in running {
        r.await;
    }
    loop {
        let got = a.claim_due(t0(), "last", ttl, 100).await.expect("claim");
        if got.is_empty() {
            break;
        }
        for p in got {
            claimed
                .lock()
                .expect("the list")
                .push(p.session_id.to_string());
            a.complete(&p.key(), "last", None).await.expect("complete");
        }
    }
    let mut all = claimed.lock().expect("the list").clone();
    all.sort();
    let mut once = all.clone();
    once.dedup();
    assert_eq!(
        all.len(),
        once.len(),
        "an entry claimed twice: {:?}",
        all.windows(2).filter(|w| w[0] == w[1]).collect::<Vec<_>>()
    );
    assert_eq!(
        once.len(),
        WORKERS * EACH,
        "every entry queued at once is claimed once; lost: {:?}",
        (0..WORKERS)
            .flat_map(|w| (0..EACH).map(move |i| format!("w{w}-{i}")))
            .filter(|s| !once.contains(s))
            .collect::<Vec<_>>()
    );
    let left = a.snapshot().await.expect("snapshot").pending;
    assert!(left.is_empty(), "completed entries are gone: {left:?}");
}

/// A hook's history keeps the newest firings, two in one second both.
pub async fn history_cap(store: &dyn HookStore) {
    let h = new_hook(store, "history").await;
    for i in 0..(HISTORY_CAP + 5) {
        let rec = HookRecord {
            status: Status::Ok,
            fired_at: Some(t0() + Duration::seconds(i as i64)),
        };
        store
            .record(&h.id, &sid(&format!("s{i}")), rec)
            .await
            .expect("record");
    }
    let hook = store.get_hook(&h.id).await.expect("get").expect("hook");
    assert_eq!(
        hook.history.len(),
        HISTORY_CAP,
        "history keeps {HISTORY_CAP}"
    );
    assert_eq!(
        hook.history.entries()[0].session,
        "s5",
        "the oldest go first"
    );
    assert_eq!(
        hook.history.entries()[HISTORY_CAP - 1].session,
        format!("s{}", HISTORY_CAP + 4)
    );
    // Two firings in one second both stay.
    let rec = HookRecord {
        status: Status::error("boom"),
        fired_at: Some(t0() + Duration::hours(1)),
    };
    store
        .record(&h.id, &sid("x1"), rec.clone())
        .await
        .expect("record");
    store.record(&h.id, &sid("x2"), rec).await.expect("record");
    let hook = store.get_hook(&h.id).await.expect("get").expect("hook");
    let tail: Vec<_> = hook
        .history
        .entries()
        .iter()
        .rev()
        .take(2)
        .map(|e| e.session.as_str())
        .collect();
    assert_eq!(
        tail,
        ["x2", "x1"],
        "firings in the same second are both kept, in order"
    );
    assert_eq!(hook.last_status, Some(Status::error("boom")));
}

/// The run log keeps every field of every run (its exit code, tokens, owner and process
/// too) and filters runs, oldest first.
pub async fn run_log(store: &dyn HookStore) {
    let mut appended = Vec::new();
    let h1 = HookId::parse("h1").expect("id");
    let h2 = HookId::parse("h2").expect("id");
    for (i, (h, s)) in [(&h1, "a"), (&h2, "a"), (&h1, "b"), (&h1, "a")]
        .into_iter()
        .enumerate()
    {
        let rec = RunRecord {
            run_id: None,
            hook_id: h.clone(),
            session_id: sid(s),
            owner: (i == 0).then(|| "host-a:41".to_owned()),
            process: (i == 0).then_some(ProcessRef {
                pid: 4242,
                start: 99,
            }),
            started_at: t0() + Duration::seconds(i as i64),
            finished_at: Some(t0() + Duration::seconds(i as i64 + 1)),
            outcome: RunOutcome {
                api_error_status: None,
                status: Some(Status::Ok),
                exit_code: Some(i as i32 + 1),
                completed: Some(i % 2 == 0),
                num_turns: Some(i as u64 + 1),
                cost_usd: Some(0.5),
                usage: Some(Usage {
                    input_tokens: Some(1),
                    cache_creation_input_tokens: Some(2),
                    cache_read_input_tokens: None,
                    output_tokens: Some(40 + i as u64),
                }),
                duration_ms: Some(1000 + i as u64),
                session_id: Some(s.to_owned()),
                result_text: (i == 0).then(|| "Tidied up.\n\"quoted\" ✓\nCOMPLETED".to_owned()),
            },
            estimated_cost_usd: (i == 0).then_some(0.375),
            model: (i == 0).then(|| "claude-x".to_owned()),
            delivered: i == 0,
        };
        store.append_run(&rec).await.expect("append");
        appended.push(rec);
    }
    let all = store.runs(&RunFilter::default()).await.expect("runs");
    assert_eq!(all.len(), 4, "every run is kept");
    for (got, mut want) in all.iter().zip(appended) {
        // What the agent said of its own conversation and the API's status are read once,
        // as the run ends; a store need not keep them.
        want.outcome.session_id = got.outcome.session_id.clone();
        want.outcome.api_error_status = got.outcome.api_error_status;
        assert_eq!(
            got, &want,
            "a run comes back with every field as appended (exit code, tokens, owner, process, ...)"
        );
    }
    assert_eq!(
        all[0].outcome.usage.and_then(|u| u.cache_read_input_tokens),
        None,
        "missing fields stay missing"
    );
    assert_eq!(all[0].outcome.cost_usd, Some(0.5));
    assert_eq!(
        all[0].estimated_cost_usd,
        Some(0.375),
        "the estimate is kept"
    );
    assert_eq!(all[1].estimated_cost_usd, None);
    assert_eq!(
        all[0].outcome.result_text.as_deref(),
        Some("Tidied up.\n\"quoted\" ✓\nCOMPLETED"),
        "the reply is kept as it was"
    );
    assert_eq!(all[1].outcome.result_text, None, "no reply stays none");
    assert!(
        all[0].delivered && !all[1].delivered,
        "runs keep whether they were delivered into the open conversation"
    );
    let f = RunFilter {
        hook_id: Some(h1.clone()),
        session_id: Some(sid("a")),
        ..RunFilter::default()
    };
    assert_eq!(
        store.runs(&f).await.expect("runs").len(),
        2,
        "filters combine"
    );
    let newest = store
        .runs(&RunFilter {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .expect("runs");
    assert_eq!(newest.len(), 1);
    assert_eq!(
        newest[0].started_at,
        t0() + Duration::seconds(3),
        "limit keeps the newest"
    );
    let recent = store
        .runs(&RunFilter {
            since: Some(t0() + Duration::seconds(2)),
            ..Default::default()
        })
        .await
        .expect("runs");
    assert_eq!(
        recent.iter().map(|r| r.started_at).collect::<Vec<_>>(),
        [t0() + Duration::seconds(2), t0() + Duration::seconds(3)],
        "since keeps the runs started at or after it, oldest first"
    );
    // A run logged as it starts and again as it ends is one run, also when only its
    // newest line falls inside what a limit asks for.
    let mut long = RunRecord {
        run_id: Some("r-long".into()),
        ..all[0].clone()
    };
    long.started_at = t0() + Duration::seconds(10);
    long.finished_at = None;
    long.outcome = RunOutcome::default();
    store.append_run(&long).await.expect("append");
    let mut other = long.clone();
    other.run_id = Some("r-other".into());
    other.started_at = t0() + Duration::seconds(11);
    store.append_run(&other).await.expect("append");
    long.finished_at = Some(t0() + Duration::seconds(20));
    long.outcome = all[0].outcome.clone();
    store.append_run(&long).await.expect("append");
    let newest = store
        .runs(&RunFilter {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .expect("runs");
    assert_eq!(newest.len(), 1, "{newest:?}");
    assert_eq!(
        (newest[0].run_id.as_deref(), newest[0].finished_at),
        (Some("r-other"), None),
        "the newest started run, not the newest line"
    );
    let two = store
        .runs(&RunFilter {
            limit: Some(2),
            ..Default::default()
        })
        .await
        .expect("runs");
    assert_eq!(
        two.iter().map(|r| r.run_id.as_deref()).collect::<Vec<_>>(),
        [Some("r-long"), Some("r-other")],
        "folded, oldest first"
    );
    assert_eq!(
        two[0].finished_at,
        Some(t0() + Duration::seconds(20)),
        "with its end"
    );
}

/// A waiting entry keeps why it waits; a wake makes it due and clears that, only for the
/// kind of wait asked for, and writes nothing when nothing waits.
pub async fn waits_and_wakes(store: &dyn HookStore) {
    let h = new_hook(store, "h").await;
    store
        .enqueue(vec![
            entry(&h.id, "open", t0()),
            entry(&h.id, "busy", t0()),
            entry(&h.id, "other", t0()),
        ])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let claimed = store.claim_due(t0(), "A", ttl, 10).await.expect("claim");
    assert_eq!(claimed.len(), 3);
    let far = t0() + Duration::hours(24);
    let open = Waiting::new(
        WaitKind::Open,
        "conversation open in claude, pid 7, interactive, idle",
        t0(),
    );
    let busy = Waiting::new(
        WaitKind::Running,
        "a follow-up is running on this session",
        t0(),
    );
    for (s, w) in [("open", &open), ("busy", &busy)] {
        let key = claimed
            .iter()
            .find(|p| p.session_id.as_str() == s)
            .expect("claimed")
            .key();
        let to = Requeue {
            due_at: far,
            retries: 0,
            attempts: 0,
            not_taken: 0,
            waiting: Some(w.clone()),
        };
        store.requeue(&key, "A", &to).await.expect("requeue");
    }
    let find = |snap: &Snapshot, s: &str| {
        snap.pending
            .iter()
            .find(|p| p.session_id.as_str() == s)
            .cloned()
            .expect("queued")
    };
    let snap = store.snapshot().await.expect("snapshot");
    assert_eq!(
        find(&snap, "open").waiting,
        Some(open.clone()),
        "the wait is kept"
    );
    assert_eq!(find(&snap, "open").retries, 0, "waiting uses no retry");
    let soon = t0() + Duration::seconds(5);
    assert_eq!(
        store.wake(&sid("busy"), soon, true).await.expect("wake"),
        0,
        "an open-only wake leaves a wait for another run"
    );
    assert_eq!(store.wake(&sid("open"), soon, true).await.expect("wake"), 1);
    assert_eq!(
        store.wake(&sid("other"), soon, false).await.expect("wake"),
        0,
        "an entry that does not wait is not woken"
    );
    assert_eq!(
        store.wake(&sid("busy"), soon, false).await.expect("wake"),
        1
    );
    let snap = store.snapshot().await.expect("snapshot");
    for s in ["open", "busy"] {
        let p = find(&snap, s);
        assert_eq!((p.due_at, p.waiting), (DueAt::At(soon), None), "{s} woken");
    }
    assert_eq!(
        store.wake(&sid("open"), soon, true).await.expect("wake"),
        0,
        "a second wake finds nothing"
    );
}

/// A run is logged when it starts and when it ends; `runs` shows it once, finished, and
/// a run that only started shows as such.
pub async fn run_log_folds_a_run(store: &dyn HookStore) {
    let h = HookId::parse("h1").expect("id");
    let started = RunRecord {
        run_id: Some("me#1".into()),
        hook_id: h.clone(),
        session_id: sid("a"),
        owner: Some("me".into()),
        process: None,
        started_at: t0(),
        finished_at: None,
        outcome: RunOutcome::default(),
        estimated_cost_usd: Some(0.125),
        model: None,
        delivered: false,
    };
    let other = RunRecord {
        run_id: Some("me#2".into()),
        session_id: sid("b"),
        ..started.clone()
    };
    let spawned = RunRecord {
        process: Some(ProcessRef { pid: 42, start: 7 }),
        ..started.clone()
    };
    let finished = RunRecord {
        finished_at: Some(t0() + Duration::seconds(3)),
        outcome: RunOutcome {
            status: Some(Status::Ok),
            cost_usd: Some(0.25),
            ..RunOutcome::default()
        },
        ..spawned.clone()
    };
    for r in [&started, &other, &spawned, &finished] {
        store.append_run(r).await.expect("append");
    }
    let all = store.runs(&RunFilter::default()).await.expect("runs");
    assert_eq!(all.len(), 2, "one record per run: {all:?}");
    assert_eq!(
        all[0], finished,
        "the lines of a run fold into its last word"
    );
    assert_eq!(all[1].finished_at, None);
    assert_eq!(all[1].status_text(), "running");
    assert_eq!(all[1].owner.as_deref(), Some("me"));
}

/// The daily budget is kept, changed and removed, and the queue is left as it was.
pub async fn budget(store: &dyn HookStore) {
    use crate::cost::{Budget, WhenReached};
    assert_eq!(store.budget().await.expect("budget"), None);
    let b = Budget {
        daily: CostCap::parse("5").expect("cap"),
        time_zone: Some("Europe/Berlin".into()),
        when_reached: WhenReached::Skip,
    };
    store.set_budget(Some(b.clone())).await.expect("set");
    assert_eq!(store.budget().await.expect("budget"), Some(b));
    let local = Budget {
        daily: CostCap::parse("0.25").expect("cap"),
        time_zone: None,
        when_reached: WhenReached::Wait,
    };
    store.set_budget(Some(local.clone())).await.expect("set");
    assert_eq!(store.budget().await.expect("budget"), Some(local));
    let hooks = store.snapshot().await.expect("snapshot").hooks.len();
    store.set_budget(None).await.expect("clear");
    assert_eq!(store.budget().await.expect("budget"), None);
    store
        .set_budget(None)
        .await
        .expect("clearing twice is fine");
    assert_eq!(store.snapshot().await.expect("snapshot").hooks.len(), hooks);
}

/// Runs every check of the session state, each on a store from `make`.
fn run_lease(run: &str, hook: &str, at: OffsetDateTime) -> RunLease {
    RunLease {
        run_id: run.to_owned(),
        hook_id: HookId::parse(hook).expect("valid hook id"),
        owner: "owner-1".to_owned(),
        host: "host-a".to_owned(),
        owner_process: Some(ProcessRef { pid: 42, start: 7 }),
        child: None,
        started_at: at,
        expires_at: at + Duration::seconds(90),
    }
}

/// Remembering merges what is given and leaves the rest, stamps included; the folder is
/// set once.
pub async fn sessions_remember_merges(store: &dyn SessionStore) {
    let s = sid("merge");
    assert_eq!(
        store.state(&s).await.expect("state"),
        (SessionState::default(), None),
        "an unknown session has the empty state"
    );
    let first = SessionUpdate {
        cwd: Some("/w/p".into()),
        transcript_path: Some("/t/merge.jsonl".into()),
        origin: Some(Origin::Cron),
    };
    store.remember(&s, &first).await.expect("remember");
    store.stamp(&s, &post_task_id(), t0()).await.expect("stamp");
    let st = store
        .remember(
            &s,
            &SessionUpdate {
                cwd: Some("/w/q".into()),
                transcript_path: Some("/t/merge-2.jsonl".into()),
                ..Default::default()
            },
        )
        .await
        .expect("remember");
    assert_eq!(
        st.cwd.as_deref(),
        Some("/w/p"),
        "a conversation's folder is set once: a later event cannot move it"
    );
    assert_eq!(
        st.transcript_path.as_deref(),
        Some("/t/merge-2.jsonl"),
        "a given transcript path replaces"
    );
    let st = store
        .remember(
            &s,
            &SessionUpdate {
                transcript_path: Some("/t/merge.jsonl".into()),
                ..Default::default()
            },
        )
        .await
        .expect("remember");
    assert_eq!(
        (st.transcript_path.as_deref(), st.origin),
        (Some("/t/merge.jsonl"), Some(Origin::Cron)),
        "a field not given is kept"
    );
    assert_eq!(
        st.stamps.get(&post_task_id()),
        Some(&t0()),
        "remembering keeps the stamps"
    );
    assert_eq!(store.state(&s).await.expect("state").0, st, "read back");
}

/// Of two stamps of one pair, the first wins and the second learns when.
pub async fn sessions_stamp_is_test_and_set(store: &dyn SessionStore) {
    let (s, other) = (sid("stamped"), sid("other"));
    let h = post_task_id();
    assert_eq!(
        store.stamp(&s, &h, t0()).await.expect("stamp"),
        StampResult::Won
    );
    assert_eq!(
        store
            .stamp(&s, &h, t0() + Duration::seconds(5))
            .await
            .expect("stamp"),
        StampResult::Lost { at: t0() },
        "a pair is stamped once"
    );
    assert_eq!(
        store.stamp(&other, &h, t0()).await.expect("stamp"),
        StampResult::Won,
        "stamps are per session"
    );
    let h2 = HookId::parse("second").expect("id");
    assert_eq!(
        store.stamp(&s, &h2, t0()).await.expect("stamp"),
        StampResult::Won,
        "and per hook"
    );
    // Unstamped (hooks run --force), the pair can be stamped again; the others stay.
    assert!(store.unstamp(&s, &h).await.expect("unstamp"));
    assert!(!store.unstamp(&s, &h).await.expect("unstamp"), "once");
    assert!(
        !store
            .unstamp(&sid("never-seen"), &h)
            .await
            .expect("unstamp"),
        "a session never stamped"
    );
    assert_eq!(
        store
            .stamp(&s, &h, t0() + Duration::seconds(9))
            .await
            .expect("stamp"),
        StampResult::Won
    );
    assert_eq!(
        store.stamp(&s, &h2, t0()).await.expect("stamp"),
        StampResult::Lost { at: t0() },
        "the other hook's stamp stayed"
    );
}

/// One run lease per session, taken with the stamp, fenced by run id.
pub async fn sessions_run_lease(store: &dyn SessionStore) {
    let s = sid("leased");
    let a = run_lease("a#1", "post-task", t0());
    assert_eq!(store.begin_run(&s, &a).await.expect("begin"), Begin::Won);
    let (st, held) = store.state(&s).await.expect("state");
    assert_eq!(held.as_ref(), Some(&a), "the lease is kept as given");
    assert_eq!(
        st.stamps.get(&a.hook_id),
        Some(&t0()),
        "stamped at the lease's start"
    );
    let b = run_lease("b#1", "second", t0());
    assert_eq!(
        store.begin_run(&s, &b).await.expect("begin"),
        Begin::Held(a.clone()),
        "one run per session, whatever the hook"
    );
    assert_eq!(
        store.stamp(&s, &b.hook_id, t0()).await.expect("read"),
        StampResult::Won,
        "a refused begin stamps nothing"
    );
    let mut renewed = a.clone();
    renewed.child = Some(ProcessRef { pid: 43, start: 8 });
    renewed.expires_at = t0() + Duration::seconds(300);
    assert!(store.update_lease(&s, &renewed).await.expect("update"));
    assert!(
        !store.update_lease(&s, &b).await.expect("update"),
        "another run's lease is not this run's to update"
    );
    assert_eq!(
        store.leases().await.expect("leases"),
        vec![(s.clone(), renewed.clone())]
    );
    store.end_lease(&s, "b#1").await.expect("end");
    assert!(
        store.state(&s).await.expect("state").1.is_some(),
        "ending another run's lease changes nothing"
    );
    store.end_lease(&s, "a#1").await.expect("end");
    assert_eq!(store.state(&s).await.expect("state").1, None);
    assert!(store.leases().await.expect("leases").is_empty());
    let again = run_lease("a#2", "post-task", t0() + Duration::seconds(9));
    assert_eq!(
        store.begin_run(&s, &again).await.expect("begin"),
        Begin::Stamped { at: t0() },
        "a stamped pair never runs again"
    );
}

/// Sessions are listed with their state; pruning forgets old ones without a lease or
/// anything queued, and keeps the others.
pub async fn sessions_list_and_prune(store: &dyn SessionStore) {
    let (old, kept, leased) = (sid("p-old"), sid("p-kept"), sid("p-leased"));
    let h = post_task_id();
    for s in [&old, &kept] {
        store.stamp(s, &h, t0()).await.expect("stamp");
    }
    store
        .begin_run(&leased, &run_lease("l#1", "post-task", t0()))
        .await
        .expect("begin");
    let listed = store.sessions().await.expect("sessions");
    let mut ids: Vec<&str> = listed.iter().map(|r| r.session.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["p-kept", "p-leased", "p-old"]);
    let l = listed
        .iter()
        .find(|r| r.session == leased)
        .expect("leased listed");
    assert!(l.lease.is_some() && l.state.stamps.contains_key(&h));
    // Nothing changed long enough ago: nothing goes.
    assert!(
        store
            .prune(OffsetDateTime::UNIX_EPOCH, &Default::default())
            .await
            .expect("prune")
            .is_empty()
    );
    let keep = std::iter::once(kept.clone()).collect();
    let far = OffsetDateTime::now_utc() + Duration::days(3650);
    let gone = store.prune(far, &keep).await.expect("prune");
    assert_eq!(
        gone,
        vec![old.clone()],
        "only the old, unkept, unleased one"
    );
    assert!(store.state(&old).await.expect("state").0.stamps.is_empty());
    assert!(!store.state(&kept).await.expect("state").0.stamps.is_empty());
    assert!(store.state(&leased).await.expect("state").1.is_some());
}

/// `import_hook` writes the hook exactly as given (its id, status, history and every
/// setting), and over a hook with its id replaces it rather than adding a second.
pub async fn import_writes_the_whole_hook(store: &dyn HookStore) {
    let id = HookId::parse("imported-1").expect("id");
    let mut h = unusual_spec("Imported").into_hook(id.clone(), t0());
    h.last_status = Some(Status::error("boom"));
    h.history.push(t0(), "s1");
    store.import_hook(&h).await.expect("import");
    let got = store
        .get_hook(&id)
        .await
        .expect("get")
        .expect("imported hook");
    assert_eq!(
        settings_of(&got),
        settings_of(&h),
        "import keeps every setting as given"
    );
    assert_eq!(got, h, "import writes the whole hook as given");
    h.name = "Renamed".into();
    h.history.push(t0() + Duration::seconds(1), "s2");
    store.import_hook(&h).await.expect("import again");
    assert_eq!(
        store.get_hook(&id).await.expect("get"),
        Some(h),
        "a second import replaces the hook"
    );
    let snap = store.snapshot().await.expect("snapshot");
    assert_eq!(
        snap.hooks.iter().filter(|x| x.id == id).count(),
        1,
        "one hook with that id"
    );
}

/// A `conversation-done` in an interactive conversation `s` of `agent`, at `t0`.
fn done_request(s: &str, agent: Option<&str>) -> EnqueueRequest {
    let mut r = EnqueueRequest::new(sid(s), Event::ConversationDone, t0());
    r.agent = agent.map(str::to_owned);
    r
}

/// `enqueue_event` decides only on the hooks whose agent scope covers the conversation's
/// agent (a conversation of no named agent is [`crate::DEFAULT_AGENT`]'s), and the store
/// keeps a hook's scope through an update.
pub async fn enqueue_event_decides_only_the_hooks_for_the_conversations_agent(
    store: &dyn HookStore,
) {
    let every = new_hook(store, "for every agent").await;
    let codex = new_hook(store, "for codex only").await;
    store
        .update_hook(
            &codex.id,
            &HookPatch {
                agent: Some(AgentScope::Only("codex".into())),
                ..Default::default()
            },
        )
        .await
        .expect("scope it");
    let req = done_request;
    let decided = |d: &[(HookId, EnqueueDecision)], id: &HookId| d.iter().any(|(h, _)| h == id);
    let d = store
        .enqueue_event(&req("claude-one", None))
        .await
        .expect("enqueue_event");
    assert!(decided(&d, &every.id), "{d:?}");
    assert!(
        !decided(&d, &codex.id),
        "a Codex hook is not decided on for a Claude Code conversation: {d:?}"
    );
    let d = store
        .enqueue_event(&req("codex-one", Some("codex")))
        .await
        .expect("enqueue_event");
    assert!(decided(&d, &every.id) && decided(&d, &codex.id), "{d:?}");
    let snap = store.snapshot().await.expect("snapshot");
    let queued = |id: &HookId, s: &str| {
        snap.pending
            .iter()
            .any(|p| &p.hook_id == id && p.session_id.as_str() == s)
    };
    assert!(queued(&codex.id, "codex-one") && !queued(&codex.id, "claude-one"));
}

/// `enqueue_event` reads each hook's [`Repeat`] with its rules: in a conversation followed
/// up already, a hook that follows up each task is queued again and one that runs once is
/// told it ran; neither is queued for a turn that answered a follow-up. (A store that
/// lost the field from its rules would answer "already ran" for both.)
pub async fn enqueue_event_follows_up_each_task_of_a_hook_that_repeats(store: &dyn HookStore) {
    let once = new_hook(store, "once").await;
    let each = new_hook(store, "each task").await;
    store
        .update_hook(
            &each.id,
            &HookPatch {
                repeat: Some(Repeat::EachTask),
                ..Default::default()
            },
        )
        .await
        .expect("make it repeat");
    let stamped = t0() - Duration::minutes(5);
    let mut req = done_request("s1", None);
    req.stamps = [(once.id.clone(), stamped), (each.id.clone(), stamped)].into();
    let decision = |d: &[(HookId, EnqueueDecision)], id: &HookId| {
        d.iter().find(|(h, _)| h == id).map(|(_, d)| d.clone())
    };
    let own = store
        .enqueue_event(&EnqueueRequest {
            follow_up_turn: true,
            ..req.clone()
        })
        .await
        .expect("enqueue_event");
    for h in [&once.id, &each.id] {
        assert_eq!(
            decision(&own, h),
            Some(EnqueueDecision::Skip(SkipReason::FollowUpsTurn)),
            "a follow-up's own turn queues nothing: {own:?}"
        );
    }
    let d = store.enqueue_event(&req).await.expect("enqueue_event");
    assert_eq!(
        decision(&d, &once.id),
        Some(EnqueueDecision::Skip(SkipReason::AlreadyRan {
            at: stamped
        })),
        "{d:?}"
    );
    assert_eq!(
        decision(&d, &each.id),
        Some(EnqueueDecision::Queue {
            due_at: t0() + Duration::seconds(10)
        }),
        "a hook that follows up each task is queued for the next: {d:?}"
    );
    let snap = store.snapshot().await.expect("snapshot");
    assert_eq!(
        snap.pending
            .iter()
            .map(|p| &p.hook_id)
            .filter(|h| [&once.id, &each.id].contains(h))
            .collect::<Vec<_>>(),
        [&each.id],
        "of the two, only that one is queued"
    );
}

/// A follow-up at a time ([`crate::schedule`]): a hook of event `scheduled`, with no delay
/// and a lateness limit, is read back with all three (a store that lost the event would
/// turn it into a `conversation-done` hook, run at every DONE); no conversation event
/// queues it; the entry queued for it is claimed when due like any other.
pub async fn a_scheduled_hook_keeps_its_event_and_no_event_queues_it(store: &dyn HookStore) {
    let pf = PromptFile::parse(".claude/agents/hooks/after-1.md").expect("valid prompt file");
    let mut spec = HookSpec::new("after-1", pf).expect("valid spec");
    spec.event = Event::Scheduled;
    spec.delay = Delay::from_seconds(0).expect("delay");
    spec.max_lateness = MaxLateness::from_seconds(7200).expect("lateness");
    let h = store.create_hook(spec, t0()).await.expect("create hook");
    let back = store.get_hook(&h.id).await.expect("get").expect("there");
    assert_eq!(
        (
            back.event,
            back.delay.seconds(),
            back.max_lateness.seconds()
        ),
        (Event::Scheduled, 0, 7200)
    );
    for event in Event::ALL {
        let d = store
            .enqueue_event(&EnqueueRequest::new(sid("s1"), event, t0()))
            .await
            .expect("enqueue_event");
        assert!(
            d.iter().all(|(id, _)| *id != h.id),
            "{} decided on a scheduled hook: {d:?}",
            event.as_str()
        );
    }
    let due = t0() + Duration::minutes(40);
    // Another conversation than the one the events were for: a store seeded with hooks
    // has queued those there, and a session is claimed for one entry at a time.
    let mut entry = PendingEntry::new(h.id.clone(), sid("s2"), DueAt::At(due));
    entry.queued_at = Some(t0());
    assert_eq!(
        store.enqueue(vec![entry]).await.expect("enqueue"),
        [EnqueueResult::Queued]
    );
    let early = store
        .claim_due(due - Duration::seconds(1), "me", Duration::minutes(5), 10)
        .await
        .expect("claim");
    assert!(
        early.iter().all(|e| e.hook_id != h.id),
        "not before its time"
    );
    let claimed = store
        .claim_due(due, "me", Duration::minutes(5), 10)
        .await
        .expect("claim");
    assert!(claimed.iter().any(|e| e.hook_id == h.id), "{claimed:?}");
}

/// `claim_due` hands out the earliest due entries first, whatever order they were queued
/// in, so a small `limit` never starves an old entry.
pub async fn claims_take_the_earliest_due_first(store: &dyn HookStore) {
    let h = new_hook(store, "order").await;
    store
        .enqueue(vec![
            entry(&h.id, "late", t0() + Duration::seconds(2)),
            entry(&h.id, "first", t0()),
            entry(&h.id, "middle", t0() + Duration::seconds(1)),
        ])
        .await
        .expect("enqueue");
    let at = t0() + Duration::seconds(10);
    let ttl = Duration::seconds(60);
    let mut order = Vec::new();
    for _ in 0..3 {
        let got = store.claim_due(at, "A", ttl, 1).await.expect("claim");
        assert_eq!(got.len(), 1, "one claim each time");
        order.push(got[0].session_id.as_str().to_owned());
    }
    assert_eq!(
        order,
        ["first", "middle", "late"],
        "claims take the earliest due first"
    );
}

/// `release` is fenced like every other write: another owner's release leaves the claim.
pub async fn release_is_fenced_by_owner(store: &dyn HookStore) {
    let h = new_hook(store, "h").await;
    store
        .enqueue(vec![entry(&h.id, "s", t0())])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let got = store.claim_due(t0(), "A", ttl, 1).await.expect("claim");
    assert_eq!(got.len(), 1);
    let key = got[0].key();
    store
        .release(std::slice::from_ref(&key), "B")
        .await
        .expect("a release of what one does not hold is no error");
    assert!(
        store
            .claim_due(t0(), "B", ttl, 1)
            .await
            .expect("claim")
            .is_empty(),
        "a release by another owner leaves the claim"
    );
    store
        .release(std::slice::from_ref(&key), "A")
        .await
        .expect("release");
    assert_eq!(
        store
            .claim_due(t0(), "B", ttl, 1)
            .await
            .expect("claim")
            .len(),
        1,
        "the owner's release frees the entry"
    );
}

/// A firing goes into the hook's history under the time it fired
/// ([`HookRecord::fired_at`]), through `record` and `complete` alike.
pub async fn history_has_its_time(store: &dyn HookStore) {
    let h = new_hook(store, "dated").await;
    let first = t0() + Duration::minutes(7);
    store
        .record(
            &h.id,
            &sid("a"),
            HookRecord {
                status: Status::Ok,
                fired_at: Some(first),
            },
        )
        .await
        .expect("record");
    store
        .enqueue(vec![entry(&h.id, "b", t0())])
        .await
        .expect("enqueue");
    let key = store
        .claim_due(t0(), "A", Duration::seconds(60), 1)
        .await
        .expect("claim")[0]
        .key();
    let second = t0() + Duration::minutes(9);
    store
        .complete(
            &key,
            "A",
            Some(HookRecord {
                status: Status::Ok,
                fired_at: Some(second),
            }),
        )
        .await
        .expect("complete");
    let hook = store.get_hook(&h.id).await.expect("get").expect("hook");
    let seen: Vec<_> = hook
        .history
        .entries()
        .iter()
        .map(|e| (e.session.as_str(), e.at()))
        .collect();
    assert_eq!(
        seen,
        [("a", Some(first)), ("b", Some(second))],
        "each firing is kept with the time it fired"
    );
}

/// A wait for a limit to reset ([`WaitKind::Limit`]) is left alone by a wake
/// (another run's end says nothing about the limit; woken, it would fire before the
/// reset), and a wake never makes an entry due later than it was.
pub async fn wakes_leave_limit_waits_and_never_put_an_entry_off(store: &dyn HookStore) {
    let h = new_hook(store, "h").await;
    store
        .enqueue(vec![
            entry(&h.id, "limited", t0()),
            entry(&h.id, "soon", t0()),
        ])
        .await
        .expect("enqueue");
    let ttl = Duration::seconds(60);
    let claimed = store.claim_due(t0(), "A", ttl, 10).await.expect("claim");
    assert_eq!(claimed.len(), 2);
    let reset = t0() + Duration::hours(3);
    let early = t0() + Duration::seconds(5);
    let waits = [
        (
            "limited",
            reset,
            Waiting::new(
                WaitKind::Limit,
                "rate limited until the reset (attempt 1 of 5)",
                t0(),
            ),
        ),
        (
            "soon",
            early,
            Waiting::new(
                WaitKind::Running,
                "a follow-up is running on this session",
                t0(),
            ),
        ),
    ];
    for (s, due, w) in &waits {
        let key = claimed
            .iter()
            .find(|p| p.session_id.as_str() == *s)
            .expect("claimed")
            .key();
        let to = Requeue {
            due_at: *due,
            retries: 0,
            attempts: 0,
            not_taken: 0,
            waiting: Some(w.clone()),
        };
        store.requeue(&key, "A", &to).await.expect("requeue");
    }
    let later = t0() + Duration::minutes(10);
    assert_eq!(
        store
            .wake(&sid("limited"), later, false)
            .await
            .expect("wake"),
        0,
        "a wake leaves a wait for a limit's reset"
    );
    assert_eq!(
        store.wake(&sid("soon"), later, false).await.expect("wake"),
        1
    );
    let snap = store.snapshot().await.expect("snapshot");
    let find = |s: &str| {
        snap.pending
            .iter()
            .find(|p| p.session_id.as_str() == s)
            .cloned()
            .expect("queued")
    };
    assert_eq!(
        (find("limited").due_at, find("limited").waiting),
        (DueAt::At(reset), Some(waits[0].2.clone())),
        "the limit's wait is untouched"
    );
    assert_eq!(
        (find("soon").due_at, find("soon").waiting),
        (DueAt::At(early), None),
        "a wake clears the wait but never puts the entry off"
    );
}

/// `pause` returns what `set_pause` set, a pause with an end and one without; `None` ends it.
pub async fn pause_holds_what_was_set(store: &dyn HookStore) {
    assert_eq!(
        store.pause().await.expect("pause"),
        None,
        "a new store is not paused"
    );
    let until = Pause {
        since: t0(),
        until: Some(t0() + Duration::hours(1)),
        by: "me@host".into(),
    };
    let open_ended = Pause {
        until: None,
        ..until.clone()
    };
    for p in [until, open_ended] {
        store.set_pause(Some(p.clone())).await.expect("set_pause");
        assert_eq!(
            store.pause().await.expect("pause"),
            Some(p),
            "pause returns what was set"
        );
    }
    store.set_pause(None).await.expect("unpause");
    assert_eq!(
        store.pause().await.expect("pause"),
        None,
        "set_pause(None) ends the pause"
    );
}

/// Where a store gives a fingerprint, a write that changes nothing (a wake that finds
/// nothing) leaves it as it was, so a daemon polling it does not wake itself in a loop;
/// a real write, by any handle, changes it.
pub async fn signals_a_write_that_changes_nothing_changes_no_fingerprint(
    store: &dyn HookStore,
    signals: &dyn StoreSignals,
    other: &dyn HookStore,
) {
    let h = new_hook(store, "h").await;
    let Some(before) = signals.fingerprint() else {
        return;
    };
    assert_eq!(
        store.wake(&sid("nobody"), t0(), false).await.expect("wake"),
        0
    );
    store.release(&[], "A").await.expect("release nothing");
    store.renew(&[], "A", t0()).await.expect("renew nothing");
    assert_eq!(
        signals.fingerprint(),
        Some(before),
        "a write that changes nothing changes no fingerprint"
    );
    // A release of what another owner holds changes nothing either.
    other
        .enqueue(vec![entry(&h.id, "held", t0())])
        .await
        .expect("enqueue");
    let held = other
        .claim_due(t0(), "B", Duration::seconds(60), 1)
        .await
        .expect("claim")[0]
        .key();
    let before = signals.fingerprint().expect("a fingerprint, as before");
    store
        .release(std::slice::from_ref(&held), "A")
        .await
        .expect("release another's");
    assert_eq!(
        signals.fingerprint(),
        Some(before.clone()),
        "a release of another owner's claim changes no fingerprint"
    );
    other
        .enqueue(vec![entry(&h.id, "s", t0())])
        .await
        .expect("enqueue");
    assert_ne!(
        signals.fingerprint(),
        Some(before),
        "another handle's write changes the fingerprint"
    );
}

/// `watch` calls its wake when another handle (another process) changes the store. A
/// store that cannot watch says why, and then must give a fingerprint to poll.
pub async fn signals_another_handles_write_wakes_the_watcher(
    _store: &dyn HookStore,
    signals: &dyn StoreSignals,
    other: &dyn HookStore,
) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let tx = std::sync::Mutex::new(tx);
    if let Err(why) = signals.watch(Box::new(move || {
        let _ = tx.lock().map(|t| t.send(()));
    })) {
        assert!(!why.is_empty(), "a store that cannot watch says why");
        assert!(
            signals.fingerprint().is_some(),
            "a store that cannot watch gives a fingerprint to poll"
        );
        return;
    }
    let h = new_hook(other, "h").await;
    // A watch may take a moment to begin (a LISTEN, an inotify watch): each round writes
    // again and waits for the wake, up to 20 rounds.
    for round in 0..20 {
        let p = PendingEntry {
            due_at: DueAt::At(t0() + Duration::seconds(round)),
            ..entry(&h.id, &format!("s{round}"), t0())
        };
        other.enqueue(vec![p]).await.expect("enqueue");
        // Blocks this thread only: a watch runs on a thread or runtime of its own.
        if rx
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_ok()
        {
            return;
        }
    }
    panic!("another handle's writes never woke the watcher");
}

/// A fresh store is there (`exists`), has nothing a dead writer left (`housekeep` → 0)
/// and names where it is without secrets.
pub async fn signals_a_fresh_store_exists_and_has_nothing_to_clean(
    store: &dyn HookStore,
    signals: &dyn StoreSignals,
    _other: &dyn HookStore,
) {
    new_hook(store, "h").await;
    assert!(signals.exists(), "a store in use exists");
    assert_eq!(
        signals.housekeep().expect("housekeep"),
        0,
        "a fresh store has nothing to clean"
    );
    let at = signals.location();
    assert!(!at.is_empty(), "the location names the store");
    assert!(
        !at.contains("password="),
        "the location shows no secret: {at}"
    );
}
