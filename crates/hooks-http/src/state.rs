//! What the HTTP server's parts share: the state every handler holds, the process's
//! counters, the error every handler answers with, responses with their security headers,
//! and bounded request bodies.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use hooks_core::ports::HookStore;
use hooks_core::service::Service;
use hooks_core::*;
use http_body_util::{BodyExt, Limited};
use serde_json::{Map, Value, json};

use crate::Backend;

/// Where one-time login tokens wait to be used.
pub const LOGIN_DIR: &str = "http-logins";

/// Where page sessions are kept, so a login outlives the daemon that made it: one 0600
/// file a session, named by the SHA-256 of its id (a copy of the folder logs nobody in),
/// holding its CSRF token and when it lapses.
pub const SESSION_DIR: &str = "http-sessions";

/// The most a request body may hold.
pub const MAX_BODY: usize = 1024 * 1024;

/// How long a client may take to send a request's head, and then its body.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take, from `HOOKS_APP_HTTP_READ_TIMEOUT_MS` when set (tests use it).
pub(crate) fn read_timeout() -> Duration {
    std::env::var("HOOKS_APP_HTTP_READ_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(READ_TIMEOUT, Duration::from_millis)
}

/// How long a page session lasts without use; each use renews it.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The most page sessions kept at once (the oldest goes first).
pub(crate) const MAX_SESSIONS: usize = 64;

/// Counters only this process can see: what came in over HTTP, and when runs started.
#[derive(Default)]
pub struct Metrics {
    pub events: AtomicU64,
    pub queued: AtomicU64,
    pub skipped: Mutex<HashMap<String, u64>>,
    /// Lateness (start − due) of the follow-ups this daemon fired, by histogram bucket.
    pub lateness: Mutex<Histogram>,
    /// When the last request but a health check came: an on-demand daemon someone is
    /// using is not idle.
    pub last_request: Mutex<Option<std::time::Instant>>,
}

/// A Prometheus histogram's counts.
#[derive(Default, Clone)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

pub const LATENESS_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

pub const DURATION_BUCKETS: &[f64] = &[1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];

impl Histogram {
    pub fn observe(&mut self, buckets: &[f64], v: f64) {
        if self.counts.len() != buckets.len() {
            self.counts = vec![0; buckets.len()];
        }
        for (i, b) in buckets.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

impl Metrics {
    /// A follow-up starts, `late` seconds after it was due.
    pub fn started(&self, late: f64) {
        lock(&self.lateness).observe(LATENESS_BUCKETS, late.max(0.0));
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Equal, in a time that does not depend on where they differ (`subtle`'s comparison).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

/// How the server was set up by the program that starts it.
pub struct HttpConfig {
    /// Where it listens: the `Host` a request must name.
    pub addr: SocketAddr,
    /// The API token; `None` with `--http-no-auth`.
    pub token: Option<String>,
    /// The hook token (`Authorization: Bearer` of Claude Code's `http` hooks): it may only
    /// tell of a conversation's events.
    pub hook_token: Option<String>,
    /// The data folder: one-time logins wait in its `http-logins`; the daemon's key for
    /// the page is its `page.key`.
    pub data_dir: PathBuf,
    /// The counters the daemon shares with the server.
    pub metrics: Arc<Metrics>,
}

/// What the handlers share.
pub struct HttpState {
    pub svc: Arc<Service>,
    pub store: Arc<dyn HookStore>,
    pub backend: Arc<dyn Backend>,
    /// `None` with `--http-no-auth`.
    pub token: Option<String>,
    pub(crate) hook_token: Option<String>,
    pub metrics: Arc<Metrics>,
    /// When this server started: `/metrics` counts the runs since.
    pub(crate) started_at: hooks_core::stamp::Timestamp,
    pub(crate) login_dir: PathBuf,
    pub(crate) session_dir: PathBuf,
    /// Page sessions: the id the page sends (`Authorization: Page <id> <nonce> <sig>`) →
    /// its key, its CSRF token and when it lapses.
    pub(crate) sessions: Mutex<HashMap<String, PageSession>>,
    /// The daemon's key pair for the page, and the nonces it issued.
    pub(crate) page_keys: crate::pagekey::PageKeys,
    /// Where this server listens: the `Host` a request must name.
    pub(crate) addr: SocketAddr,
}

pub(crate) struct PageSession {
    /// The page's public key (made in the browser at login): each request is signed by it.
    pub(crate) key: Vec<u8>,
    pub(crate) csrf: String,
    pub(crate) expires: std::time::Instant,
    /// When the kept file says it lapses (Unix seconds): rewritten once the renewed lapse
    /// is well past it, not on every request.
    pub(crate) kept_until: u64,
}

impl HttpState {
    /// The server's state: the core's service and store, the root's [`Backend`], and how
    /// it was set up.
    pub fn new(
        svc: Arc<Service>,
        store: Arc<dyn HookStore>,
        backend: Arc<dyn Backend>,
        config: HttpConfig,
    ) -> Self {
        Self {
            started_at: svc.now(),
            svc,
            store,
            backend,
            token: config.token,
            hook_token: config.hook_token,
            metrics: config.metrics,
            login_dir: config.data_dir.join(LOGIN_DIR),
            session_dir: config.data_dir.join(SESSION_DIR),
            sessions: Mutex::new(HashMap::new()),
            page_keys: crate::pagekey::PageKeys::load(&config.data_dir),
            addr: config.addr,
        }
    }

    /// Whether `host` (a request's `Host`) names this server: its address, or `localhost`
    /// on its port. A page of another name reached through DNS rebinding is refused. An
    /// address that is not loopback sits behind a proxy, whose name is not known here.
    pub(crate) fn host_ok(&self, host: Option<&str>) -> bool {
        if !self.addr.ip().is_loopback() {
            return true;
        }
        let Some(host) = host else { return false };
        let port = self.addr.port();
        host.eq_ignore_ascii_case(&self.addr.to_string())
            || host.eq_ignore_ascii_case(&format!("localhost:{port}"))
    }
}

/// An API error: `{"error": {"field", "rule", "message"}}`.
pub struct ApiError {
    status: StatusCode,
    field: String,
    rule: String,
}

impl ApiError {
    pub fn new(status: StatusCode, field: &str, rule: impl Into<String>) -> Self {
        Self {
            status,
            field: field.to_owned(),
            rule: rule.into(),
        }
    }
    pub fn bad(field: &str, rule: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, field, rule)
    }
    pub fn not_found(field: &str, rule: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, field, rule)
    }
    /// The service cannot answer now: 503 with what went wrong.
    pub fn unavailable(rule: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "", rule)
    }
    /// The rule broken, without the field.
    pub fn rule_text(&self) -> String {
        self.rule.clone()
    }
    /// `field: rule`, or the rule alone.
    pub fn message(&self) -> String {
        if self.field.is_empty() {
            self.rule.clone()
        } else {
            format!("{}: {}", self.field, self.rule)
        }
    }
    pub fn response(&self) -> Response {
        let message = self.message();
        json_response(
            self.status,
            &json!({"error": {"field": self.field, "rule": self.rule, "message": message}}),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.response()
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        Self::bad(e.field, e.rule)
    }
}

impl From<hooks_core::service::ServiceError> for ApiError {
    fn from(e: hooks_core::service::ServiceError) -> Self {
        use hooks_core::ports::StoreError;
        use hooks_core::service::ServiceError;
        match e {
            ServiceError::Store(StoreError::HookNotFound(id)) => {
                Self::not_found("id", format!("no hook with id {id}"))
            }
            ServiceError::Store(StoreError::Invalid(v)) | ServiceError::Invalid(v) => v.into(),
            other => Self::new(StatusCode::SERVICE_UNAVAILABLE, "", other.to_string()),
        }
    }
}

impl From<hooks_core::ports::StoreError> for ApiError {
    fn from(e: hooks_core::ports::StoreError) -> Self {
        hooks_core::service::ServiceError::Store(e).into()
    }
}

pub fn json_response(status: StatusCode, v: &Value) -> Response {
    let body = serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec());
    respond(status, "application/json", body)
}

/// A response of `content_type`; the headers every response carries are added by
/// `security_headers` on the way out.
pub fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
    let mut r = (status, body.into()).into_response();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// What every answer carries, the router's own (a 405, a rejection) included: no caching,
/// no sniffing, no framing, no referrer to other sites, and for HTML a policy that allows
/// only the page's own inline style and script.
pub fn security_headers(h: &mut HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The login link carries a token: no page of ours tells another site where it came from
    // (same-origin, not no-referrer: with that, a browser sends `Origin: null` on the
    // page's own form posts).
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    let html = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        // The page's own inline style and script, calls and forms to itself, nothing else.
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; \
                 base-uri 'none'",
            ),
        );
    }
}

