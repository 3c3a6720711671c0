//! The route table (axum): every path the server answers with its methods, the API's
//! handlers, and the answers for a path or a method it does not know. The page's own
//! routes (`/`, `/ui/…`, `/login`, `/logout`) are in the table too, their handlers beside
//! the page.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::HeaderMap;
use axum::response::Response;
use axum::routing::{MethodRouter, get, post};
use axum::{Extension, Router};
use hooks_core::*;
use serde_json::{Value, json};

use crate::FOLLOW_UP_HEADER;
use crate::fields::*;
use crate::state::{ApiError, Body, Caller, HttpState, JsonObject, Params, json_response, respond};
use hooks_core::lookup::SessionLookup;

type Shared = Arc<HttpState>;
type Answer = Result<Response, ApiError>;

/// Every route: its path (axum's syntax) and its methods' handlers.
pub fn table() -> Vec<(&'static str, MethodRouter<Shared>)> {
    vec![
        ("/", get(page_get)),
        (
            "/login",
            get(crate::auth::login).post(crate::auth::login_post),
        ),
        ("/page/challenge", get(crate::auth::challenge)),
        ("/logout", post(crate::auth::logout)),
        ("/ui/{*form}", post(crate::forms::form)),
        ("/favicon.ico", get(favicon)),
        ("/metrics", get(metrics)),
        ("/api/v1/healthz", get(healthz)),
        ("/api/v1/openapi.json", get(openapi)),
        ("/api/v1/version", get(version)),
        ("/api/v1/hooks", get(list_hooks).post(create_hook)),
        (
            "/api/v1/hooks/{id}",
            get(get_hook).patch(update_hook).delete(delete_hook),
        ),
        ("/api/v1/hooks/{id}/enable", post(enable_hook)),
        ("/api/v1/hooks/{id}/disable", post(disable_hook)),
        ("/api/v1/hooks/{id}/run", post(run_hook)),
        ("/api/v1/sessions/{id}", get(session)),
        ("/api/v1/sessions/{id}/follow-ups", post(follow_up)),
        ("/api/v1/sessions/{id}/prompts", post(send_prompt)),
        ("/api/v1/events", post(events)),
        (
            "/api/v1/pause",
            get(pause_get).put(pause_put).delete(pause_delete),
        ),
        ("/api/v1/pending", get(pending)),
        ("/api/v1/runs", get(runs)),
    ]
}

/// The router over [`table`], with the answers for what it does not know.
pub fn router() -> Router<Shared> {
    table()
        .into_iter()
        .fold(Router::new(), |r, (path, methods)| r.route(path, methods))
        .fallback(not_found)
}

/// No route has the path.
async fn not_found(uri: axum::http::Uri) -> ApiError {
    let path = uri.path();
    if path.starts_with("/api/v1/") || path == "/metrics" {
        ApiError::not_found(
            "path",
            format!("no such endpoint: {path} (see /api/v1/openapi.json)"),
        )
    } else {
        ApiError::not_found("path", format!("no such page: {path}"))
    }
}

/// The router's 405 (it names the methods in `Allow`) as the API's error, the methods
/// listed as people write them (`GET, HEAD, POST`).
pub fn method_not_allowed(method: &str, path: &str, r: Response) -> Response {
    let allow = r
        .headers()
        .get(axum::http::header::ALLOW)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method",
        format!("{method} is not one of {allow} for {path}"),
    )
    .response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&allow) {
        out.headers_mut().insert(axum::http::header::ALLOW, v);
    }
    out
}

/// A hook's id in the path: an id that cannot be one names no hook.
struct HookPath(HookId);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for HookPath {
    type Rejection = ApiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        s: &S,
    ) -> Result<Self, ApiError> {
        let id = path_id(parts, s).await?;
        hook_id(&id).map(HookPath)
    }
}

/// A conversation's id (or prefix) in the path, as given: one that cannot even be decoded
/// is refused as the API refuses a bad id.
struct SessionPath(String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for SessionPath {
    type Rejection = ApiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        s: &S,
    ) -> Result<Self, ApiError> {
        path_id(parts, s)
            .await
            .map(SessionPath)
            .map_err(|e| ApiError::bad("id", e.rule_text()))
    }
}

