//! `serve --http ADDR`: the daemon's JSON API under `/api/v1` (the CLI's use cases and
//! `--json` shapes), Claude Code's `http` hooks at `POST /api/v1/events`, Prometheus
//! metrics at `/metrics` and a web page at `/`, in the daemon's own process.
//!
//! Auth, as Jupyter does it: a bearer token (`<data-dir>/http.token`, made on first use) is
//! required even on loopback, where other users of the machine can connect too. `hooks-app
//! open` hands out a one-time login URL; using it sets an HttpOnly, SameSite=Strict cookie.
//! A request authenticated by that cookie that changes anything must carry the session's
//! CSRF token and come from the page's own origin. Tokens are compared in constant time and
//! never logged. Bodies over 1 MiB are refused; a client that is slow to send its request
//! is cut off.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks_core::ports::SessionMeta;
use hooks_core::service::{NotifyEvent, NotifyOutcome, NotifyReport, Service};
use hooks_core::*;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use crate::context::Store;
use crate::{AppError, Context};

/// The most a request body may hold.
pub const MAX_BODY: usize = 1024 * 1024;
/// How long a client may take to send a request's head, and then its body.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take, from `HOOKS_APP_HTTP_READ_TIMEOUT_MS` when set (tests use it).
fn read_timeout() -> Duration {
    std::env::var("HOOKS_APP_HTTP_READ_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(READ_TIMEOUT, Duration::from_millis)
}

/// The variable an installed `http` hook takes the token from.
pub const TOKEN_ENV: &str = "HOOKS_APP_HTTP_TOKEN";
/// The file holding the API token.
pub const TOKEN_FILE: &str = "http.token";
/// Where one-time login tokens wait to be used.
pub const LOGIN_DIR: &str = "http-logins";
/// How long a one-time login token lasts.
pub const LOGIN_TTL_SECS: u64 = 300;
/// How long a page session lasts without use; each use renews it.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// The most page sessions kept at once (the oldest goes first).
const MAX_SESSIONS: usize = 64;
/// The header an `http` hook carries the follow-up guard in.
pub const FOLLOW_UP_HEADER: &str = "x-hooks-app-follow-up";

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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How the listener was asked for.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub no_auth: bool,
    pub allow_insecure: bool,
}

/// Checks the address against the auth options: `--http-no-auth` only on loopback; a
/// non-loopback address only with `--http-allow-insecure` (TLS belongs in front of it).
pub fn check_options(o: &HttpOptions) -> Result<(), AppError> {
    let lo = o.addr.ip().is_loopback();
    if o.no_auth && !lo {
        return Err(AppError::invalid(format!(
            "http: --http-no-auth is allowed only on a loopback address (got {})",
            o.addr
        )));
    }
    if !lo && !o.allow_insecure {
        return Err(AppError::invalid(format!(
            "http: {} is not a loopback address: put TLS in front of it (a reverse proxy) and pass --http-allow-insecure",
            o.addr
        )));
    }
    Ok(())
}