/// Who made the request.
#[derive(Debug, Clone, PartialEq)]
pub enum Caller {
    /// The bearer token, or no auth at all.
    Token,
    /// The hook token: a Claude Code hook input at `POST /api/v1/events`, and nothing else.
    Hook,
    /// The page's session (`Authorization: Page <id>`): its CSRF token.
    Page { csrf: String },
}

/// The body, bounded and within the read timeout.
pub async fn read_body(req: Request) -> Result<Bytes, ApiError> {
    if req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(too_large());
    }
    let limited = Limited::new(req.into_body(), MAX_BODY);
    let limit = read_timeout();
    match tokio::time::timeout(limit, limited.collect()).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body",
            format!("must arrive within {} ms", limit.as_millis()),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::bad("body", format!("could not be read: {e}"))),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body",
        format!("must be at most {MAX_BODY} bytes"),
    )
}

/// Extractor: the request's body, at most [`MAX_BODY`] bytes, within the read timeout.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;
    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        read_body(req).await.map(Body)
    }
}

/// Extractor: the body as a JSON object (a body of only white space is an empty one when
/// `EMPTY_OK`).
pub struct JsonObject<const EMPTY_OK: bool = false>(pub serde_json::Map<String, Value>);

impl<S: Send + Sync, const EMPTY_OK: bool> FromRequest<S> for JsonObject<EMPTY_OK> {
    type Rejection = ApiError;
    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req).await?;
        if EMPTY_OK && bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(serde_json::Map::new()));
        }
        json_object(&bytes).map(Self)
    }
}