/// The `{id}` of a path, decoded by axum's `Path`.
async fn path_id<S: Send + Sync>(
    parts: &mut axum::http::request::Parts,
    s: &S,
) -> Result<String, ApiError> {
    use axum::extract::FromRequestParts;
    Path::<String>::from_request_parts(parts, s)
        .await
        .map(|Path(id)| id)
        .map_err(|e| ApiError::not_found("id", e.body_text()))
}

fn ok(v: &Value) -> Answer {
    Ok(json_response(StatusCode::OK, v))
}

async fn favicon() -> Response {
    respond(StatusCode::NOT_FOUND, "text/plain", "none")
}

async fn openapi() -> Response {
    respond(StatusCode::OK, "application/json", crate::page::OPENAPI)
}

/// `ok` only when the store answers within two seconds (and the root says it can be used):
/// 503 naming what failed otherwise.
async fn healthz(State(s): State<Shared>) -> Response {
    let answer = match s.backend.health().await {
        Err(why) => Err(why),
        Ok(()) => match tokio::time::timeout(
            std::time::Duration::from_secs(2),
            s.store.summary(s.svc.now()),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("the store does not answer: {e}")),
            Err(_) => Err("the store did not answer within 2 s".to_owned()),
        },
    };
    match answer {
        Ok(()) => json_response(StatusCode::OK, &json!({"ok": true, "store": "ok"})),
        Err(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ok": false, "store": why}),
        ),
    }
}

async fn metrics(State(s): State<Shared>) -> Answer {
    Ok(respond(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        crate::metrics::metrics(&s).await?,
    ))
}

async fn version(State(s): State<Shared>) -> Answer {
    ok(&json!({"version": crate::metrics::version(&s).await?}))
}

async fn list_hooks(State(s): State<Shared>) -> Answer {
    let hooks = s.svc.list_hooks().await?;
    ok(&Value::Array(
        hooks.iter().map(hooks_shapes::json::hook).collect(),
    ))
}

async fn create_hook(State(s): State<Shared>, JsonObject(m): JsonObject) -> Answer {
    let h = s.svc.create_hook(spec_from(&m)?).await?;
    Ok(json_response(
        StatusCode::CREATED,
        &hooks_shapes::json::hook(&h),
    ))
}

async fn get_hook(State(s): State<Shared>, HookPath(id): HookPath) -> Answer {
    ok(&hooks_shapes::json::hook(&s.svc.get_hook(&id).await?))
}

async fn update_hook(
    State(s): State<Shared>,
    HookPath(id): HookPath,
    JsonObject(m): JsonObject,
) -> Answer {
    let h = s.svc.update_hook(&id, &patch_from(&m)?).await?;
    ok(&hooks_shapes::json::hook(&h))
}

async fn delete_hook(State(s): State<Shared>, HookPath(id): HookPath) -> Answer {
    let dropped = s.svc.delete_hook(&id).await?;
    ok(&json!({"deleted": id.as_str(), "droppedEntries": dropped}))
}

async fn enable_hook(State(s): State<Shared>, HookPath(id): HookPath) -> Answer {
    ok(&hooks_shapes::json::hook(
        &s.svc.set_enabled(&id, true).await?,
    ))
}

async fn disable_hook(State(s): State<Shared>, HookPath(id): HookPath) -> Answer {
    ok(&hooks_shapes::json::hook(
        &s.svc.set_enabled(&id, false).await?,
    ))
}

async fn run_hook(
    State(s): State<Shared>,
    HookPath(hook): HookPath,
    JsonObject(m): JsonObject,
) -> Answer {
    if let Some(k) = m.keys().find(|k| *k != "session" && *k != "force") {
        return Err(ApiError::bad(k, "is not a field of a run (session, force)"));
    }
    let session = text(&m, "session")?.ok_or_else(|| ApiError::bad("session", "is required"))?;
    SessionId::parse(session).map_err(|e| ApiError::bad("session", e.rule))?;
    let sid = s.svc.find_session(session).await.map_err(|e| match e {
        SessionLookup::Unknown(m) => ApiError::not_found("session", m),
        SessionLookup::Invalid(e) => ApiError::bad("session", e.to_string()),
        SessionLookup::Ambiguous(m) => ApiError::bad("session", m),
        SessionLookup::Failed(e) => e.into(),
    })?;
    let force = flag(&m, "force")?.unwrap_or(false);
    let r = s.svc.run_now(&hook, &sid, force).await?;
    Ok(json_response(
        StatusCode::ACCEPTED,
        &json!({
            "hookId": hook.as_str(),
            "sessionId": sid.as_str(),
            "queued": matches!(r.queued, hooks_core::service::RunNowQueue::Queued),
            "unstamped": r.unstamped,
            "status": match &r.queued {
                hooks_core::service::RunNowQueue::Skipped(st) => Some(st.to_string()),
                _ => None,
            },
        }),
    ))
}

