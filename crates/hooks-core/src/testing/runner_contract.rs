//! The runner contract: what every [`Runner`] adapter must do, one public check a rule.
//!
//! A runner drives an agent; the contract drives the runner through a [`RunnerFixture`] the
//! adapter's tests provide: a runner whose agent (a fake program, a test server) does what
//! an [`AgentScript`] says. Expand the checks into one `#[tokio::test]` each:
//!
//! ```text
//! mod runner_contract {
//!     use super::*;
//!     hooks_core::runner_contract!(|| MyFixture::new());
//! }
//! ```

use std::sync::Arc;
use std::time::Duration;

use crate::FOLLOW_UP_ENV;
use crate::live::ProcessRef;
use crate::model::Status;
use crate::ports::{RunRequest, Runner};

/// What a run's agent does, as a runner's test arranges it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentScript {
    /// Replies `text` and ends well.
    Reply(String),
    /// Ends with an error and no reply.
    Fail,
    /// Is refused by its API with a rate limit (HTTP 429).
    RateLimited,
    /// Never ends, and starts a child that never ends either; the agent records the
    /// child's process id where the fixture finds it ([`RunnerFixture::hung_child`]).
    Hang,
}

/// What became of the child the last [`AgentScript::Hang`] agent started, once its run
/// ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HungChild {
    /// The agent runs on no process of this host (a backend): nothing to look at.
    Elsewhere,
    /// The agent recorded no child: the fixture's hanging agent must record the one it
    /// starts.
    NotRecorded,
    /// The child, by its process id, is gone.
    Ended(u32),
    /// The child, by its process id, outlived its run; the fixture has ended it since, so
    /// a failing check leaves nothing running.
    Outlived(u32),
}

impl HungChild {
    /// From what a fixture found of the recorded child: its process id and whether it
    /// outlived the run (`hooks_platform::process::recorded_child_outlives` gives this), or
    /// nothing recorded.
    pub fn recorded(found: Option<(u32, bool)>) -> Self {
        match found {
            None => HungChild::NotRecorded,
            Some((pid, false)) => HungChild::Ended(pid),
            Some((pid, true)) => HungChild::Outlived(pid),
        }
    }
}

/// What the contract needs of a runner's tests.
pub trait RunnerFixture: Send + Sync {
    /// A runner whose agent does `script` on every run; a run longer than `timeout` is ended.
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner>;
    /// A follow-up of hook `post-task` with the prompt `body`, on a conversation the agent
    /// knows, in a folder that exists.
    fn request(&self, body: &str) -> RunRequest;
    /// Whether `p` is still alive (the fixture asks the platform).
    fn is_alive(&self, p: &ProcessRef) -> bool;
    /// The value the last run's agent saw in [`FOLLOW_UP_ENV`], as the fixture's agent
    /// recorded it; `None` when the agent runs where no variable reaches (a backend).
    fn follow_up_seen(&self) -> Option<Option<String>>;
    /// What became of the child the last [`AgentScript::Hang`] agent started, asked once
    /// its run has ended. A process killed a moment ago may take a little while to go: the
    /// fixture allows it a few seconds (`hooks_platform::process::outlives`).
    fn hung_child(&self) -> HungChild;
}

async fn run(f: &dyn RunnerFixture, script: &AgentScript, body: &str) -> crate::RunOutcome {
    let runner = f.runner(script, Duration::from_secs(30));
    runner
        .start(&f.request(body))
        .await
        .expect("the run starts")
        .wait()
        .await
}

