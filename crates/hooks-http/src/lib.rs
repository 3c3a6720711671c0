//! `serve --http ADDR`: the daemon's JSON API under `/api/v1` (the CLI's use cases and
//! `--json` shapes), Claude Code's `http` hooks at `POST /api/v1/events`, Prometheus
//! metrics at `/metrics` and a web page at `/`, in the daemon's own process.
//!
//! Auth, as Jupyter does it: a bearer token (`<data-dir>/http.token`, made on first use) is
//! required even on loopback, where other users of the machine can connect too. `hooks-app
//! open` hands out a one-time login URL; using it binds a session to a key the page makes
//! in the browser (no cookie: a browser sends cookies to every port of a host), and the
//! page's script signs each request with it over a nonce the daemon issued, once the
//! daemon proved itself with its own key (`Authorization: Page <id> <nonce> <sig>`). A
//! page request that changes anything must also carry the session's CSRF token and come
//! from the page's own origin. Tokens are compared in constant time and never logged.
//! Bodies over 1 MiB are refused; a client that is slow to send its request is cut off.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use tower::ServiceExt as _;
use tracing::{info, warn};

mod auth;
mod backend;
mod chart;
mod fields;
mod forms;
mod metrics;
mod page;
mod pagekey;
mod routes;
mod state;
#[cfg(test)]
mod tests;

use auth::*;
pub use auth::{
    HOOK_TOKEN_ENV, HOOK_TOKEN_FILE, LOGIN_TTL_SECS, TOKEN_FILE, hook_token, one_time_login, token,
};
use state::origin_ok;

pub use backend::Backend;
pub use fields::skip_label;
use state::read_timeout;
pub use state::{
    ApiError, Caller, HttpConfig, HttpState, Metrics, json_response, read_body, respond,
};

/// How the listener was asked for.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub no_auth: bool,
    pub allow_insecure: bool,
}

/// Checks the address against the auth options: `--http-no-auth` only on loopback; a
/// non-loopback address only with `--http-allow-insecure` (TLS belongs in front of it).
/// The error is the rule broken, for the caller to report as bad usage.
pub fn check_options(o: &HttpOptions) -> Result<(), String> {
    let lo = o.addr.ip().is_loopback();
    if o.no_auth && !lo {
        return Err(format!(
            "http: --http-no-auth is allowed only on a loopback address (got {})",
            o.addr
        ));
    }
    if !lo && !o.allow_insecure {
        return Err(format!(
            "http: {} is not a loopback address: put TLS in front of it (a reverse proxy) and pass --http-allow-insecure",
            o.addr
        ));
    }
    Ok(())
}

/// The most connections served at once; one more is closed at once. Well under the
/// default 1,024 open files, so the daemon keeps files for its store and its runs.
pub const MAX_CONNECTIONS: usize = 256;

/// How long writing a response may stall (a client that sends and never reads).
fn write_timeout() -> Duration {
    read_timeout()
}

/// The whole application: the routes behind the guard (host, auth, CSRF) and the
/// answer's finishing (the API's 405, the security headers).
pub fn app(state: Arc<HttpState>) -> axum::Router {
    let routed = routes::router()
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state);
    // Around the whole router, not each route: a route's 405 gets its `Allow` header from
    // the route itself, after any layer on the route has run.
    axum::Router::new()
        .fallback_service(routed)
        .layer(middleware::from_fn(finish))
}

/// A connection being served: when it began, whether its caller has shown a credential,
/// and how to end it.
struct Live {
    started: std::time::Instant,
    trusted: Arc<std::sync::atomic::AtomicBool>,
    /// It has sent a request (a silent one only holds a place).
    spoke: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::AbortHandle,
}

/// Whether a connection's caller has shown a credential (set by the guard).
#[derive(Clone)]
pub(crate) struct Trust(Arc<std::sync::atomic::AtomicBool>);

/// Makes room for one more connection: a finished one's, else the oldest anonymous one
/// (its caller showed no credential) is ended, a silent one (no request yet) before one
/// that asked for a public path (`/api/v1/healthz` on a kept-alive connection). Any local
/// user can open connections, so a flood of anonymous ones takes the places of other
/// anonymous ones, never those of the user's own (a token, the page, the hook); an
/// anonymous request that is refused ends its connection. `false` when no place can be
/// made: the newcomer is closed at once, as before.
fn make_room(live: &mut Vec<Live>) -> bool {
    live.retain(|c| !c.task.is_finished());
    if live.len() < MAX_CONNECTIONS {
        return true;
    }
    let oldest = live
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.trusted.load(std::sync::atomic::Ordering::SeqCst))
        .min_by_key(|(_, c)| (c.spoke.load(std::sync::atomic::Ordering::SeqCst), c.started))
        .map(|(i, _)| i);
    match oldest {
        Some(i) => {
            live.swap_remove(i).task.abort();
            true
        }
        None => false,
    }
}