/// A JSON object, or the error saying what the body is instead.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad("body", "must be a JSON object")),
        Err(e) => Err(ApiError::bad("body", format!("must be JSON: {e}"))),
    }
}

/// Extractor: a query's fields in order, by axum's `Query` (invalid `%` sequences kept).
pub struct Params(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        Query::<Vec<(String, String)>>::from_request_parts(parts, s)
            .await
            .map(|Query(q)| Params(q))
            .map_err(|e| ApiError::bad("query", e.body_text()))
    }
}

impl Params {
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str())
    }
}

/// The fields of an `application/x-www-form-urlencoded` text (a query, or a form's body),
/// decoded by `form_urlencoded` (invalid `%` sequences kept as they are).
pub fn form_fields(text: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(text).into_owned().collect()
}

/// No `Origin`, or this server's own.
pub fn origin_ok(headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // An `Origin` that is not text is no origin of ours.
    headers.get(header::ORIGIN).is_none_or(|o| {
        o.to_str()
            .is_ok_and(|o| o == format!("http://{host}") || o == format!("https://{host}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_queries_are_read_by_their_library() {
        assert_eq!(
            form_fields(b"name=Tidy+up&promptFile=.claude%2Fagents%2Fhooks%2Fx.md&bad=%zz&flag"),
            [
                ("name".to_owned(), "Tidy up".to_owned()),
                (
                    "promptFile".to_owned(),
                    ".claude/agents/hooks/x.md".to_owned()
                ),
                ("bad".to_owned(), "%zz".to_owned()),
                ("flag".to_owned(), String::new()),
            ]
        );
    }
}