async fn pause_get(State(s): State<Shared>) -> Answer {
    ok(&hooks_shapes::json::pause(s.svc.paused().await?.as_ref()))
}

async fn pause_put(State(s): State<Shared>, JsonObject(m): JsonObject<true>) -> Answer {
    if let Some(k) = m.keys().find(|k| *k != "for") {
        return Err(ApiError::bad(k, "is not a field of a pause (only for)"));
    }
    let span = text(&m, "for")?
        .map(hooks_shapes::span::parse_span)
        .transpose()?;
    let p = s.svc.pause(span, "the HTTP API").await?;
    ok(&hooks_shapes::json::pause(Some(&p)))
}

async fn pause_delete(State(s): State<Shared>) -> Answer {
    let woken = s.svc.unpause().await?;
    ok(&json!({"paused": false, "woken": woken}))
}

async fn pending(State(s): State<Shared>) -> Answer {
    let snap = s.store.snapshot().await?;
    let agents = s
        .svc
        .agents_of(
            &snap
                .pending
                .iter()
                .map(|p| p.session_id.clone())
                .collect::<Vec<_>>(),
        )
        .await?;
    ok(&hooks_shapes::json::pending_list(&snap.pending, &agents))
}

async fn runs(State(s): State<Shared>, q: Params) -> Answer {
    let runs = s.store.runs(&run_filter(&q.0)?).await?;
    let agents = s
        .svc
        .agents_of(
            &runs
                .iter()
                .map(|r| r.session_id.clone())
                .collect::<Vec<_>>(),
        )
        .await?;
    ok(&hooks_shapes::json::run_list(&runs, &agents))
}

/// The conversation a path's `{id}` names: a whole id or a unique prefix.
async fn conversation(s: &HttpState, id: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(id).map_err(|e| ApiError::bad("id", e.rule))?;
    s.svc.find_session(id).await.map_err(|e| match e {
        SessionLookup::Invalid(e) => e.into(),
        SessionLookup::Ambiguous(m) => {
            ApiError::bad("id", m.trim_start_matches("session: ").to_owned())
        }
        SessionLookup::Unknown(m) => ApiError::not_found("id", m),
        SessionLookup::Failed(e) => e.into(),
    })
}

async fn session(State(s): State<Shared>, SessionPath(id): SessionPath) -> Answer {
    let sid = conversation(&s, &id).await?;
    ok(&hooks_shapes::json::session(
        &s.svc.session_report(&sid).await?,
    ))
}

/// `POST /api/v1/sessions/{id}/follow-ups`: a follow-up at a time into the conversation
/// (`after`, or `every` with `times` or `until`, and its `prompt`), as `hooks-app after`
/// and `every` queue one.
async fn follow_up(
    State(s): State<Shared>,
    SessionPath(id): SessionPath,
    JsonObject(m): JsonObject,
) -> Answer {
    const FIELDS: [&str; 5] = ["prompt", "after", "every", "times", "until"];
    if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(ApiError::bad(
            &k.chars().take(64).collect::<String>(),
            format!("is not a field of a follow-up ({})", FIELDS.join(", ")),
        ));
    }
    let prompt = text(&m, "prompt")?.ok_or_else(|| ApiError::bad("prompt", "is required"))?;
    let times = match m.get("times") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| ApiError::bad("times", "must be a whole number from 1 to 100"))?,
        ),
    };
    let ask = hooks_core::schedule::Ask {
        after: text(&m, "after")?,
        every: text(&m, "every")?,
        times,
        until: text(&m, "until")?,
    };
    let schedule = hooks_core::schedule::Schedule::parse(&ask, s.svc.now())?;
    hooks_core::schedule::check_prompt(prompt)?;
    let sid = conversation(&s, &id).await?;
    let done = s
        .svc
        .schedule(
            &sid,
            &hooks_core::SessionUpdate::default(),
            &schedule,
            prompt,
        )
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &hooks_shapes::json::scheduled(&sid, &done),
    ))
}

