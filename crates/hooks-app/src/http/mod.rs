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

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hooks_core::service::{NotifyEvent, NotifyOutcome, NotifyReport};
use hooks_core::*;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use crate::AppError;

mod page;
mod state;

pub use state::{
    ApiError, Caller, HttpState, Metrics, SESSION_TTL, json_response, read_body, respond,
};
use state::{MAX_SESSIONS, PageSession, lock, read_timeout, same};

/// The variable an installed `http` hook takes the token from.
pub const TOKEN_ENV: &str = "HOOKS_APP_HTTP_TOKEN";
/// The file holding the API token.
pub const TOKEN_FILE: &str = "http.token";
/// Where one-time login tokens wait to be used.
pub const LOGIN_DIR: &str = "http-logins";
/// How long a one-time login token lasts.
pub const LOGIN_TTL_SECS: u64 = 300;
/// The header an `http` hook carries the follow-up guard in.
pub const FOLLOW_UP_HEADER: &str = "x-hooks-app-follow-up";

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
    crate::fsutil::write_private(&p, &format!("{t}\n"))?;
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
    crate::fsutil::write_private(&dir.join(token_hash(&t)), &format!("{until}\n"))?;
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

/// Binds the address (so a bad one fails before anything starts) and says where it is.
pub async fn bind(o: &HttpOptions, data_dir: &Path) -> Result<tokio::net::TcpListener, AppError> {
    tokio::net::TcpListener::bind(o.addr).await.map_err(|e| {
        let holder = if e.kind() == std::io::ErrorKind::AddrInUse {
            let ours = crate::daemon::ondemand::running(data_dir)
                .into_iter()
                .find(|d| {
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

fn authenticate(state: &HttpState, req: &Request<Incoming>) -> Option<Caller> {
    let caller = authenticate_inner(state, req);
    // A session's cookie has its lifetime renewed on each use.
    if matches!(caller, Some(Caller::Page { .. }))
        && let Some(c) = state::cookie_value(req.headers(), &state.cookie_name())
        && let Some(s) = lock(&state.sessions).get_mut(&c)
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
    let c = state::cookie_value(req.headers(), &state.cookie_name())?;
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
    let age = match id {
        Some(_) => cookie::time::Duration::seconds(SESSION_TTL.as_secs() as i64),
        None => cookie::time::Duration::ZERO,
    };
    let c = cookie::Cookie::build((state.cookie_name(), id.unwrap_or("").to_owned()))
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .path("/")
        .max_age(age)
        .build();
    HeaderValue::from_str(&c.to_string()).ok()
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

fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad("body", "must be a JSON object")),
        Err(e) => Err(ApiError::bad("body", format!("must be JSON: {e}"))),
    }
}

fn query(req: &Request<Incoming>) -> Vec<(String, String)> {
    state::form_fields(req.uri().query().unwrap_or("").as_bytes())
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
        crate::compose::StoreChoice::Json { dir, .. } => Some(dir),
        crate::compose::StoreChoice::Postgres { .. } => None,
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
            return Ok(respond(StatusCode::OK, "application/json", page::OPENAPI));
        }
        (&Method::GET, ["login"]) => return Ok(login(state, &req)),
        (&Method::GET, ["favicon.ico"]) => {
            return Ok(respond(StatusCode::NOT_FOUND, "text/plain", "none"));
        }
        _ => {}
    }
    let Some(caller) = authenticate(state, &req) else {
        if method == Method::GET && seg.is_empty() {
            return Ok(page::login_needed());
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
            let id = state::cookie_value(req.headers(), &s.cookie_name());
            let mut r = page::page(s, &caller, &query(&req), None).await?;
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
            page::form(s, &caller, req, &rest).await
        }
        (Method::GET, ["metrics"]) => Ok(respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            page::metrics(s).await?,
        )),
        (Method::GET, ["api", "v1", "version"]) => Ok(json_response(
            StatusCode::OK,
            &json!({"version": page::version(s).await?}),
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
        (Method::POST, ["api", "v1", "hooks", id, "run"]) => {
            let hook = hook_id(id)?;
            let m = json_object(&read_body(req).await?)?;
            if let Some(k) = m.keys().find(|k| *k != "session" && *k != "force") {
                return Err(ApiError::bad(k, "is not a field of a run (session, force)"));
            }
            let session =
                text(&m, "session")?.ok_or_else(|| ApiError::bad("session", "is required"))?;
            SessionId::parse(session).map_err(|e| ApiError::bad("session", e.rule))?;
            let sid = crate::sessions::resolve_session(s.meta.as_ref(), &s.store, session)
                .await
                .map_err(|e| match e {
                    crate::sessions::SessionLookup::Unknown(m) => ApiError::not_found("session", m),
                    other => ApiError::bad("session", crate::AppError::from(other).message),
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
        (Method::GET, ["api", "v1", "pause"]) => Ok(json_response(
            StatusCode::OK,
            &crate::shapes::pause(s.svc.paused().await?.as_ref()),
        )),
        (Method::PUT, ["api", "v1", "pause"]) => {
            let bytes = read_body(req).await?;
            let m = if bytes.iter().all(u8::is_ascii_whitespace) {
                Map::new()
            } else {
                json_object(&bytes)?
            };
            if let Some(k) = m.keys().find(|k| *k != "for") {
                return Err(ApiError::bad(k, "is not a field of a pause (only for)"));
            }
            let span = text(&m, "for")?
                .map(crate::options::parse_span)
                .transpose()?;
            let p = s.svc.pause(span, "the HTTP API").await?;
            Ok(json_response(
                StatusCode::OK,
                &crate::shapes::pause(Some(&p)),
            ))
        }
        (Method::DELETE, ["api", "v1", "pause"]) => {
            let woken = s.svc.unpause().await?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"paused": false, "woken": woken}),
            ))
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
            let sid = crate::sessions::resolve_session(s.meta.as_ref(), &s.store, id)
                .await
                .map_err(|e| match e {
                    crate::sessions::SessionLookup::Invalid(e) => ApiError::from(e),
                    crate::sessions::SessionLookup::Ambiguous(m) => {
                        ApiError::bad("id", m.trim_start_matches("session: ").to_owned())
                    }
                    crate::sessions::SessionLookup::Unknown(m) => ApiError::not_found("id", m),
                })?;
            let (v, _, _) =
                crate::sessions::session_view(&s.svc, s.meta.as_ref(), &s.store, &sid).await?;
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
        ["api", "v1", "hooks", _, "enable" | "disable" | "run"] => vec!["POST"],
        ["api", "v1", "sessions", _] => vec!["GET"],
        ["api", "v1", "events"] => vec!["POST"],
        ["api", "v1", "pause"] => vec!["GET", "PUT", "DELETE"],
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
            page::message_page(
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
    let id = state::cookie_value(req.headers(), &state.cookie_name());
    let origin = origin_ok(&req);
    let form = read_body(req).await.unwrap_or_default();
    let given = state::form_fields(&form)
        .into_iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v);
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
        page::message_page("Logged out. Run `hooks-app open` to log in again."),
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
    "maxLatenessSeconds",
    "errors",
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
    spec.apply(&patch_from(m)?);
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
    if let Some(l) = number(m, "maxLatenessSeconds")? {
        p.max_lateness = Some(MaxLateness::parse(&l)?);
    }
    if let Some(c) = number(m, "maxCostUsd")? {
        p.max_cost = Some(CostCap::parse(&c)?);
    }
    match m.get("errors") {
        None => {}
        Some(Value::Array(items)) => {
            let names = items
                .iter()
                .map(|i| {
                    i.as_str()
                        .ok_or_else(|| ApiError::bad("errors", "must be a list of failure names"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            p.errors = Some(FailureKinds::new(&names)?);
        }
        Some(_) => return Err(ApiError::bad("errors", "must be a list of failure names")),
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
            let on = on_end.then_some(crate::options::HookTrigger::SessionEnd);
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
            failure: None,
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
        R::NotItsError(_) => "not_its_error",
    }
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

    use super::{HOOK_FIELDS, allowed, segments};

    fn doc() -> Value {
        serde_json::from_str(super::page::OPENAPI).expect("the document is JSON")
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

    #[test]
    fn every_documented_path_has_exactly_the_routers_methods_and_back() {
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
            let mut served: Vec<String> = allowed(&segments(&concrete))
                .into_iter()
                .map(str::to_owned)
                .collect();
            served.sort();
            assert_eq!(doc_methods, served, "{path}");
        }
        // Every route of the API the router serves is documented.
        for sample in [
            "/api/v1/healthz",
            "/api/v1/openapi.json",
            "/api/v1/pending",
            "/api/v1/runs",
            "/api/v1/version",
            "/api/v1/hooks",
            "/api/v1/hooks/x",
            "/api/v1/hooks/x/enable",
            "/api/v1/hooks/x/disable",
            "/api/v1/hooks/x/run",
            "/api/v1/sessions/x",
            "/api/v1/events",
            "/api/v1/pause",
            "/metrics",
        ] {
            assert!(!allowed(&segments(sample)).is_empty(), "{sample} is routed");
            let templated = sample.replace("/x", "/{id}");
            assert!(paths.contains_key(&templated), "{templated} is documented");
        }
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
            undocumented("Hook", &crate::shapes::hook(&hook)),
            Vec::<String>::new()
        );
        let entry = PendingEntry {
            hook_id: continue_after_limit_id(),
            session_id: SessionId::parse("s1").unwrap(),
            due_at: DueAt::At(t("2026-12-01T01:00:00+0000")),
            queued_at: Some(t("2026-12-01T00:00:00+0000")),
            retries: 1,
            claim: Some(Claim {
                owner: "me".into(),
                expires_at: t("2026-12-01T02:00:00+0000"),
            }),
            waiting: Some(Waiting {
                reason: "conversation open in claude".into(),
                since: t("2026-12-01T00:30:00+0000"),
                open: true,
            }),
            error: Some(FailureKind::RateLimit),
        };
        assert_eq!(
            undocumented("Pending", &crate::shapes::pending(&entry)),
            Vec::<String>::new()
        );
        let run = RunRecord {
            run_id: Some("me#1".into()),
            hook_id: post_task_id(),
            session_id: SessionId::parse("s1").unwrap(),
            owner: Some("me".into()),
            process: Some(ProcessRef { pid: 42, start: 7 }),
            started_at: t("2026-12-01T00:00:00+0000"),
            finished_at: Some(t("2026-12-01T00:01:00+0000")),
            outcome: RunOutcome {
                status: Some(Status::Ok),
                exit_code: Some(0),
                completed: Some(true),
                num_turns: Some(1),
                cost_usd: Some(0.01),
                usage: Some(Usage::default()),
                duration_ms: Some(900),
                session_id: Some("s1".into()),
                result_text: Some("COMPLETED".into()),
                api_error_status: None,
            },
            estimated_cost_usd: Some(0.02),
            model: Some("claude-x".into()),
        };
        assert_eq!(
            undocumented("Run", &crate::shapes::run(&run)),
            Vec::<String>::new()
        );
        let pause = Pause {
            since: t("2026-12-01T00:00:00+0000"),
            until: Some(t("2026-12-01T01:00:00+0000")),
            by: "me@here".into(),
        };
        assert_eq!(
            undocumented("Pause", &crate::shapes::pause(Some(&pause))),
            Vec::<String>::new()
        );
        // What a hook takes, in the API and in the document alike.
        let fields: BTreeSet<String> = HOOK_FIELDS.iter().map(|f| (*f).to_owned()).collect();
        assert_eq!(properties("HookSpec"), fields);
        assert_eq!(properties("HookPatch"), fields);
    }
}