/// A reply is the outcome: status ok, the reply kept, `completed` exactly when its last
/// non-empty line is `COMPLETED`.
pub async fn runner_records_the_reply_and_completed(f: &dyn RunnerFixture) {
    let done = run(
        f,
        &AgentScript::Reply("tidied up\nCOMPLETED".into()),
        "tidy up",
    )
    .await;
    assert_eq!(done.status, Some(Status::Ok), "a reply is ok: {done:?}");
    assert_eq!(done.completed, Some(true), "COMPLETED last: {done:?}");
    assert!(
        done.result_text
            .as_deref()
            .is_some_and(|t| t.contains("tidied up")),
        "the reply is kept: {done:?}"
    );
    let open = run(f, &AgentScript::Reply("half way".into()), "tidy up").await;
    assert_eq!(open.status, Some(Status::Ok), "{open:?}");
    assert_eq!(
        open.completed,
        Some(false),
        "no COMPLETED, not completed: {open:?}"
    );
}

/// The run carries the loop-guard variable naming its hook, so the agent's own hooks
/// queue no follow-up of a follow-up.
pub async fn runner_sets_the_loop_guard(f: &dyn RunnerFixture) {
    run(f, &AgentScript::Reply("ok".into()), "tidy up").await;
    if let Some(seen) = f.follow_up_seen() {
        assert_eq!(
            seen.as_deref(),
            Some("post-task"),
            "the agent saw {FOLLOW_UP_ENV} naming the hook"
        );
    }
}

/// A failed run is an error status, never ok.
pub async fn runner_reports_a_failure_as_an_error(f: &dyn RunnerFixture) {
    let o = run(f, &AgentScript::Fail, "tidy up").await;
    assert!(
        o.status.as_ref().is_some_and(|s| !s.is_ok()),
        "a failure is not ok: {o:?}"
    );
    assert_ne!(
        o.completed,
        Some(true),
        "a failure completed nothing: {o:?}"
    );
}

/// A rate limit says so (`api_error_status` 429), so the entry is requeued until the
/// limit resets rather than counted as a failure.
pub async fn runner_reports_a_rate_limit_as_429(f: &dyn RunnerFixture) {
    let o = run(f, &AgentScript::RateLimited, "tidy up").await;
    assert_eq!(o.api_error_status, Some(429), "{o:?}");
    assert!(o.status.as_ref().is_some_and(|s| !s.is_ok()), "{o:?}");
}

/// A run over its timeout is ended, with every process the agent started, and says so.
pub async fn runner_ends_a_run_at_its_timeout(f: &dyn RunnerFixture) {
    // Time enough for the agent to start its child and record it, on a busy machine too.
    let runner = f.runner(&AgentScript::Hang, Duration::from_secs(2));
    let handle = runner
        .start(&f.request("tidy up"))
        .await
        .expect("the run starts");
    let process = handle.process();
    let o = handle.wait().await;
    assert!(
        o.status.as_ref().is_some_and(|s| !s.is_ok()),
        "a run stopped at its timeout is not ok: {o:?}"
    );
    if let Some(p) = process {
        assert!(!f.is_alive(&p), "the run's process is ended: {p}");
    }
    match f.hung_child() {
        HungChild::Elsewhere | HungChild::Ended(_) => {}
        HungChild::NotRecorded => panic!(
            "the hanging agent recorded no child: the fixture's Hang agent must start one \
             and record its process id"
        ),
        HungChild::Outlived(pid) => panic!(
            "the child the agent started (pid {pid}) outlived the run's timeout: end the \
             agent's whole process group, not its leader only"
        ),
    }
}

/// Expands into one `#[tokio::test]` for each runner check, on the fixture `$make()`
/// returns (anything implementing [`RunnerFixture`]).
#[macro_export]
macro_rules! runner_contract {
    ($make:expr) => {
        $crate::runner_contract!(@checks $make;
            runner_records_the_reply_and_completed,
            runner_sets_the_loop_guard,
            runner_reports_a_failure_as_an_error,
            runner_reports_a_rate_limit_as_429,
            runner_ends_a_run_at_its_timeout,
        );
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $check() {
                let fixture = ($make)();
                $crate::testing::runner_contract::$check(&fixture).await;
            }
        )+
    };
}