/// `POST /api/v1/sessions/{id}/prompts`: `prompt` into the conversation now, as `hooks-app
/// send` does; the same `Idempotency-Key` again sends nothing more (200, `sent: false`).
async fn send_prompt(
    State(s): State<Shared>,
    SessionPath(id): SessionPath,
    headers: HeaderMap,
    JsonObject(m): JsonObject,
) -> Answer {
    if let Some(k) = m.keys().find(|k| *k != "prompt") {
        return Err(ApiError::bad(
            &k.chars().take(64).collect::<String>(),
            "is not a field of a prompt (only prompt)",
        ));
    }
    let prompt = text(&m, "prompt")?.ok_or_else(|| ApiError::bad("prompt", "is required"))?;
    hooks_core::schedule::check_prompt(prompt)?;
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| {
            ApiError::bad("Idempotency-Key", "must be 1 to 64 of A-Z a-z 0-9 and -")
        })?),
    };
    let sid = conversation(&s, &id).await?;
    let sent = s
        .svc
        .send(&sid, &hooks_core::SessionUpdate::default(), key, prompt)
        .await
        .map_err(|e| match e {
            hooks_core::service::ServiceError::Invalid(v) if v.field == "key" => {
                ApiError::bad("Idempotency-Key", v.rule)
            }
            other => other.into(),
        })?;
    let status = match sent {
        hooks_core::schedule::Sent::Queued(_) => StatusCode::ACCEPTED,
        hooks_core::schedule::Sent::Already { .. } => StatusCode::OK,
    };
    Ok(json_response(
        status,
        &hooks_shapes::json::sent(&sid, &sent),
    ))
}

/// `POST /api/v1/events`: Claude Code's `http` hooks (the follow-up guard in a header,
/// `?on=session-end` on the entry installed for the close) and `notify`'s fields.
async fn events(
    State(s): State<Shared>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    q: Params,
    Body(bytes): Body,
) -> Answer {
    let guard = headers
        .get(FOLLOW_UP_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty());
    let on_end = q.0.iter().any(|(k, v)| k == "on" && v == "session-end");
    let reports = crate::fields::events(&s, &caller, &bytes, guard, on_end).await?;
    ok(&Value::Array(reports.iter().map(report_json).collect()))
}

/// `GET /`: the page, for the page's own script (its session in `Authorization`) and for a
/// token's caller.
async fn page_get(
    State(s): State<Shared>,
    Extension(caller): Extension<Caller>,
    q: Params,
) -> Answer {
    crate::page::page(&s, &caller, &q.0, None).await
}
/// The hand-kept OpenAPI document checked against the code it describes: its paths and
/// methods against the router's, its schemas against the `--json` shapes and the fields a
/// hook takes. A route, a method or a field added without its description fails here.
#[cfg(test)]
mod openapi_tests {
    use std::collections::BTreeSet;

    use hooks_core::stamp::parse;
    use hooks_core::*;
    use serde_json::Value;

    use crate::fields::HOOK_FIELDS;

    fn doc() -> Value {
        serde_json::from_str(crate::page::OPENAPI).expect("the document is JSON")
    }

    fn properties(schema: &str) -> BTreeSet<String> {
        doc()["components"]["schemas"][schema]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {schema} has properties"))
            .keys()
            .cloned()
            .collect()
    }

