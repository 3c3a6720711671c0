//! The webhook runner against a real HTTP server of this test's own on 127.0.0.1: what it
//! sends, what it reads, and every way the exchange can fail.

use std::net::TcpListener;
use std::time::Duration;

use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::{CostCap, HookId, RunOutcome, SessionId, Status};
use hooks_runner_webhook::{MAX_BODY, WebhookConfig, WebhookRunner};
use hooks_testkit::http::{answer as http, serve_once};

fn runner(url: &str, token: Option<&str>, timeout: Duration) -> WebhookRunner {
    WebhookRunner::new(WebhookConfig {
        url: url.to_owned(),
        token: token.map(str::to_owned),
        timeout,
    })
    .expect("a valid URL")
}

fn request() -> RunRequest {
    let mut options = RunOptions::default();
    options.model = Some("sonnet".into());
    options.max_turns = Some(5);
    options.allowed_tools = vec!["Read".into(), "Edit".into()];
    options.max_budget = CostCap::parse("0.5").unwrap();
    RunRequest::new(
        HookId::parse("post-task").unwrap(),
        SessionId::parse("0b9f-session").unwrap(),
        "/work/proj".into(),
        Prompt::new("Tidy up, then say COMPLETED.", options),
    )
}

async fn run(r: &WebhookRunner) -> RunOutcome {
    r.start(&request()).await.expect("started").wait().await
}

#[tokio::test]
async fn a_run_is_posted_with_its_token_and_the_answer_is_its_outcome() {
    let (url, seen) = serve_once(http(
        "200 OK",
        r#"{"status": "ok", "exitCode": 0, "completed": true, "numTurns": 3, "costUsd": 0.12,
            "usage": {"inputTokens": 10, "cacheCreationInputTokens": 2000,
                      "cacheReadInputTokens": 30000, "outputTokens": 400},
            "durationMs": 41000, "backendRunId": "r-17", "reply": "tidied\nCOMPLETED"}"#,
    ));
    let r = runner(&url, Some("s3cret"), Duration::from_secs(10));
    let h = r.start(&request()).await.unwrap();
    assert_eq!(h.process(), None, "no local process");
    let o = h.wait().await;
    assert_eq!(o.status, Some(Status::Ok));
    assert_eq!(o.result_text.as_deref(), Some("tidied\nCOMPLETED"));
    assert_eq!(
        (
            o.exit_code,
            o.completed,
            o.num_turns,
            o.cost_usd,
            o.duration_ms
        ),
        (Some(0), Some(true), Some(3), Some(0.12), Some(41_000))
    );
    let u = o.usage.expect("usage");
    assert_eq!(
        (
            u.input_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
            u.output_tokens
        ),
        (Some(10), Some(2000), Some(30_000), Some(400))
    );
    let s = seen.recv().unwrap();
    assert!(s.head.starts_with("POST /runs HTTP/1.1\r\n"), "{}", s.head);
    let head = s.head.to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer s3cret\r\n"),
        "{}",
        s.head
    );
    assert!(
        head.contains("content-type: application/json"),
        "{}",
        s.head
    );
    assert_eq!(
        s.body,
        serde_json::json!({"hookId": "post-task", "sessionId": "0b9f-session", "cwd": "/work/proj",
            "prompt": "Tidy up, then say COMPLETED.",
            "options": {"model": "sonnet", "permissionMode": null, "maxTurns": 5,
                "allowedTools": ["Read", "Edit"], "appendSystemPrompt": null, "maxBudgetUsd": 0.5}})
    );
}

#[tokio::test]
async fn without_a_token_no_authorization_is_sent_and_statuses_carry_through() {
    let (url, seen) = serve_once(http(
        "201 Created",
        r#"{"status": "skipped: the backend is draining"}"#,
    ));
    let o = run(&runner(&url, None, Duration::from_secs(10))).await;
    assert_eq!(o.status, Some(Status::skipped("the backend is draining")));
    assert_eq!((o.cost_usd, o.usage), (None, None));
    assert!(
        !seen
            .recv()
            .unwrap()
            .head
            .to_ascii_lowercase()
            .contains("authorization")
    );
}

#[tokio::test]
async fn every_failure_is_an_error_status_that_says_which() {
    let long = format!(
        "{{\"status\": \"ok\", \"pad\": \"{}\"}}",
        "x".repeat(MAX_BODY as usize)
    );
    let cases: Vec<(Option<Vec<u8>>, &str)> = vec![
        (
            http("503 Service Unavailable", "backend overloaded\nretry later"),
            "error: webhook answered 503 Service Unavailable: backend overloaded",
        ),
        (
            http("404 Not Found", ""),
            "error: webhook answered 404 Not Found: ",
        ),
        (
            http("200 OK", "<html>hello</html>"),
            "error: webhook: the answer is not a run outcome (",
        ),
        (
            http("200 OK", r#"{"exitCode": 0}"#),
            "error: webhook: the answer is not a run outcome (missing field `status`",
        ),
        (
            http("200 OK", r#"{"status": "done"}"#),
            "error: webhook: the answer's status must be ok, error: … or skipped: … (got \"done\")",
        ),
        (
            http("200 OK", &long),
            "error: webhook: the answer is over 1048576 bytes",
        ),
        // A cost that would bend the budget: refused, never recorded as spent.
        (
            http("200 OK", r#"{"status": "ok", "costUsd": -1000000}"#),
            "error: webhook: the answer's costUsd must be a number from 0 to 10000 (got -1000000)",
        ),
        (
            http("200 OK", r#"{"status": "ok", "costUsd": 1e300}"#),
            "error: webhook: the answer's costUsd must be a number from 0 to 10000",
        ),
        (
            Some(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"status\"".to_vec()),
            "error: webhook: could not read the answer",
        ),
        (
            Some(b"not http at all\r\n\r\n".to_vec()),
            "error: webhook: could not reach http://127.0.0.1:",
        ),
    ];
    for (answer, want) in cases {
        let (url, _seen) = serve_once(answer);
        let o = run(&runner(&url, None, Duration::from_secs(10))).await;
        let got = o.status.expect("a status").to_string();
        assert!(got.starts_with(want), "want {want:?}, got {got:?}");
    }
}

#[tokio::test]
async fn a_backend_that_does_not_answer_in_time_is_a_timeout() {
    let (url, _seen) = serve_once(None);
    let o = run(&runner(&url, None, Duration::from_secs(1))).await;
    assert_eq!(
        o.status,
        Some(Status::error(format!(
            "webhook: no answer from {url} within 1s"
        )))
    );
}

#[tokio::test]
async fn a_closed_port_is_a_connection_error() {
    let url = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/runs", l.local_addr().unwrap())
    };
    let o = run(&runner(&url, None, Duration::from_secs(5))).await;
    let got = o.status.unwrap().to_string();
    assert!(
        got.starts_with(&format!("error: webhook: could not reach {url}: ")),
        "{got}"
    );
}

#[test]
fn a_url_that_is_not_http_is_refused() {
    for bad in [
        "",
        "ftp://x/y",
        "http://",
        "localhost:8080/runs",
        "http://a b/",
    ] {
        let e = WebhookRunner::new(WebhookConfig {
            url: bad.into(),
            token: None,
            timeout: Duration::from_secs(1),
        })
        .unwrap_err();
        assert_eq!(e.field, "runnerUrl", "{bad}");
    }
}