/// Random bytes as hex, from the kernel.
pub fn random_hex(bytes: usize) -> Result<String, AppError> {
    use std::io::Read;
    let mut b = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| AppError::runtime(format!("could not read /dev/urandom: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The API token, made (0600) when there is none yet.
pub fn token(data_dir: &Path) -> Result<String, AppError> {
    let p = data_dir.join(TOKEN_FILE);
    match std::fs::read_to_string(&p) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(AppError::runtime(format!(
                "could not read {}: {e}",
                p.display()
            )));
        }
    }
    let t = random_hex(32)?;
    crate::context::write_private(&p, &format!("{t}\n"))?;
    Ok(t)
}

/// A token as it is kept at rest: its SHA-256, so a file name or a copy of the folder
/// gives nobody a login.
fn token_hash(t: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(t.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A one-time login token for the page, good for [`LOGIN_TTL_SECS`]. Only its hash is
/// written down.
pub fn one_time_login(data_dir: &Path) -> Result<String, AppError> {
    let dir = data_dir.join(LOGIN_DIR);
    let t = random_hex(24)?;
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        + LOGIN_TTL_SECS;
    crate::context::write_private(&dir.join(token_hash(&t)), &format!("{until}\n"))?;
    Ok(t)
}

/// Takes a one-time login token: true once, if it exists and has not expired.
fn use_login(dir: &Path, t: &str) -> bool {
    if t.is_empty() || t.len() > 128 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let p = dir.join(token_hash(t));
    let Ok(text) = std::fs::read_to_string(&p) else {
        return false;
    };
    // Whoever removes it used it: two requests with one token, one login.
    if std::fs::remove_file(&p).is_err() {
        return false;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(u64::MAX);
    text.trim().parse::<u64>().is_ok_and(|until| now <= until)
}

/// Equal, in a time that does not depend on where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// What the handlers share.
pub struct HttpState {
    pub svc: Arc<Service>,
    pub store: Store,
    pub meta: Arc<dyn SessionMeta>,
    pub ctx: Context,
    /// `None` with `--http-no-auth`.
    pub token: Option<String>,
    pub metrics: Arc<Metrics>,
    /// Page sessions: cookie value → its CSRF token and when it lapses.
    sessions: Mutex<HashMap<String, PageSession>>,
    /// Where this server listens: the `Host` a request must name, and the cookie's name.
    addr: SocketAddr,
}

struct PageSession {
    csrf: String,
    expires: std::time::Instant,
}

impl HttpState {
    pub fn new(
        svc: Arc<Service>,
        store: Store,
        meta: Arc<dyn SessionMeta>,
        ctx: Context,
        token: Option<String>,
        metrics: Arc<Metrics>,
        addr: SocketAddr,
    ) -> Self {
        Self {
            svc,
            store,
            meta,
            ctx,
            token,
            metrics,
            sessions: Mutex::new(HashMap::new()),
            addr,
        }
    }

    /// The page's cookie, named for this port: cookies ignore ports (RFC 6265), so another
    /// server on this host must not be sent a session of this one by its name.
    pub fn cookie_name(&self) -> String {
        format!("hooks_app_{}", self.addr.port())
    }

    /// Whether `host` (a request's `Host`) names this server: its address, or `localhost`
    /// on its port. A page of another name reached through DNS rebinding is refused. An
    /// address that is not loopback sits behind a proxy, whose name is not known here.
    fn host_ok(&self, host: Option<&str>) -> bool {
        if !self.addr.ip().is_loopback() {
            return true;
        }
        let Some(host) = host else { return false };
        let port = self.addr.port();
        host.eq_ignore_ascii_case(&self.addr.to_string())
            || host.eq_ignore_ascii_case(&format!("localhost:{port}"))
    }
}

/// Binds the address (so a bad one fails before anything starts) and says where it is.
pub async fn bind(o: &HttpOptions, data_dir: &Path) -> Result<tokio::net::TcpListener, AppError> {
    tokio::net::TcpListener::bind(o.addr).await.map_err(|e| {
        let holder = if e.kind() == std::io::ErrorKind::AddrInUse {
            let ours = crate::ondemand::running(data_dir).into_iter().find(|d| {
                d["http"]
                    .as_str()
                    .is_some_and(|u| u.trim_start_matches("http://") == o.addr.to_string())
            });
            match ours {
                Some(d) => format!(
                    "; this data folder's daemon (pid {}) serves there: `hooks-app open` finds it",
                    d["pid"]
                ),
                None => format!(
                    "; another program holds it (`ss -ltnp 'sport = :{0}'` or `lsof -i :{0}` \
                     names it): choose another port",
                    o.addr.port()
                ),
            }
        } else {
            String::new()
        };
        AppError::runtime(format!("http: could not listen on {}: {e}{holder}", o.addr))
    })
}

/// The most connections served at once; one more is closed at once. Well under the
/// default 1,024 open files, so the daemon keeps files for its store and its runs.
pub const MAX_CONNECTIONS: usize = 256;

/// How long writing a response may stall (a client that sends and never reads).
fn write_timeout() -> Duration {
    read_timeout()
}

/// Serves connections until the process ends: at most [`MAX_CONNECTIONS`] at once, each
/// cut off when its head is slow to arrive (also while idle between requests), its body
/// slow (see [`read_body`]) or its answer not read.
pub fn spawn(listener: tokio::net::TcpListener, state: Arc<HttpState>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(10);
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(c) => {
                    backoff = Duration::from_millis(10);
                    c
                }
                Err(e) => {
                    // Out of files (EMFILE) and the like: waiting is the only cure, and a
                    // loop that retries at once burns a core.
                    warn!(error = %e, wait_ms = backoff.as_millis() as u64, "http: accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                // Closed at once: the client learns now, rather than waiting on a queue.
                drop(tcp);
                continue;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let mut io = tokio_io_timeout::TimeoutStream::new(tcp);
                io.set_write_timeout(Some(write_timeout()));
                let io = hyper_util::rt::TokioIo::new(Box::pin(io));
                let svc = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, std::convert::Infallible>(handle(&state, req, peer).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(read_timeout())
                    .max_buf_size(64 * 1024)
                    .serve_connection(io, svc);
                let _ = conn.await;
            });
        }
    });
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
    pub fn response(&self) -> Response<Full<Bytes>> {
        let message = if self.field.is_empty() {
            self.rule.clone()
        } else {
            format!("{}: {}", self.field, self.rule)
        };
        json_response(
            self.status,
            &json!({"error": {"field": self.field, "rule": self.rule, "message": message}}),
        )
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

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        if e.code == 2 {
            let (field, rule) = e
                .message
                .split_once(": ")
                .map_or(("", e.message.as_str()), |(f, r)| (f, r));
            Self::bad(field, rule)
        } else {
            Self::new(StatusCode::SERVICE_UNAVAILABLE, "", e.message)
        }
    }
}

impl From<hooks_core::ports::StoreError> for ApiError {
    fn from(e: hooks_core::ports::StoreError) -> Self {
        hooks_core::service::ServiceError::Store(e).into()
    }
}

pub fn json_response(status: StatusCode, v: &Value) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec());
    respond(status, "application/json", body)
}