    /// The keys a shape prints, every optional one included.
    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().expect("an object").keys().cloned().collect()
    }

    fn undocumented(schema: &str, v: &Value) -> Vec<String> {
        keys(v).difference(&properties(schema)).cloned().collect()
    }

    /// The methods the router serves at `path` (a concrete one): what it does not answer
    /// with 405, asked with the token.
    async fn served(path: &str) -> Vec<String> {
        let app = crate::tests::app().await;
        let mut out = Vec::new();
        for m in ["DELETE", "GET", "PATCH", "POST", "PUT"] {
            let r = app.call(m, path, "{}").await;
            if r.status() != axum::http::StatusCode::METHOD_NOT_ALLOWED {
                out.push(m.to_owned());
            }
        }
        out
    }

    #[tokio::test]
    async fn every_documented_path_has_exactly_the_routers_methods_and_back() {
        let d = doc();
        let paths = d["paths"].as_object().unwrap();
        for (path, item) in paths {
            let mut doc_methods: Vec<String> = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|m| ["get", "post", "put", "patch", "delete"].contains(&m.as_str()))
                .map(|m| m.to_uppercase())
                .collect();
            doc_methods.sort();
            let concrete = path.replace("{id}", "x");
            assert_eq!(doc_methods, served(&concrete).await, "{path}");
        }
        // Every route of the API in the router's table is documented.
        for (route, _) in super::table() {
            if route.starts_with("/api/v1/") || route == "/metrics" {
                assert!(paths.contains_key(route), "{route} is documented");
            }
        }
        // And a path the router does not have is a 404.
        assert_eq!(
            crate::tests::app()
                .await
                .call("GET", "/api/v1/nothing", "")
                .await
                .status(),
            axum::http::StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn the_schemas_hold_every_field_the_shapes_print_and_a_hook_takes() {
        let t = |s: &str| parse(s).unwrap();
        let mut spec = HookSpec::continue_after_limit();
        spec.max_cost = CostCap::from_usd(0.5).unwrap();
        spec.max_lateness = MaxLateness::from_seconds(3600).unwrap();
        let mut hook = spec.into_hook(continue_after_limit_id(), t("2026-12-01T00:00:00+0000"));
        hook.last_status = Some(Status::Ok);
        assert_eq!(
            undocumented("Hook", &hooks_shapes::json::hook(&hook)),
            Vec::<String>::new()
        );
        let entry = {
            let mut o = PendingEntry::new(
                continue_after_limit_id(),
                SessionId::parse("s1").unwrap(),
                DueAt::At(t("2026-12-01T01:00:00+0000")),
            );
            o.queued_at = Some(t("2026-12-01T00:00:00+0000"));
            o.retries = 1;
            o.claim = Some(Claim {
                owner: "me".into(),
                expires_at: t("2026-12-01T02:00:00+0000"),
            });
            o.waiting = Some(Waiting::new(
                WaitKind::Open,
                "conversation open in claude",
                t("2026-12-01T00:30:00+0000"),
            ));
            o.error = Some(FailureKind::RateLimit);
            o
        };
        assert_eq!(
            undocumented("Pending", &hooks_shapes::json::pending(&entry)),
            Vec::<String>::new()
        );
        let run = {
            let mut o = RunRecord::new(
                post_task_id(),
                SessionId::parse("s1").unwrap(),
                t("2026-12-01T00:00:00+0000"),
            );
            o.run_id = Some("me#1".into());
            o.owner = Some("me".into());
            o.process = Some(ProcessRef { pid: 42, start: 7 });
            o.finished_at = Some(t("2026-12-01T00:01:00+0000"));
            o.outcome = {
                let mut o = RunOutcome::new(Status::Ok);
                o.exit_code = Some(0);
                o.completed = Some(true);
                o.num_turns = Some(1);
                o.cost_usd = Some(0.01);
                o.usage = Some(Usage::default());
                o.duration_ms = Some(900);
                o.session_id = Some("s1".into());
                o.result_text = Some("COMPLETED".into());
                o.api_error_status = None;
                o
            };
            o.estimated_cost_usd = Some(0.02);
            o.model = Some("claude-x".into());
            o.delivered = false;
            o
        };
        assert_eq!(
            undocumented("Run", &hooks_shapes::json::run(&run)),
            Vec::<String>::new()
        );
        let pause = Pause {
            since: t("2026-12-01T00:00:00+0000"),
            until: Some(t("2026-12-01T01:00:00+0000")),
            by: "me@here".into(),
        };
        assert_eq!(
            undocumented("Pause", &hooks_shapes::json::pause(Some(&pause))),
            Vec::<String>::new()
        );
        // What a hook takes, in the API and in the document alike.
        let fields: BTreeSet<String> = HOOK_FIELDS.iter().map(|f| (*f).to_owned()).collect();
        assert_eq!(properties("HookSpec"), fields);
        assert_eq!(properties("HookPatch"), fields);
    }
}
