//! The script runner is held to the runner contract like any other, one test a rule.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hooks_app::RunnerMake;
use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::testing::runner_contract::{AgentScript, HungChild, RunnerFixture};
use hooks_core::{CostCap, HookId, ProcessRef, SessionId};
use hooks_example_script_agent::script_runner;

struct Fixture {
    dir: tempfile::TempDir,
    n: AtomicUsize,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj")).unwrap();
    Fixture {
        dir,
        n: AtomicUsize::new(0),
    }
}

impl RunnerFixture for Fixture {
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner> {
        let seen = self.dir.path().join("seen");
        let body = match script {
            AgentScript::Reply(text) => format!(
                "echo \"$HOOKS_APP_FOLLOW_UP\" > '{}'\ncat >/dev/null\ncat <<'EOT'\n{text}\nEOT",
                seen.display()
            ),
            AgentScript::Fail => "cat >/dev/null; echo boom >&2; exit 3".to_owned(),
            AgentScript::RateLimited => "cat >/dev/null; exit 75".to_owned(),
            AgentScript::Hang => format!(
                "sleep 100000 & echo $! > '{}'; exec sleep 100000",
                self.dir.path().join("child").display()
            ),
            other => panic!("no script for {other:?}"),
        };
        let path = self.dir.path().join(format!(
            "agent-{}.sh",
            self.n.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let program = path.to_string_lossy().into_owned();
        script_runner(&RunnerMake::new(Some(&program), timeout)).unwrap()
    }

    fn request(&self, body: &str) -> RunRequest {
        RunRequest::new(
            HookId::parse("post-task").unwrap(),
            SessionId::parse("s-1").unwrap(),
            self.dir.path().join("proj").to_string_lossy().into_owned(),
            Prompt::new(body.to_owned(), RunOptions::default()),
        )
    }

    fn is_alive(&self, p: &ProcessRef) -> bool {
        hooks_platform::process::is_alive(p.pid, p.start)
    }

    fn follow_up_seen(&self) -> Option<Option<String>> {
        Some(
            std::fs::read_to_string(self.dir.path().join("seen"))
                .ok()
                .map(|s| s.trim().to_owned()),
        )
    }

    fn hung_child(&self) -> HungChild {
        HungChild::recorded(hooks_platform::process::recorded_child_outlives(
            &self.dir.path().join("child"),
            Duration::from_secs(10),
        ))
    }
}

hooks_core::runner_contract!(fixture);

/// A runner of `body` (a shell script) with the fixture's folder, and a request with `options`.
fn run_with(f: &Fixture, body: &str, options: RunOptions) -> (Arc<dyn Runner>, RunRequest) {
    let path = f.dir.path().join("agent-options.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let program = path.to_string_lossy().into_owned();
    let runner = script_runner(&RunnerMake::new(Some(&program), Duration::from_secs(30))).unwrap();
    let mut request = f.request("tidy up");
    request.prompt = Prompt::new("tidy up".to_owned(), options);
    (runner, request)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_cost_cap_reaches_the_script_and_its_spend_is_recorded() {
    let f = fixture();
    let mut options = RunOptions::default();
    options.max_budget = CostCap::from_usd(0.25).unwrap();
    let (runner, request) = run_with(
        &f,
        "cat >/dev/null; echo \"cap $HOOKS_MAX_COST_USD\"; echo 'cost-usd: 0.125' >&2; echo COMPLETED",
        options,
    );
    let o = runner.start(&request).await.unwrap().wait().await;
    assert_eq!(o.status, Some(hooks_core::Status::Ok), "{o:?}");
    assert!(
        o.result_text
            .as_deref()
            .is_some_and(|t| t.contains("cap 0.25")),
        "the script is told the cap: {o:?}"
    );
    assert_eq!(o.cost_usd, Some(0.125), "what it spent is recorded: {o:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_without_a_cap_tells_the_script_none() {
    let f = fixture();
    let (runner, request) = run_with(
        &f,
        "cat >/dev/null; echo \"cap ${HOOKS_MAX_COST_USD-none}\"",
        RunOptions::default(),
    );
    let o = runner.start(&request).await.unwrap().wait().await;
    assert!(
        o.result_text
            .as_deref()
            .is_some_and(|t| t.contains("cap none")),
        "{o:?}"
    );
    assert_eq!(
        o.cost_usd, None,
        "nothing reported, nothing recorded: {o:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn options_a_script_cannot_take_are_refused_by_name() {
    let f = fixture();
    let mut options = RunOptions::default();
    options.model = Some("opus".into());
    options.allowed_tools = vec!["Bash".into()];
    options.max_budget = CostCap::from_usd(1.0).unwrap();
    let (runner, request) = run_with(&f, "touch ran", options);
    let err = match runner.start(&request).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a model and tools are refused"),
    };
    assert!(
        err.ends_with("cannot honour model, allowedTools"),
        "names what it cannot honour, and only that: {err}"
    );
    assert!(
        !f.dir.path().join("proj/ran").exists(),
        "the script never ran"
    );
}
