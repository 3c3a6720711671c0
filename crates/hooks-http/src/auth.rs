//! Who may call: the API token (`<data-dir>/http.token`), one-time logins and the page's
//! session with its CSRF token, and the checks of a request's origin.
//!
//! The page's session is **not a cookie**: a browser sends a host's cookies to every port
//! of it, so another local user's server on 127.0.0.1 would be sent it. Nor is it a
//! secret the browser keeps: whoever holds the page's port next (while the daemon
//! restarts) holds its origin and all the origin keeps. At login the page makes a key pair
//! whose private half the browser never gives out, and registers the public half with the
//! one-time login; each request is signed by it over a nonce this daemon issued (see
//! [`crate::pagekey`]), after the server proved with the daemon's own key that it is the
//! user's daemon. What the page keeps gives nobody a login anywhere else.

use std::io;
use std::path::Path;

use hooks_platform::files::write_private;

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap};
use axum::response::Response;
use tracing::warn;

use crate::page;
use crate::state::*;

/// The file holding the API token.
pub const TOKEN_FILE: &str = "http.token";

/// The variable an installed `http` hook takes its token from: the hook token, whose one
/// power is to tell of a conversation's events (never the API token).
pub const HOOK_TOKEN_ENV: &str = "HOOKS_APP_HOOK_TOKEN";

/// The file holding the hook token. Claude Code's `http` hook sends it to whatever
/// listens on the hook's port (while the daemon is down, another local user may), so it
/// grants only `POST /api/v1/events` with a Claude Code hook input, checked against the
/// conversation's own transcript.
pub const HOOK_TOKEN_FILE: &str = "hook.token";

/// How long a one-time login token lasts.
pub const LOGIN_TTL_SECS: u64 = 300;

/// The header an `http` hook carries the follow-up guard in.
pub const FOLLOW_UP_HEADER: &str = "x-hooks-app-follow-up";

/// Random bytes as hex, from the kernel.
pub fn random_hex(bytes: usize) -> io::Result<String> {
    use std::io::Read;
    let mut b = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| io::Error::new(e.kind(), format!("could not read /dev/urandom: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The API token, made (0600) when there is none yet. An error names the file.
pub fn token(data_dir: &Path) -> Result<String, String> {
    token_in(data_dir, TOKEN_FILE)
}

/// The hook token ([`HOOK_TOKEN_FILE`]), made (0600) when there is none yet.
pub fn hook_token(data_dir: &Path) -> Result<String, String> {
    token_in(data_dir, HOOK_TOKEN_FILE)
}

fn token_in(data_dir: &Path, file: &str) -> Result<String, String> {
    let p = data_dir.join(file);
    match hooks_platform::read_regular(&p, hooks_platform::ReadLimit::bytes(4096))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("could not read {}: {e}", p.display())),
    }
    let t = random_hex(32).map_err(|e| e.to_string())?;
    write_private(&p, &format!("{t}\n"))
        .map_err(|e| format!("could not write {}: {e}", p.display()))?;
    Ok(t)
}

/// A token as it is kept at rest: its SHA-256, so a file name or a copy of the folder
/// gives nobody a login.
pub fn token_hash(t: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(t.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A one-time login token for the page, good for [`LOGIN_TTL_SECS`]. Only its hash is
/// written down.
pub fn one_time_login(data_dir: &Path) -> Result<String, String> {
    let dir = data_dir.join(LOGIN_DIR);
    let t = random_hex(24).map_err(|e| e.to_string())?;
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        + LOGIN_TTL_SECS;
    let p = dir.join(token_hash(&t));
    write_private(&p, &format!("{until}\n"))
        .map_err(|e| format!("could not write {}: {e}", p.display()))?;
    Ok(t)
}

/// Takes a one-time login token: true once, if it exists and has not expired.
pub fn use_login(dir: &Path, t: &str) -> bool {
    login_waits(dir, t) && {
        // Whoever removes it used it: two requests with one token, one login.
        std::fs::remove_file(dir.join(token_hash(t))).is_ok()
    }
}

/// Whether a one-time login token exists and has not expired (it stays unused).
fn login_waits(dir: &Path, t: &str) -> bool {
    if t.is_empty() || t.len() > 128 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let p = dir.join(token_hash(t));
    let Ok(text) = hooks_platform::read_regular(&p, hooks_platform::ReadLimit::bytes(4096))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(u64::MAX);
    text.trim().parse::<u64>().is_ok_and(|until| now <= until)
}

/// The scheme of the page's own `Authorization` header:
/// `Page <session id> <nonce> <signature>`.
pub const PAGE_SCHEME: &str = "Page ";

/// What a request of the page carries: its session id, the nonce it was given and its
/// signature over both.
pub struct PageProof<'a> {
    pub id: &'a str,
    pub nonce: &'a str,
    pub sig: &'a str,
}

/// The page's proof a request carries, if it carries one whole.
pub fn page_proof(headers: &HeaderMap) -> Option<PageProof<'_>> {
    let v = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix(PAGE_SCHEME))?;
    let mut parts = v.split_ascii_whitespace();
    let (id, nonce, sig) = (parts.next()?, parts.next()?, parts.next()?);
    parts
        .next()
        .is_none()
        .then_some(PageProof { id, nonce, sig })
}