pub fn respond(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
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
    if content_type.starts_with("text/html") {
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
    r
}

/// Who made the request.
#[derive(Debug, Clone, PartialEq)]
pub enum Caller {
    /// The bearer token, or no auth at all.
    Token,
    /// The page's cookie: its CSRF token.
    Page { csrf: String },
}

fn cookie<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn authenticate(state: &HttpState, req: &Request<Incoming>) -> Option<Caller> {
    let caller = authenticate_inner(state, req);
    // A session's cookie has its lifetime renewed on each use.
    if matches!(caller, Some(Caller::Page { .. }))
        && let Some(c) = cookie(req, &state.cookie_name())
        && let Some(s) = lock(&state.sessions).get_mut(c)
    {
        s.expires = std::time::Instant::now() + SESSION_TTL;
    }
    caller
}

fn authenticate_inner(state: &HttpState, req: &Request<Incoming>) -> Option<Caller> {
    let Some(token) = &state.token else {
        return Some(Caller::Token);
    };
    if let Some(v) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some(given) = v.strip_prefix("Bearer ")
        && same(given.trim().as_bytes(), token.as_bytes())
    {
        return Some(Caller::Token);
    }
    let c = cookie(req, &state.cookie_name())?;
    let mut sessions = lock(&state.sessions);
    let now = std::time::Instant::now();
    sessions.retain(|_, s| s.expires > now);
    sessions
        .iter()
        .find(|(k, _)| same(k.as_bytes(), c.as_bytes()))
        .map(|(_, s)| Caller::Page {
            csrf: s.csrf.clone(),
        })
}

/// `Set-Cookie` for a session: its lifetime, or (`None`) its end.
fn session_cookie(state: &HttpState, id: Option<&str>) -> Option<HeaderValue> {
    let name = state.cookie_name();
    let v = match id {
        Some(id) => format!(
            "{name}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
            SESSION_TTL.as_secs()
        ),
        None => format!("{name}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    };
    HeaderValue::from_str(&v).ok()
}

/// A state-changing request from the page must carry its CSRF token (header or form field)
/// and come from the page's own origin.
fn csrf_ok(req: &Request<Incoming>, csrf: &str, form_token: Option<&str>) -> bool {
    let given = req
        .headers()
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .or(form_token);
    given.is_some_and(|g| same(g.as_bytes(), csrf.as_bytes())) && origin_ok(req)
}

/// No `Origin`, or this server's own.
fn origin_ok(req: &Request<Incoming>) -> bool {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(o) => o == format!("http://{host}") || o == format!("https://{host}"),
    }
}

/// The body, bounded and within the read timeout.
pub async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    if req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
            format!("must be at most {MAX_BODY} bytes"),
        ));
    }
    let limited = Limited::new(req.into_body(), MAX_BODY);
    let limit = read_timeout();
    match tokio::time::timeout(limit, limited.collect()).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body",
            format!("must arrive within {} ms", limit.as_millis()),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
            format!("must be at most {MAX_BODY} bytes"),
        )),
        Ok(Err(e)) => Err(ApiError::bad("body", format!("could not be read: {e}"))),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad("body", "must be a JSON object")),
        Err(e) => Err(ApiError::bad("body", format!("must be JSON: {e}"))),
    }
}

