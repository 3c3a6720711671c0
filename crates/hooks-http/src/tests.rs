//! The server driven through its whole router (guard and all) by the core's in-memory
//! service and a backend that records what reaches it: the crate's boundary.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use hooks_core::post_task_id;
use hooks_core::service::{Config, NotifyReport, Ports, Service};
use hooks_core::testing::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{ApiError, Backend, HttpConfig, HttpState, Metrics};

const TOKEN: &str = "0123456789abcdef";
const HOOK_TOKEN: &str = "fedcba9876543210";

/// Records the hook inputs it is handed.
#[derive(Default)]
pub struct Recording {
    /// Each input, whether it came on `SessionEnd`'s entry, and whether it is to be checked
    /// against its transcript (it came with the hook token).
    pub inputs: Mutex<Vec<(String, bool, bool)>>,
}

#[async_trait::async_trait]
impl Backend for Recording {
    fn store_location(&self) -> String {
        "memory".into()
    }
    async fn health(&self) -> Result<(), String> {
        Ok(())
    }
    async fn hook_input(
        &self,
        body: &[u8],
        end: bool,
        checked: bool,
    ) -> Result<Vec<NotifyReport>, ApiError> {
        let text = String::from_utf8_lossy(body).into_owned();
        self.inputs.lock().unwrap().push((text, end, checked));
        Ok(Vec::new())
    }
}

pub struct App {
    pub backend: Arc<Recording>,
    pub state: Arc<HttpState>,
    pub meta: Arc<InMemoryMeta>,
}

/// A server over the in-memory service with its two seeded hooks, behind the token.
pub async fn app() -> App {
    let now = time::OffsetDateTime::from_unix_timestamp(1_796_000_000).unwrap();
    let store = InMemoryStore::seeded(now);
    let meta = InMemoryMeta::new();
    let ports = Ports {
        store: store.clone(),
        meta: meta.clone(),
        runner: ScriptedRunner::ok(),
        prompts: StaticPrompts::with(".claude/agents/hooks/post-task.md", "Tidy up."),
        clock: ManualClock::new(now),
    };
    let svc = Arc::new(Service::new(ports, Config::new("me")));
    let backend = Arc::new(Recording::default());
    let config = HttpConfig {
        addr: "127.0.0.1:8080".parse().unwrap(),
        token: Some(TOKEN.into()),
        hook_token: Some(HOOK_TOKEN.into()),
        data_dir: std::env::temp_dir().join("hooks-http-tests-no-logins"),
        metrics: Arc::new(Metrics::default()),
    };
    let state = Arc::new(HttpState::new(svc, store, backend.clone(), config));
    App {
        backend,
        state,
        meta,
    }
}

