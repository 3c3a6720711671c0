//! The runner contract, on a one-request backend on 127.0.0.1 that answers as each check
//! needs (or never answers).

use std::sync::Arc;
use std::time::Duration;

use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::testing::runner_contract::{AgentScript, HungChild, RunnerFixture};
use hooks_core::{HookId, ProcessRef, SessionId};
use hooks_runner_webhook::{WebhookConfig, WebhookRunner};
use hooks_testkit::http::serve_once;

struct Fixture;

fn answer(status: &str, body: &serde_json::Value) -> Vec<u8> {
    let b = body.to_string();
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
        b.len()
    )
    .into_bytes()
}

impl RunnerFixture for Fixture {
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner> {
        let a = match script {
            // A backend reports what its agent did, completed as its reply's last line says.
            AgentScript::Reply(text) => Some(answer(
                "200 OK",
                &serde_json::json!({"status": "ok",
                    "completed": text.lines().last() == Some("COMPLETED"), "reply": text}),
            )),
            AgentScript::Fail => Some(answer(
                "500 Internal Server Error",
                &serde_json::json!({"error": "boom"}),
            )),
            AgentScript::RateLimited => Some(answer(
                "200 OK",
                &serde_json::json!({"status": "error: rate limited", "apiErrorStatus": 429}),
            )),
            AgentScript::Hang => None,
            other => panic!("no backend for {other:?}"),
        };
        let (url, _seen) = serve_once(a);
        Arc::new(
            WebhookRunner::new(WebhookConfig {
                url,
                token: None,
                timeout,
            })
            .expect("a valid URL"),
        )
    }

    fn request(&self, body: &str) -> RunRequest {
        RunRequest::new(
            HookId::parse("post-task").unwrap(),
            SessionId::parse("0b9f-session").unwrap(),
            "/work/proj".into(),
            Prompt::new(body.to_owned(), RunOptions::default()),
        )
    }

    fn is_alive(&self, _p: &ProcessRef) -> bool {
        false
    }

    /// The backend runs the agent: no variable of ours reaches it (the hook is in the
    /// request's `hookId`).
    fn follow_up_seen(&self) -> Option<Option<String>> {
        None
    }

    /// The backend's agent runs on no process of this host.
    fn hung_child(&self) -> HungChild {
        HungChild::Elsewhere
    }
}

hooks_core::runner_contract!(|| Fixture);

#[tokio::test]
async fn a_backends_own_429_is_a_rate_limit() {
    let (url, _seen) = serve_once(Some(answer(
        "429 Too Many Requests",
        &serde_json::json!({"error": "slow down"}),
    )));
    let r = WebhookRunner::new(WebhookConfig {
        url,
        token: None,
        timeout: Duration::from_secs(10),
    })
    .unwrap();
    let o = r.start(&Fixture.request("go")).await.unwrap().wait().await;
    assert_eq!(o.api_error_status, Some(429), "{o:?}");
}