/// Serves connections until the process ends: at most [`MAX_CONNECTIONS`] at once (past
/// that, the oldest anonymous one makes room: `make_room`), each cut off when its head
/// is slow to arrive (also while idle between requests), its body slow (see
/// [`state::read_body`]) or its answer not read.
pub fn spawn(listener: tokio::net::TcpListener, state: Arc<HttpState>) {
    let mut live: Vec<Live> = Vec::new();
    let app = app(state.clone());
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
            if !make_room(&mut live) {
                // Closed at once: the client learns now, rather than waiting on a queue.
                drop(tcp);
                continue;
            }
            let trusted = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let trust = Trust(trusted.clone());
            let spoke = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let spoke_in = spoke.clone();
            let (state, app) = (state.clone(), app.clone());
            let task = tokio::spawn(async move {
                let mut io = tokio_io_timeout::TimeoutStream::new(tcp);
                io.set_write_timeout(Some(write_timeout()));
                let io = hyper_util::rt::TokioIo::new(Box::pin(io));
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let (state, app) = (state.clone(), app.clone());
                        let mut req = req;
                        spoke_in.store(true, std::sync::atomic::Ordering::SeqCst);
                        req.extensions_mut().insert(Peer(peer));
                        req.extensions_mut().insert(trust.clone());
                        async move {
                            let path = req.uri().path().to_owned();
                            let method = req.method().clone();
                            let started = std::time::Instant::now();
                            let mut r = match app.oneshot(req.map(axum::body::Body::new)).await {
                                Ok(r) => r,
                                Err(never) => match never {},
                            };
                            // A caller refused keeps no place: the connection ends here.
                            if refused(r.status()) {
                                r.headers_mut()
                                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                            }
                            // Use keeps an on-demand daemon: a caller the server let in, not
                            // one it refused (any local user can knock), nor a health probe.
                            if !path.ends_with("/healthz") && !refused(r.status()) {
                                *state::lock(&state.metrics.last_request) = Some(started);
                            }
                            if r.status().is_server_error()
                                || r.status() == StatusCode::UNAUTHORIZED
                            {
                                // Never the request's headers or body: a token could be in them.
                                info!(%peer, %method, path, status = r.status().as_u16(), ms = started.elapsed().as_millis() as u64, "http");
                            }
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    },
                );
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(read_timeout())
                    .max_buf_size(64 * 1024)
                    .serve_connection(io, svc);
                let _ = conn.await;
            });
            live.push(Live {
                started: std::time::Instant::now(),
                trusted,
                spoke,
                task: task.abort_handle(),
            });
        }
    });
}

/// On the way out of every answer: the router's bare 405 becomes the API's error, and the
/// security headers are set.
async fn finish(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let mut r = next.run(req).await;
    if r.status() == StatusCode::METHOD_NOT_ALLOWED {
        r = routes::method_not_allowed(method.as_str(), &path, r);
    }
    state::security_headers(r.headers_mut());
    r
}

/// Paths anyone may ask for: the health check, the API's description, the login and
/// the daemon's proof to the page.
const PUBLIC: &[&str] = &[
    "/api/v1/healthz",
    "/api/v1/openapi.json",
    "/login",
    "/page/challenge",
    "/favicon.ico",
];

/// Before any route: the `Host` must name this server; then, but for [`PUBLIC`] paths,
/// the caller must be known (token or page session), a write without a token must be JSON
/// from this origin, and the page's writes must carry its CSRF token (its forms and logout
/// check theirs in the form). Who called goes on in the request's extensions.
async fn guard(State(state): State<Arc<HttpState>>, mut req: Request, next: Next) -> Response {
    match admit(&state, &req) {
        Err(r) => r,
        Ok(None) => next.run(req).await,
        Ok(Some(caller)) => {
            // A connection that has shown a credential keeps its place in a flood (without a
            // token every caller is let in, and none is known).
            if state.token.is_some()
                && let Some(Trust(t)) = req.extensions().get::<Trust>()
            {
                t.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
    }
}

// The refusal is the answer itself, sent at once: boxing it would buy nothing.
#[allow(clippy::result_large_err)]
fn admit(state: &HttpState, req: &Request) -> Result<Option<Caller>, Response> {
    let path = req.uri().path();
    let method = req.method();
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !state.host_ok(host) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Host",
            format!(
                "must name this server ({} or localhost:{})",
                state.addr,
                state.addr.port()
            ),
        )
        .response());
    }
    if PUBLIC.contains(&path) {
        return Ok(None);
    }
    let Some(caller) = authenticate(state, headers) else {
        if method == Method::GET && path == "/" {
            return Err(page::login_needed());
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
        return Err(r);
    };
    // The hook token tells of a conversation's events and may do nothing else.
    if caller == Caller::Hook && !(method == Method::POST && path == "/api/v1/events") {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Authorization",
            "the hook token only tells of a conversation's events (POST /api/v1/events); use the API token",
        )
        .response());
    }
    let changes = !matches!(*method, Method::GET | Method::HEAD);
    // Without a token, nothing but the connection itself tells another local user from
    // the user: a change must come from a process of the user's own (its socket's owner,
    // as the platform tells it; where it cannot tell, no change is taken).
    if changes && state.token.is_none() {
        let peer = req.extensions().get::<Peer>().map(|p| p.0);
        let own = peer
            .and_then(|p| hooks_platform::net::peer_uid(p, state.addr))
            .is_some_and(|uid| uid == hooks_platform::account::uid());
        if !own {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Authorization",
                "without a token (--http-no-auth) only your own processes may change anything; other users of this machine may only read",
            )
            .response());
        }
    }
    // Without a token, nothing tells a web page's request from the user's: a write must be
    // one no page can send without asking first (JSON), from this server's own origin.
    if changes && state.token.is_none() {
        let json = headers
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
            )
            .response());
        }
        if !origin_ok(headers) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Origin",
                "must be this server's own origin",
            )
            .response());
        }
    }
    // The page posts forms with the token in a field; the API sends it as a header.
    let own_check = path == "/logout" || path.starts_with("/ui/");
    if changes
        && !own_check
        && let Caller::Page { csrf } = &caller
        && !csrf_ok(headers, csrf, None)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "X-CSRF-Token",
            "must be the page's token, sent from the page's own origin",
        )
        .response());
    }
    Ok(Some(caller))
}

/// The client's address of the connection a request came on.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// An answer that let the caller in to nothing: no token, a wrong one, a foreign `Host` or
/// `Origin`.
fn refused(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::MISDIRECTED_REQUEST
    )
}