impl App {
    /// `method path` with the token, this server's `Host` and a JSON body.
    pub async fn call(&self, method: &str, path: &str, body: &str) -> Response {
        self.send(
            method,
            path,
            body,
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Response {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Body::from(body.to_owned())).unwrap();
        crate::app(self.state.clone()).oneshot(req).await.unwrap()
    }

    pub async fn json(&self, method: &str, path: &str, body: &str) -> (StatusCode, Value) {
        let r = self.call(method, path, body).await;
        let status = r.status();
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

#[tokio::test]
async fn the_api_drives_the_service_it_is_given_and_hands_hook_inputs_to_the_backend() {
    let app = app().await;
    let post_task = post_task_id();
    let (status, hooks) = app.json("GET", "/api/v1/hooks", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(hooks.as_array().unwrap().len(), 2, "{hooks}");
    let seeded = |id: &str| {
        hooks
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .cloned()
    };
    assert_eq!(
        seeded(post_task.as_str()).unwrap()["enabled"],
        true,
        "{hooks}"
    );

    // A conversation done, told in notify's fields: post-task is queued, and pending shows it.
    let (status, reports) = app
        .json("POST", "/api/v1/events", r#"{"sessionId":"s-1"}"#)
        .await;
    assert_eq!(status, StatusCode::OK, "{reports}");
    let queued: Vec<&Value> = reports
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "queued")
        .collect();
    assert_eq!(queued.len(), 1, "{reports}");
    assert_eq!(queued[0]["hookId"], post_task.as_str());
    let (_, pending) = app.json("GET", "/api/v1/pending", "").await;
    assert_eq!(pending[0]["sessionId"], "s-1", "{pending}");

    // Disabled through the API, the hook skips the next conversation.
    let path = format!("/api/v1/hooks/{post_task}/disable");
    let (status, hook) = app.json("POST", &path, "").await;
    assert_eq!((status, &hook["enabled"]), (StatusCode::OK, &json!(false)));
    let (_, reports) = app
        .json("POST", "/api/v1/events", r#"{"sessionId":"s-2"}"#)
        .await;
    assert!(
        reports
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["outcome"] == "skipped"),
        "{reports}"
    );

    // Claude Code's hook input goes to the backend as it came; a follow-up's own does not,
    // and a guard no running follow-up bears out (a repository's settings can set the
    // variable it comes from) is no guard.
    let input = r#"{"hook_event_name":"Stop","session_id":"s-3"}"#;
    let (status, _) = app
        .json("POST", "/api/v1/events?on=session-end", input)
        .await;
    assert_eq!(status, StatusCode::OK);
    let bearer = format!("Bearer {TOKEN}");
    let guard = [
        ("authorization", bearer.as_str()),
        ("x-hooks-app-follow-up", "post-task"),
    ];
    let guarded = || app.send("POST", "/api/v1/events", input, &guard);
    assert_eq!(guarded().await.status(), StatusCode::OK);
    let now = time::OffsetDateTime::from_unix_timestamp(1_796_000_000).unwrap();
    app.meta.put_lease(
        &hooks_core::SessionId::parse("s-3").unwrap(),
        hooks_core::live::RunLease {
            run_id: "me#1".into(),
            hook_id: hooks_core::HookId::parse("post-task").unwrap(),
            owner: "me".into(),
            host: "h".into(),
            owner_process: None,
            child: None,
            started_at: now,
            expires_at: now + time::Duration::minutes(1),
        },
    );
    assert_eq!(guarded().await.status(), StatusCode::OK);
    assert_eq!(
        *app.backend.inputs.lock().unwrap(),
        [
            (input.to_owned(), true, false),
            (input.to_owned(), false, false)
        ],
        "the unfounded guard's input went on; the running follow-up's did not"
    );

    // A field the API does not know is refused by name, and nothing changes.
    let (status, e) = app
        .json("POST", "/api/v1/hooks", r#"{"name":"x","colour":"red"}"#)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["field"], "colour", "{e}");
    let (_, hooks) = app.json("GET", "/api/v1/hooks", "").await;
    assert_eq!(hooks.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_guard_and_the_router_answer_what_they_refuse_as_the_api_does() {
    let app = app().await;
    // No token: 401 naming the header, with the challenge.
    let r = app.send("GET", "/api/v1/hooks", "", &[]).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().contains_key("www-authenticate"));
    // A token, but a page of another name (DNS rebinding): 403 naming Host.
    let req = Request::builder()
        .uri("/api/v1/hooks")
        .header("host", "evil.example:8080")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let r = crate::app(app.state.clone()).oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // The health check needs nothing.
    let r = app.send("GET", "/api/v1/healthz", "", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    // A method a path does not take: 405 with Allow, as the API's error.
    let (status, e) = app.json("PUT", "/api/v1/hooks", "{}").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(e["error"]["field"], "method");
    assert!(
        e["error"]["rule"]
            .as_str()
            .unwrap()
            .contains("GET, HEAD, POST"),
        "{e}"
    );
    // An id that is not even text is refused as a bad id, in the API's shape.
    let (status, e) = app.json("GET", "/api/v1/sessions/%FF", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["field"], "id", "{e}");
    // A path it does not have: 404 pointing at the document.
    let (status, e) = app.json("GET", "/api/v1/nothing", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        e["error"]["rule"]
            .as_str()
            .unwrap()
            .contains("openapi.json"),
        "{e}"
    );
    // Every answer, the router's own included, carries the security headers.
    for (m, p) in [("PUT", "/api/v1/hooks"), ("GET", "/nothing"), ("GET", "/")] {
        let r = app.call(m, p, "").await;
        assert_eq!(r.headers()["x-frame-options"], "DENY", "{m} {p}");
        assert_eq!(r.headers()["cache-control"], "no-store", "{m} {p}");
    }
    let r = app.call("GET", "/", "").await;
    assert!(r.headers().contains_key("content-security-policy"));
}

/// Claude Code's `http` hook sends its token to whoever holds the port: that token tells
/// of a conversation's events (checked against the transcript by the backend) and does
/// nothing else.
#[tokio::test]
async fn the_hook_token_only_tells_of_events_and_they_are_checked() {
    let app = app().await;
    let hook = [("authorization", format!("Bearer {HOOK_TOKEN}"))];
    let hook: Vec<(&str, &str)> = hook.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (method, path, body) in [
        ("GET", "/api/v1/hooks", ""),
        ("GET", "/api/v1/runs", ""),
        (
            "POST",
            "/api/v1/hooks/post-task/run",
            r#"{"sessionId":"s1","force":true}"#,
        ),
        ("PATCH", "/api/v1/hooks/post-task", r#"{"delaySeconds":0}"#),
        ("PUT", "/api/v1/pause", "{}"),
        ("GET", "/", ""),
    ] {
        let r = app.send(method, path, body, &hook).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    // The API's own event form names any folder: not with the hook token.
    let r = app
        .send(
            "POST",
            "/api/v1/events",
            r#"{"sessionId":"s1","cwd":"/x"}"#,
            &hook,
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(app.backend.inputs.lock().unwrap().is_empty());
    // A hook input goes to the backend, marked to be checked against its transcript.
    let input = r#"{"hook_event_name":"Stop","session_id":"s1","transcript_path":"/t/s1.jsonl"}"#;
    let r = app.send("POST", "/api/v1/events", input, &hook).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.call("POST", "/api/v1/events", input).await;
    assert_eq!(r.status(), StatusCode::OK);
    let checked: Vec<bool> = app
        .backend
        .inputs
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, c)| *c)
        .collect();
    assert_eq!(checked, [true, false], "checked with the hook token only");
}

/// The page's header and its chart count the same runs: the follow-ups that started, not
/// the run log's lines for entries that ended before (a skip).
#[tokio::test]
async fn the_header_and_the_chart_count_the_same_runs() {
    use hooks_core::*;
    let app = app().await;
    let now = app.state.svc.now();
    let mut ran = RunRecord::new(post_task_id(), SessionId::parse("s-ran").unwrap(), now);
    ran.finished_at = Some(now);
    ran.outcome.cost_usd = Some(0.25);
    ran.outcome.exit_code = Some(0);
    let mut skipped = RunRecord::new(post_task_id(), SessionId::parse("s-skip").unwrap(), now);
    skipped.finished_at = Some(now);
    skipped.outcome.status = Some(Status::skipped("already ran"));
    for r in [&ran, &skipped] {
        app.state.store.append_run(r).await.unwrap();
    }
    let r = app.call("GET", "/", "").await;
    let page =
        String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(page.contains("1 run in 30 days"), "{page}");
    assert!(page.contains("1 run, $0.25 in all"), "{page}");
}