fn query(req: &Request<Incoming>) -> Vec<(String, String)> {
    req.uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (crate::page::url_decode(k), crate::page::url_decode(v))
        })
        .collect()
}

async fn handle(
    state: &HttpState,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let started = std::time::Instant::now();
    if !path.ends_with("/healthz") {
        *lock(&state.metrics.last_request) = Some(started);
    }
    let r = route(state, req).await;
    let r = match r {
        Ok(r) => r,
        Err(e) => e.response(),
    };
    if r.status().is_server_error() || r.status() == StatusCode::UNAUTHORIZED {
        // Never the request's headers or body: a token could be in them.
        info!(%peer, %method, path, status = r.status().as_u16(), ms = started.elapsed().as_millis() as u64, "http");
    }
    r
}

/// `ok` only when the store answers within two seconds (and, for a store in the data
/// folder, that folder is still there): 503 naming what failed otherwise.
async fn healthz(state: &HttpState) -> Response<Full<Bytes>> {
    let folder = match &state.ctx.store {
        crate::context::StoreChoice::Json { dir, .. } => Some(dir),
        crate::context::StoreChoice::Postgres { .. } => None,
    };
    let answer = if let Some(dir) = folder.filter(|d| !d.is_dir()) {
        Err(format!("the store's folder {} is gone", dir.display()))
    } else {
        match tokio::time::timeout(Duration::from_secs(2), state.store.summary(state.svc.now()))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("the store does not answer: {e}")),
            Err(_) => Err("the store did not answer within 2 s".to_owned()),
        }
    };
    match answer {
        Ok(()) => json_response(StatusCode::OK, &json!({"ok": true, "store": "ok"})),
        Err(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ok": false, "store": why}),
        ),
    }
}

fn segments(path: &str) -> Vec<&str> {
    path.trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect()
}