/// The page's session id a request carries, if it carries a whole proof.
pub fn page_session(headers: &HeaderMap) -> Option<&str> {
    page_proof(headers).map(|p| p.id)
}

pub fn authenticate(state: &HttpState, headers: &HeaderMap) -> Option<Caller> {
    let caller = authenticate_inner(state, headers);
    // A session has its lifetime renewed on each use; its kept file now and then.
    if matches!(caller, Some(Caller::Page { .. }))
        && let Some(c) = page_session(headers)
        && let Some(s) = lock(&state.sessions).get_mut(c)
    {
        s.expires = std::time::Instant::now() + SESSION_TTL;
        let until = unix_now() + SESSION_TTL.as_secs();
        if until > s.kept_until + RENEW_KEPT_AFTER {
            s.kept_until = until;
            keep_session(&state.session_dir, c, s, until);
        }
    }
    caller
}

/// How far a session's lapse may move before its kept file is rewritten.
const RENEW_KEPT_AFTER: u64 = 600;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes a session's file (best effort: a session not kept lasts as long as the daemon).
fn keep_session(dir: &Path, id: &str, s: &PageSession, until: u64) {
    let p = dir.join(token_hash(id));
    let key = crate::pagekey::hex(&s.key);
    if let Err(e) = write_private(&p, &format!("{} {until} {key}\n", s.csrf)) {
        warn!(error = %e, "could not keep the page's session: it lasts while this daemon does");
    }
}

/// The session kept for `id` by an earlier daemon, if it has not lapsed.
fn kept_session(dir: &Path, id: &str) -> Option<PageSession> {
    if id.len() > 128 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let text = hooks_platform::read_regular(
        &dir.join(token_hash(id)),
        hooks_platform::ReadLimit::bytes(4096),
    )
    .ok()?;
    let text = String::from_utf8(text).ok()?;
    // A session kept before logins had keys has two fields, and is no login now.
    let mut fields = text.split_ascii_whitespace();
    let (csrf, until, key) = (fields.next()?, fields.next()?, fields.next()?);
    let key = crate::pagekey::page_public_key(key).ok()?;
    let until: u64 = until.parse().ok()?;
    let left = until.checked_sub(unix_now()).filter(|l| *l > 0)?;
    Some(PageSession {
        key,
        csrf: csrf.to_owned(),
        expires: std::time::Instant::now() + std::time::Duration::from_secs(left),
        kept_until: until,
    })
}

