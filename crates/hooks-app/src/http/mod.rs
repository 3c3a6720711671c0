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
use std::time::Duration;

use hooks_core::*;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use crate::AppError;

mod auth;
mod chart;
mod fields;
mod forms;
mod metrics;
mod page;
mod routes;
mod state;

use auth::*;
pub use auth::{LOGIN_TTL_SECS, TOKEN_ENV, TOKEN_FILE, one_time_login, token};
use fields::*;
use routes::*;
use state::origin_ok;

pub use state::{ApiError, Caller, HttpState, Metrics, json_response, read_body, respond};
use state::{lock, read_timeout};

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
            forms::form(s, &caller, req, &rest).await
        }
        (Method::GET, ["metrics"]) => Ok(respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics::metrics(s).await?,
        )),
        (Method::GET, ["api", "v1", "version"]) => Ok(json_response(
            StatusCode::OK,
            &json!({"version": metrics::version(s).await?}),
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