async fn route(
    state: &HttpState,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, ApiError> {
    let path = req.uri().path().to_owned();
    let seg = segments(&path);
    let method = req.method().clone();
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    if !state.host_ok(host) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Host",
            format!(
                "must name this server ({} or localhost:{})",
                state.addr,
                state.addr.port()
            ),
        ));
    }
    // What needs no auth: the health check, the API's description, the login.
    match (&method, seg.as_slice()) {
        (&Method::GET, ["api", "v1", "healthz"]) => return Ok(healthz(state).await),
        (&Method::GET, ["api", "v1", "openapi.json"]) => {
            return Ok(respond(
                StatusCode::OK,
                "application/json",
                crate::page::OPENAPI,
            ));
        }
        (&Method::GET, ["login"]) => return Ok(login(state, &req)),
        (&Method::GET, ["favicon.ico"]) => {
            return Ok(respond(StatusCode::NOT_FOUND, "text/plain", "none"));
        }
        _ => {}
    }
    let Some(caller) = authenticate(state, &req) else {
        if method == Method::GET && seg.is_empty() {
            return Ok(crate::page::login_needed());
        }
        let mut r = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Authorization",
            "must be `Bearer <token>` with the token in <data-dir>/http.token (or log in with `hooks-app open`)",
        )
        .response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"hooks-app\""),
        );
        return Ok(r);
    };
    let changes = !matches!(method, Method::GET | Method::HEAD);
    // Without a token, nothing tells a web page's request from the user's: a write must be
    // one no page can send without asking first (JSON), from this server's own origin.
    if changes && state.token.is_none() {
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Content-Type",
                "must be application/json for a change without a token (--http-no-auth)",
            ));
        }
        if !origin_ok(&req) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Origin",
                "must be this server's own origin",
            ));
        }
    }
    if method == Method::POST && seg.as_slice() == ["logout"] {
        return Ok(logout(state, req, &caller).await);
    }
    // The page posts forms with the token in a field; the API sends it as a header.
    let form_page = seg.first() == Some(&"ui");
    if changes
        && !form_page
        && let Caller::Page { csrf } = &caller
        && !csrf_ok(&req, csrf, None)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "X-CSRF-Token",
            "must be the page's token, sent from the page's own origin",
        ));
    }
    let s = state;
    match (method, seg.as_slice()) {
        (Method::GET, []) => {
            let id = cookie(&req, &s.cookie_name()).map(str::to_owned);
            let mut r = crate::page::page(s, &caller, &query(&req), None).await?;
            // The browser's copy of the cookie is renewed with the server's.
            if matches!(caller, Caller::Page { .. })
                && let Some(v) = session_cookie(s, id.as_deref())
            {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            Ok(r)
        }
        (Method::POST, ["ui", rest @ ..]) => {
            let rest: Vec<String> = rest.iter().map(|x| (*x).to_owned()).collect();
            crate::page::form(s, &caller, req, &rest).await
        }
        (Method::GET, ["metrics"]) => Ok(respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            crate::page::metrics(s).await?,
        )),
        (Method::GET, ["api", "v1", "version"]) => Ok(json_response(
            StatusCode::OK,
            &json!({"version": crate::page::version(s).await?}),
        )),
        (Method::GET, ["api", "v1", "hooks"]) => {
            let hooks = s.svc.list_hooks().await?;
            Ok(json_response(
                StatusCode::OK,
                &Value::Array(hooks.iter().map(crate::shapes::hook).collect()),
            ))
        }
        (Method::POST, ["api", "v1", "hooks"]) => {
            let m = json_object(&read_body(req).await?)?;
            let spec = spec_from(&m)?;
            let h = s.svc.create_hook(spec).await?;
            Ok(json_response(StatusCode::CREATED, &crate::shapes::hook(&h)))
        }
        (Method::GET, ["api", "v1", "hooks", id]) => {
            let h = s.svc.get_hook(&hook_id(id)?).await?;
            Ok(json_response(StatusCode::OK, &crate::shapes::hook(&h)))
        }
        (Method::PATCH, ["api", "v1", "hooks", id]) => {
            let id = hook_id(id)?;
            let m = json_object(&read_body(req).await?)?;
            let patch = patch_from(&m)?;
            let h = s.svc.update_hook(&id, &patch).await?;
            Ok(json_response(StatusCode::OK, &crate::shapes::hook(&h)))
        }
        (Method::DELETE, ["api", "v1", "hooks", id]) => {
            let id = hook_id(id)?;
            let dropped = s.svc.delete_hook(&id).await?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"deleted": id.as_str(), "droppedEntries": dropped}),
            ))
        }
        (Method::POST, ["api", "v1", "hooks", id, action @ ("enable" | "disable")]) => {
            let h = s
                .svc
                .set_enabled(&hook_id(id)?, *action == "enable")
                .await?;
            Ok(json_response(StatusCode::OK, &crate::shapes::hook(&h)))
        }
        (Method::GET, ["api", "v1", "pending"]) => {
            let snap = s.store.snapshot().await?;
            Ok(json_response(
                StatusCode::OK,
                &Value::Array(snap.pending.iter().map(crate::shapes::pending).collect()),
            ))
        }
        (Method::GET, ["api", "v1", "runs"]) => {
            let filter = run_filter(&query(&req))?;
            let runs = s.store.runs(&filter).await?;
            Ok(json_response(
                StatusCode::OK,
                &Value::Array(runs.iter().map(crate::shapes::run).collect()),
            ))
        }
        (Method::GET, ["api", "v1", "sessions", id]) => {
            SessionId::parse(id).map_err(|e| ApiError::bad("id", e.rule))?;
            let sid = crate::commands::resolve_session(s.meta.as_ref(), &s.store, id)
                .await
                .map_err(|e| match e {
                    crate::commands::SessionLookup::Invalid(e) => ApiError::from(e),
                    crate::commands::SessionLookup::Ambiguous(m) => {
                        ApiError::bad("id", m.trim_start_matches("session: ").to_owned())
                    }
                    crate::commands::SessionLookup::Unknown(m) => ApiError::not_found("id", m),
                })?;
            let (v, _, _) =
                crate::commands::session_view(&s.svc, s.meta.as_ref(), &s.store, &sid).await?;
            Ok(json_response(StatusCode::OK, &v))
        }
        (Method::POST, ["api", "v1", "events"]) => {
            let guard = req
                .headers()
                .get(FOLLOW_UP_HEADER)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| !v.trim().is_empty());
            let on_end = query(&req)
                .iter()
                .any(|(k, v)| k == "on" && v == "session-end");
            let bytes = read_body(req).await?;
            events(s, &bytes, guard, on_end).await
        }
        (m, rest) if !allowed(rest).is_empty() => {
            let allow = allowed(rest);
            let mut r = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method",
                format!("{m} is not one of {} for {path}", allow.join(", ")),
            )
            .response();
            if let Ok(v) = HeaderValue::from_str(&allow.join(", ")) {
                r.headers_mut().insert(header::ALLOW, v);
            }
            Ok(r)
        }
        (_, ["api", "v1", ..]) | (_, ["metrics"]) => Err(ApiError::not_found(
            "path",
            format!("no such endpoint: {path} (see /api/v1/openapi.json)"),
        )),
        _ => Err(ApiError::not_found("path", format!("no such page: {path}"))),
    }
}