/// Removes the kept sessions that lapsed, and the oldest beyond [`MAX_SESSIONS`].
fn prune_kept(dir: &Path) {
    let now = unix_now();
    let mut kept: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .map(|p| {
            let until = hooks_platform::read_regular(&p, hooks_platform::ReadLimit::bytes(4096))
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| {
                    t.split_ascii_whitespace()
                        .nth(1)
                        .and_then(|u| u.parse().ok())
                })
                .unwrap_or(0);
            (until, p)
        })
        .collect();
    kept.sort();
    let over = kept.len().saturating_sub(MAX_SESSIONS);
    for (i, (until, p)) in kept.iter().enumerate() {
        if *until <= now || i < over {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn authenticate_inner(state: &HttpState, headers: &HeaderMap) -> Option<Caller> {
    let Some(token) = &state.token else {
        return Some(Caller::Token);
    };
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some(given) = v.strip_prefix("Bearer ")
    {
        if same(given.trim().as_bytes(), token.as_bytes()) {
            return Some(Caller::Token);
        }
        if state
            .hook_token
            .as_ref()
            .is_some_and(|h| same(given.trim().as_bytes(), h.as_bytes()))
        {
            return Some(Caller::Hook);
        }
    }
    let proof = page_proof(headers)?;
    let c = proof.id;
    // The nonce goes back first: tried once, right or wrong.
    if !state.page_keys.take_nonce(proof.nonce) {
        return None;
    }
    let signed = |s: &PageSession| {
        crate::pagekey::signed_by(
            &s.key,
            &crate::pagekey::request_message(c, proof.nonce),
            proof.sig,
        )
    };
    let mut sessions = lock(&state.sessions);
    let now = std::time::Instant::now();
    sessions.retain(|_, s| s.expires > now);
    if let Some(s) = sessions
        .iter()
        .find(|(k, _)| same(k.as_bytes(), c.as_bytes()))
        .map(|(_, s)| s)
    {
        return signed(s).then(|| Caller::Page {
            csrf: s.csrf.clone(),
        });
    }
    // Made by an earlier daemon (this one restarted since): its kept file says.
    let kept = kept_session(&state.session_dir, c).filter(|s| signed(s))?;
    let caller = Caller::Page {
        csrf: kept.csrf.clone(),
    };
    if sessions.len() < MAX_SESSIONS {
        sessions.insert(c.to_owned(), kept);
    }
    Some(caller)
}

/// A state-changing request from the page must carry its CSRF token (header or form field)
/// and come from the page's own origin.
pub fn csrf_ok(headers: &HeaderMap, csrf: &str, form_token: Option<&str>) -> bool {
    let given = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .or(form_token);
    given.is_some_and(|g| same(g.as_bytes(), csrf.as_bytes())) && origin_ok(headers)
}

/// `GET /login?token=…`: the page that logs in. Its script makes the page's key pair in
/// the browser (the private half never leaves it) and sends the token with the public
/// half to `POST /login`; the token is used there, not here.
pub async fn login(State(state): State<Arc<HttpState>>, q: Params) -> Response {
    let t = q.get("token").unwrap_or("");
    if !login_waits(&state.login_dir, t) {
        warn!("a login with an unknown or used token was refused");
        return unknown_login();
    }
    respond(
        StatusCode::OK,
        "text/html; charset=utf-8",
        page::login_page(),
    )
}

fn unknown_login() -> Response {
    respond(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        page::message_page(
            "This login link is unknown, used or expired. Run `hooks-app open` for a new one.",
        ),
    )
}

/// `POST /login` (`token`, `key` as a form): the one-time login becomes a session bound
/// to the page's public key. The answer names the session and the daemon's public key,
/// which the page keeps to tell this daemon from whoever holds its port later.
pub async fn login_post(State(state): State<Arc<HttpState>>, Body(form): Body) -> Response {
    let fields = crate::state::form_fields(&form);
    let field = |k: &str| {
        fields
            .iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let key = match crate::pagekey::page_public_key(field("key")) {
        Ok(k) => k,
        Err(rule) => return ApiError::new(StatusCode::BAD_REQUEST, "key", rule).response(),
    };
    let daemon = match state.page_keys.public_hex() {
        Ok(d) => d,
        Err(e) => return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "page.key", e).response(),
    };
    if !use_login(&state.login_dir, field("token")) {
        warn!("a login with an unknown or used token was refused");
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "token",
            "must be an unused one-time login from `hooks-app open`, within 5 minutes",
        )
        .response();
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
        let until = unix_now() + SESSION_TTL.as_secs();
        let s = PageSession {
            key,
            csrf,
            expires: now + SESSION_TTL,
            kept_until: until,
        };
        keep_session(&state.session_dir, &id, &s, until);
        sessions.insert(id.clone(), s);
    }
    prune_kept(&state.session_dir);
    json_response(
        StatusCode::OK,
        &serde_json::json!({ "session": id, "daemon": daemon }),
    )
}

/// `GET /page/challenge?c=…`: the daemon's proof that it is the user's daemon (its
/// signature over the page's challenge and a fresh nonce), and the nonce the page's next
/// request signs.
pub async fn challenge(State(state): State<Arc<HttpState>>, q: Params) -> Response {
    match state.page_keys.prove(q.get("c").unwrap_or("")) {
        Ok(p) => json_response(
            StatusCode::OK,
            &serde_json::json!({ "nonce": p.nonce, "proof": p.proof }),
        ),
        Err(rule) => ApiError::new(StatusCode::BAD_REQUEST, "c", rule).response(),
    }
}

/// `POST /logout` from the page (its CSRF token in the form): the session ends here, and
/// the page's script forgets it in the browser.
pub async fn logout(
    State(state): State<Arc<HttpState>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Body(form): Body,
) -> Response {
    let Caller::Page { csrf } = caller else {
        return ApiError::not_found("path", "logging out is for the page").response();
    };
    let id = page_session(&headers).map(str::to_owned);
    let origin = origin_ok(&headers);
    let given = crate::state::form_fields(&form)
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
        let _ = std::fs::remove_file(state.session_dir.join(token_hash(&id)));
    }
    respond(
        StatusCode::OK,
        "text/html; charset=utf-8",
        page::message_page("Logged out. Run `hooks-app open` to log in again."),
    )
}