/// The methods a known path takes (none for an unknown path).
fn allowed(seg: &[&str]) -> Vec<&'static str> {
    match seg {
        [] | ["metrics"] | ["login"] => vec!["GET"],
        ["logout"] => vec!["POST"],
        [
            "api",
            "v1",
            "healthz" | "openapi.json" | "pending" | "runs" | "version",
        ] => vec!["GET"],
        ["api", "v1", "hooks"] => vec!["GET", "POST"],
        ["api", "v1", "hooks", _] => vec!["GET", "PATCH", "DELETE"],
        ["api", "v1", "hooks", _, "enable" | "disable"] => vec!["POST"],
        ["api", "v1", "sessions", _] => vec!["GET"],
        ["api", "v1", "events"] => vec!["POST"],
        _ => Vec::new(),
    }
}

fn login(state: &HttpState, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let q = query(req);
    let t = q
        .iter()
        .find(|(k, _)| k == "token")
        .map_or("", |(_, v)| v.as_str());
    if !use_login(&state.ctx.data_dir.join(LOGIN_DIR), t) {
        warn!("a login with an unknown or used token was refused");
        return respond(
            StatusCode::UNAUTHORIZED,
            "text/html; charset=utf-8",
            crate::page::message_page(
                "This login link is unknown, used or expired. Run `hooks-app open` for a new one.",
            ),
        );
    }
    let (Ok(id), Ok(csrf)) = (random_hex(32), random_hex(16)) else {
        return respond(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "no randomness",
        );
    };
    {
        let mut sessions = lock(&state.sessions);
        let now = std::time::Instant::now();
        sessions.retain(|_, s| s.expires > now);
        while sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => sessions.remove(&k),
                None => break,
            };
        }
        sessions.insert(
            id.clone(),
            PageSession {
                csrf,
                expires: now + SESSION_TTL,
            },
        );
    }
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "logged in");
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/"));
    if let Some(v) = session_cookie(state, Some(&id)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `POST /logout` from the page (its CSRF token in the form): the session ends here and in
/// the browser.
async fn logout(
    state: &HttpState,
    req: Request<Incoming>,
    caller: &Caller,
) -> Response<Full<Bytes>> {
    let Caller::Page { csrf } = caller else {
        return ApiError::not_found("path", "logging out is for the page").response();
    };
    let id = cookie(&req, &state.cookie_name()).map(str::to_owned);
    let origin = origin_ok(&req);
    let form = read_body(req).await.unwrap_or_default();
    let given = String::from_utf8_lossy(&form)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "csrf")
        .map(|(_, v)| crate::page::url_decode(v));
    if !origin || !given.is_some_and(|g| same(g.as_bytes(), csrf.as_bytes())) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            "must be the page's token, sent from the page's own origin",
        )
        .response();
    }
    if let Some(id) = id {
        lock(&state.sessions).remove(&id);
    }
    let mut r = respond(
        StatusCode::OK,
        "text/html; charset=utf-8",
        crate::page::message_page("Logged out. Run `hooks-app open` to log in again."),
    );
    if let Some(v) = session_cookie(state, None) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

fn hook_id(id: &str) -> Result<HookId, ApiError> {
    HookId::parse(id).map_err(|e| ApiError::not_found("id", e.rule))
}

fn run_filter(q: &[(String, String)]) -> Result<RunFilter, ApiError> {
    let mut f = RunFilter::default();
    for (k, v) in q {
        match k.as_str() {
            "hook" => {
                f.hook_id = Some(HookId::parse(v).map_err(|e| ApiError::bad("hook", e.rule))?)
            }
            "session" => {
                f.session_id =
                    Some(SessionId::parse(v).map_err(|e| ApiError::bad("session", e.rule))?)
            }
            "limit" => {
                f.limit = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| (1..=100_000).contains(n))
                        .ok_or_else(|| {
                            ApiError::bad(
                                "limit",
                                format!("must be a whole number from 1 to 100000 (got {v:?})"),
                            )
                        })?,
                )
            }
            other => {
                return Err(ApiError::bad(
                    other,
                    "is not a parameter of /runs (hook, session, limit)",
                ));
            }
        }
    }
    Ok(f)
}

const HOOK_FIELDS: &[&str] = &[
    "name",
    "promptFile",
    "delaySeconds",
    "event",
    "maxContextK",
    "maxCostUsd",
    "enabled",
    "skipCron",
    "skipSubagents",
];

fn check_fields(m: &Map<String, Value>) -> Result<(), ApiError> {
    match m.keys().find(|k| !HOOK_FIELDS.contains(&k.as_str())) {
        Some(k) => Err(ApiError::bad(
            // The field names come from the request; a bounded copy is named.
            &k.chars().take(64).collect::<String>(),
            format!("is not a field of a hook ({})", HOOK_FIELDS.join(", ")),
        )),
        None => Ok(()),
    }
}

fn text<'a>(m: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad(k, "must be a string")),
    }
}

fn flag(m: &Map<String, Value>, k: &str) -> Result<Option<bool>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::bad(k, "must be true or false")),
    }
}

fn number(m: &Map<String, Value>, k: &str) -> Result<Option<String>, ApiError> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(ApiError::bad(k, "must be a number")),
    }
}

fn spec_from(m: &Map<String, Value>) -> Result<HookSpec, ApiError> {
    check_fields(m)?;
    let name = text(m, "name")?.ok_or_else(|| ApiError::bad("name", "is required"))?;
    let pf = text(m, "promptFile")?.ok_or_else(|| ApiError::bad("promptFile", "is required"))?;
    let mut spec = HookSpec::new(name, PromptFile::parse(pf)?)?;
    let patch = patch_from(m)?;
    if let Some(d) = patch.delay {
        spec.delay = d;
    }
    if let Some(e) = patch.event {
        spec.event = e;
    }
    if let Some(c) = patch.max_context {
        spec.max_context = c;
    }
    if let Some(c) = patch.max_cost {
        spec.max_cost = c;
    }
    if let Some(b) = patch.enabled {
        spec.enabled = b;
    }
    if let Some(b) = patch.skip_cron {
        spec.skip_cron = b;
    }
    if let Some(b) = patch.skip_subagents {
        spec.skip_subagents = b;
    }
    Ok(spec)
}

pub fn patch_from(m: &Map<String, Value>) -> Result<HookPatch, ApiError> {
    check_fields(m)?;
    let mut p = HookPatch::default();
    if let Some(n) = text(m, "name")? {
        p.name = Some(validate_name(n)?);
    }
    if let Some(f) = text(m, "promptFile")? {
        p.prompt_file = Some(PromptFile::parse(f)?);
    }
    if let Some(d) = number(m, "delaySeconds")? {
        p.delay = Some(Delay::parse(&d)?);
    }
    if let Some(e) = text(m, "event")? {
        p.event = Some(Event::parse(e)?);
    }
    if let Some(k) = number(m, "maxContextK")? {
        p.max_context = Some(ContextCap::parse(&k)?);
    }
    if let Some(c) = number(m, "maxCostUsd")? {
        p.max_cost = Some(CostCap::parse(&c)?);
    }
    p.enabled = flag(m, "enabled")?;
    p.skip_cron = flag(m, "skipCron")?;
    p.skip_subagents = flag(m, "skipSubagents")?;
    Ok(p)
}

fn report_json(r: &NotifyReport) -> Value {
    match &r.outcome {
        NotifyOutcome::Queued { due_at } => {
            json!({"hookId": r.hook_id.as_str(), "outcome": "queued", "reason": null, "dueAt": stamp::format(*due_at)})
        }
        NotifyOutcome::Skipped(why) => {
            json!({"hookId": r.hook_id.as_str(), "outcome": "skipped", "reason": why.to_string(), "dueAt": null})
        }
    }
}

/// `POST /api/v1/events`: a Claude Code hook input (it has `hook_event_name`), or the fields
/// of `notify`. Answers with `notify --json`'s reports.
async fn events(
    s: &HttpState,
    bytes: &[u8],
    follow_up: bool,
    on_end: bool,
) -> Result<Response<Full<Bytes>>, ApiError> {
    let m = json_object(bytes)?;
    s.metrics.events.fetch_add(1, Ordering::Relaxed);
    let reports = if m.contains_key("hook_event_name") {
        if follow_up {
            // A follow-up's own Stop: this app started that run.
            Vec::new()
        } else {
            let on = on_end.then_some(crate::cli::HookTrigger::SessionEnd);
            let plan = crate::claude_hook::plan(&s.ctx, bytes, on, "body")?;
            match plan {
                None => Vec::new(),
                Some(p) => crate::claude_hook::carry_out(&s.svc, &p).await?.0,
            }
        }
    } else {
        const FIELDS: &[&str] = &["sessionId", "event", "cwd", "transcriptPath", "origin"];
        if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(ApiError::bad(
                &k.chars().take(64).collect::<String>(),
                format!(
                    "is not a field of an event ({}), nor is this a Claude Code hook input (hook_event_name)",
                    FIELDS.join(", ")
                ),
            ));
        }
        let sid =
            text(&m, "sessionId")?.ok_or_else(|| ApiError::bad("sessionId", "is required"))?;
        let ev = NotifyEvent {
            session: SessionId::parse(sid)?,
            event: Event::parse(text(&m, "event")?.unwrap_or("conversation-done"))?,
            update: SessionUpdate {
                cwd: text(&m, "cwd")?.map(str::to_owned),
                transcript_path: text(&m, "transcriptPath")?.map(str::to_owned),
                origin: text(&m, "origin")?.map(Origin::parse).transpose()?,
            },
            subagent: false,
        };
        s.svc.notify(&ev).await?
    };
    for r in &reports {
        match &r.outcome {
            NotifyOutcome::Queued { .. } => {
                s.metrics.queued.fetch_add(1, Ordering::Relaxed);
            }
            NotifyOutcome::Skipped(why) => {
                let reason = skip_label(why);
                *lock(&s.metrics.skipped)
                    .entry(reason.to_owned())
                    .or_default() += 1;
            }
        }
    }
    Ok(json_response(
        StatusCode::OK,
        &Value::Array(reports.iter().map(report_json).collect()),
    ))
}

fn skip_label(why: &hooks_core::decide::SkipReason) -> &'static str {
    use hooks_core::decide::SkipReason as R;
    match why {
        R::Disabled => "disabled",
        R::AlreadyRan { .. } => "already_ran",
        R::CronSession => "cron_session",
        R::Subagent => "subagent",
        R::AlreadyPending => "already_pending",
        R::HookDeleted => "hook_deleted",
    }
}
