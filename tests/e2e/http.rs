//! `serve --http` over real HTTP on 127.0.0.1: the API and its errors, auth on and off, the
//! page's login and CSRF checks, `/metrics` read by Prometheus' own parser, slow and
//! oversized requests, and the real claude CLI's `http` hook.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hooks_testkit::{claude_bin, wait_until};
use serde_json::{Value, json};

use crate::support::*;

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends raw bytes and reads the response until the server closes.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(bytes).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    parse(&out)
}

fn parse(out: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Resp {
        status,
        headers,
        body: body.to_owned(),
    }
}

pub fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Resp {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    raw(addr, req.as_bytes())
}

/// Where the daemon `pid` registered itself, with the URL it serves HTTP at.
pub fn address_file(app: &App, pid: u32) -> std::path::PathBuf {
    app.data_dir().join(format!("daemons/{pid}.json"))
}

/// A daemon serving HTTP on a free port of 127.0.0.1, and its address and token.
pub struct Served {
    pub child: Child,
    pub addr: SocketAddr,
    pub token: String,
}

impl Served {
    pub fn start(app: &App, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(app, "127.0.0.1:0", extra, env)
    }

    /// A daemon serving HTTP at `http` (an address such as `127.0.0.1:PORT`).
    pub fn start_at(app: &App, http: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = vec!["serve", "--http", http, "--quiet-period", "0"];
        args.extend_from_slice(extra);
        let mut cmd = app.cmd(&args);
        cmd.envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("serve");
        let addr_file = address_file(app, child.id());
        assert!(
            wait_until(30, || addr_file.exists()),
            "the daemon said where it listens"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&addr_file).unwrap()).unwrap();
        let addr = v["http"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let token = std::fs::read_to_string(app.data_dir().join("http.token"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        Self { child, addr, token }
    }

    pub fn auth(&self) -> String {
        format!("Bearer {}", self.token)
    }

    pub fn get(&self, path: &str) -> Resp {
        call(
            self.addr,
            "GET",
            path,
            &[("Authorization", &self.auth())],
            None,
        )
    }

    pub fn send(&self, method: &str, path: &str, body: &str) -> Resp {
        call(
            self.addr,
            method,
            path,
            &[("Authorization", &self.auth())],
            Some(body),
        )
    }

    pub fn stop(self) -> String {
        signal(&self.child, libc::SIGTERM);
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// The report for post-task among an event's reports.
fn post_task(reports: &Value) -> Value {
    reports
        .as_array()
        .and_then(|a| a.iter().find(|r| r["hookId"] == "post-task"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[track_caller]
fn error_of(r: &Resp, status: u16, field: &str) -> String {
    assert_eq!(r.status, status, "{r:?}");
    let v = r.json();
    assert_eq!(v["error"]["field"], field, "{v}");
    assert!(
        v["error"]["rule"].as_str().is_some_and(|s| !s.is_empty()),
        "{v}"
    );
    v["error"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn the_api_serves_the_cli_use_cases_with_clear_errors() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    assert_eq!(d.token.len(), 64, "init made a token");
    let mode = std::fs::metadata(app.data_dir().join("http.token")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );

    // No token: only the health check and the API's description.
    assert_eq!(
        call(d.addr, "GET", "/api/v1/healthz", &[], None).json()["ok"],
        true
    );
    let doc = call(d.addr, "GET", "/api/v1/openapi.json", &[], None).json();
    assert_eq!(doc["openapi"], "3.0.3");
    let r = call(d.addr, "GET", "/api/v1/hooks", &[], None);
    error_of(&r, 401, "Authorization");
    assert!(r.header("www-authenticate").is_some());
    let wrong = call(
        d.addr,
        "GET",
        "/api/v1/hooks",
        &[("Authorization", "Bearer nope")],
        None,
    );
    assert_eq!(wrong.status, 401);

    // The same shapes as the CLI's --json.
    assert_eq!(d.get("/api/v1/hooks").json(), app.json(&["hooks", "list"]));
    let created = d.send(
        "POST",
        "/api/v1/hooks",
        r#"{"name": "Changelog", "promptFile": ".claude/agents/hooks/changelog.md", "delaySeconds": 600, "maxCostUsd": 0.5}"#,
    );
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.json()["id"], "changelog");
    assert_eq!(created.json(), app.json(&["hooks", "show", "changelog"]));
    let m = error_of(
        &d.send(
            "POST",
            "/api/v1/hooks",
            r#"{"name": "X", "promptFile": "p.md", "delaySeconds": -5}"#,
        ),
        400,
        "promptFile",
    );
    assert!(m.starts_with("promptFile: "), "{m}");
    error_of(
        &d.send(
            "POST",
            "/api/v1/hooks",
            r#"{"name": "X", "promptFile": ".claude/agents/hooks/x.md", "delaySeconds": -5}"#,
        ),
        400,
        "delaySeconds",
    );
    error_of(
        &d.send("POST", "/api/v1/hooks", r#"{"name": "X", "colour": "red"}"#),
        400,
        "colour",
    );
    error_of(
        &d.send(
            "POST",
            "/api/v1/hooks",
            r#"{"promptFile": ".claude/agents/hooks/x.md"}"#,
        ),
        400,
        "name",
    );
    error_of(&d.send("POST", "/api/v1/hooks", "{not json"), 400, "body");
    error_of(&d.send("POST", "/api/v1/hooks", "[1, 2]"), 400, "body");
    assert_eq!(
        app.json(&["hooks", "list"]).as_array().unwrap().len(),
        3,
        "nothing was made by bad input"
    );

    let patched = d.send(
        "PATCH",
        "/api/v1/hooks/changelog",
        r#"{"delaySeconds": 30, "enabled": false}"#,
    );
    assert_eq!(
        (
            patched.json()["delaySeconds"].clone(),
            patched.json()["enabled"].clone()
        ),
        (json!(30), json!(false))
    );
    error_of(
        &d.send("PATCH", "/api/v1/hooks/changelog", r#"{"enabled": "yes"}"#),
        400,
        "enabled",
    );
    error_of(
        &d.send("PATCH", "/api/v1/hooks/nope", r#"{"enabled": true}"#),
        404,
        "id",
    );
    error_of(&d.get("/api/v1/hooks/nope"), 404, "id");
    assert_eq!(
        d.send("POST", "/api/v1/hooks/changelog/enable", "").json()["enabled"],
        true
    );
    assert_eq!(
        d.send("POST", "/api/v1/hooks/changelog/disable", "").json()["enabled"],
        false
    );
    let r = call(
        d.addr,
        "PUT",
        "/api/v1/hooks",
        &[("Authorization", &d.auth())],
        Some("{}"),
    );
    error_of(&r, 405, "method");
    assert_eq!(r.header("allow"), Some("GET, HEAD, POST"));
    error_of(&d.get("/api/v1/nothing"), 404, "path");

    // Events: the fields of notify, or a Claude Code hook input.
    let q = d.send(
        "POST",
        "/api/v1/events",
        r#"{"sessionId": "s-http", "cwd": "/tmp"}"#,
    );
    assert_eq!(q.status, 200, "{q:?}");
    assert_eq!(post_task(&q.json())["outcome"], "queued", "{}", q.body);
    let stop = json!({"hook_event_name": "Stop", "session_id": "s-hook", "cwd": "/tmp",
        "transcript_path": "/tmp/none.jsonl", "last_assistant_message": "all good\nDONE", "stop_hook_active": false});
    let first = d.send("POST", "/api/v1/events", &stop.to_string()).json();
    assert_eq!(post_task(&first)["outcome"], "queued", "{first}");
    let again = d.send("POST", "/api/v1/events", &stop.to_string()).json();
    assert_eq!(post_task(&again)["reason"], "already pending", "{again}");
    let not_done = json!({"hook_event_name": "Stop", "session_id": "s-other", "last_assistant_message": "still going"});
    assert_eq!(
        d.send("POST", "/api/v1/events", &not_done.to_string())
            .json(),
        json!([])
    );
    let guarded = call(
        d.addr,
        "POST",
        "/api/v1/events",
        &[("Authorization", &d.auth()), ("X-Hooks-App-Follow-Up", "post-task")],
        Some(&json!({"hook_event_name": "Stop", "session_id": "s-follow", "last_assistant_message": "DONE"}).to_string()),
    );
    // No follow-up runs on s-follow: the guard is no proof (a repository's settings can
    // set the variable it comes from), and the Stop is the conversation's own. A running
    // follow-up's own Stop is ignored (the_real_claude_http_hook_queues_through_the_daemon_once).
    assert_eq!(
        post_task(&guarded.json())["outcome"],
        "queued",
        "{}",
        guarded.body
    );
    // The continuation of a failed turn carries the task on: its DONE queues post-task.
    let continued = call(
        d.addr,
        "POST",
        "/api/v1/events",
        &[
            ("Authorization", &d.auth()),
            ("X-Hooks-App-Follow-Up", "continue-after-limit"),
        ],
        Some(
            &json!({"hook_event_name": "Stop", "session_id": "s-continued", "cwd": "/tmp",
            "transcript_path": "/tmp/none.jsonl", "last_assistant_message": "DONE"})
            .to_string(),
        ),
    );
    assert_eq!(
        post_task(&continued.json())["outcome"],
        "queued",
        "{}",
        continued.body
    );
    error_of(
        &d.send("POST", "/api/v1/events", r#"{"sessionId": "../etc"}"#),
        400,
        "sessionId",
    );
    error_of(
        &d.send("POST", "/api/v1/events", r#"{"session": "x"}"#),
        400,
        "session",
    );
    error_of(
        &d.send(
            "POST",
            "/api/v1/events",
            r#"{"hook_event_name": "Stop", "session_id": 7}"#,
        ),
        400,
        "body",
    );

    let pending = d.get("/api/v1/pending").json();
    assert_eq!(pending, app.json(&["pending"]));
    let sessions: Vec<&str> = pending
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["sessionId"].as_str())
        .collect();
    assert!(
        sessions.contains(&"s-http") && sessions.contains(&"s-hook"),
        "{sessions:?}"
    );
    assert_eq!(
        d.get("/api/v1/runs?limit=5").json(),
        app.json(&["runs", "--limit", "5"])
    );
    error_of(&d.get("/api/v1/runs?limit=0"), 400, "limit");
    error_of(&d.get("/api/v1/runs?hook=../x"), 400, "hook");
    error_of(&d.get("/api/v1/runs?colour=red"), 400, "colour");
    let s = d.get("/api/v1/sessions/s-http");
    assert_eq!(s.json()["sessionId"], "s-http");
    assert_eq!(s.json()["pending"][0]["hookId"], "post-task");
    error_of(&d.get("/api/v1/sessions/-bad"), 400, "id");

    let del = d.send("DELETE", "/api/v1/hooks/post-task", "");
    assert_eq!(
        del.json(),
        // s-http, s-hook, s-follow and s-continued.
        json!({"deleted": "post-task", "droppedEntries": 4})
    );
    assert!(app.json(&["pending"]).as_array().unwrap().is_empty());
    d.stop();
}

#[test]
fn oversized_and_slow_requests_are_refused() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[("HOOKS_APP_HTTP_READ_TIMEOUT_MS", "400")]);
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(1024 * 1024 + 10));
    error_of(&d.send("POST", "/api/v1/hooks", &big), 413, "body");
    // Headers that never end: the connection is cut.
    let mut s = TcpStream::connect(d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(format!("GET /api/v1/hooks HTTP/1.1\r\nHost: {}\r\n", d.addr).as_bytes())
        .unwrap();
    let mut buf = Vec::new();
    // The server cuts it (the end of the stream), before this side's own 20 s timeout
    // would (an error).
    assert!(
        s.read_to_end(&mut buf).is_ok(),
        "cut off by the server's read timeout"
    );
    // A body that stops short: 408, and nothing changed.
    let mut s = TcpStream::connect(d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /api/v1/hooks HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Length: 100\r\n\r\n{{\"name\":",
        d.addr,
        d.auth()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let r = parse(&out);
    error_of(&r, 408, "body");
    assert_eq!(app.json(&["hooks", "list"]).as_array().unwrap().len(), 2);
    // The daemon still answers.
    assert_eq!(d.get("/api/v1/healthz").status, 200);
    d.stop();
}

#[test]
fn auth_can_be_off_only_on_loopback_and_other_addresses_need_consent() {
    let app = App::fake();
    app.ok(&["init"]);
    let o = app.run(&["serve", "--http", "0.0.0.0:0", "--http-no-auth"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--http-no-auth is allowed only on a loopback address")
    );
    let o = app.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--http-allow-insecure"));
    let d = Served::start(&app, &["--http-no-auth"], &[]);
    let r = call(d.addr, "GET", "/api/v1/hooks", &[], None);
    assert_eq!(r.status, 200, "no token needed: {r:?}");
    let log = d.stop();
    assert!(log.contains("--http-no-auth"), "a warning is logged: {log}");
    assert!(
        !log.contains(
            &std::fs::read_to_string(app.data_dir().join("http.token"))
                .unwrap()
                .trim()
                .to_owned()
        )
    );
}

fn form(d: &Served, cred: &PageLogin, path: &str, body: &str) -> Resp {
    call(
        d.addr,
        "POST",
        path,
        &[
            ("Authorization", &cred.auth(d.addr)),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &format!("http://{}", d.addr)),
        ],
        Some(body),
    )
}

/// The CSRF token the page's forms carry.
pub fn page_csrf(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a form with the page's token")
        .to_owned()
}

/// The page's login as its script keeps it: the session id, the page's own key pair (in
/// the browser, a non-extractable WebCrypto key) and the daemon's public key.
pub struct PageLogin {
    pub id: String,
    key: ring::signature::EcdsaKeyPair,
    pub daemon: Vec<u8>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

impl PageLogin {
    /// `GET path` as the page's script asks for it.
    pub fn get(&self, addr: SocketAddr, path: &str) -> Resp {
        call(
            addr,
            "GET",
            path,
            &[("Authorization", &self.auth(addr))],
            None,
        )
    }

    /// A fresh `Authorization` for one request, as the page's script makes it: the
    /// daemon's proof over a random challenge is checked first, then its nonce is signed.
    pub fn auth(&self, addr: SocketAddr) -> String {
        use ring::rand::SecureRandom;
        let rng = ring::rand::SystemRandom::new();
        let mut c = [0u8; 32];
        rng.fill(&mut c).unwrap();
        let c = hex(&c);
        let r = call(addr, "GET", &format!("/page/challenge?c={c}"), &[], None);
        assert_eq!(r.status, 200, "{r:?}");
        let j = r.json();
        let nonce = j["nonce"].as_str().expect("a nonce").to_owned();
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            &self.daemon,
        )
        .verify(
            format!("hooks-app page challenge\n{c}\n{nonce}").as_bytes(),
            &unhex(j["proof"].as_str().expect("a proof")),
        )
        .expect("the daemon proves itself with the key it gave at login");
        let sig = self
            .key
            .sign(
                &rng,
                format!("hooks-app page request\n{}\n{nonce}", self.id).as_bytes(),
            )
            .unwrap();
        format!("Page {} {nonce} {}", self.id, hex(sig.as_ref()))
    }
}

/// Sends a form body (`call` gives a body a JSON content type).
pub fn post_form(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    raw(addr, req.as_bytes())
}

/// Logs in with a one-time link from `hooks-app open` as the page's script does (its
/// own key pair, the token and the public key to `POST /login`); returns the login and
/// the page.
pub fn log_in(app: &App, d: &Served) -> (PageLogin, String) {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    let url = app.ok(&["open", "--no-browser"]).trim().to_owned();
    let path = url.split_once(&d.addr.to_string()).unwrap().1.to_owned();
    let token = path.split_once("token=").unwrap().1.to_owned();
    let r = call(d.addr, "GET", &path, &[], None);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("set-cookie").is_none(),
        "no cookie: a browser sends cookies to every port of the host: {r:?}"
    );
    assert!(
        r.body.contains("generateKey"),
        "the page makes its key: {r:?}"
    );
    let rng = ring::rand::SystemRandom::new();
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
    let body = format!("token={token}&key={}", hex(key.public_key().as_ref()));
    let r = post_form(d.addr, "/login", &[], &body);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        post_form(d.addr, "/login", &[], &body).status,
        401,
        "a login link works once"
    );
    assert_eq!(
        call(d.addr, "GET", &path, &[], None).status,
        401,
        "and is gone"
    );
    let j = r.json();
    let login = PageLogin {
        id: j["session"].as_str().expect("a session").to_owned(),
        key,
        daemon: unhex(j["daemon"].as_str().expect("the daemon's key")),
    };
    let page = call(
        d.addr,
        "GET",
        "/",
        &[("Authorization", &login.auth(d.addr))],
        None,
    );
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("referrer-policy"), Some("same-origin"));
    (login, page.body)
}

#[test]
fn the_page_logs_in_once_and_its_forms_need_its_token() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    assert_eq!(call(d.addr, "GET", "/", &[], None).status, 401);
    let (cred, page) = log_in(&app, &d);
    assert!(
        page.contains("post-task") && page.contains("never ran"),
        "{page}"
    );
    let csrf = page_csrf(&page);

    // Without the page's token, or from another origin: refused, nothing changed.
    let r = form(&d, &cred, "/ui/hooks/post-task/toggle", "x=1");
    error_of(&r, 403, "csrf");
    let evil = call(
        d.addr,
        "POST",
        "/ui/hooks/post-task/toggle",
        &[
            ("Authorization", &cred.auth(d.addr)),
            ("Origin", "http://evil.example"),
        ],
        Some(&format!("csrf={csrf}")),
    );
    assert_eq!(evil.status, 403);
    let api = call(
        d.addr,
        "POST",
        "/api/v1/hooks/post-task/disable",
        &[("Authorization", &cred.auth(d.addr))],
        Some(""),
    );
    error_of(&api, 403, "X-CSRF-Token");
    assert_eq!(app.hook("post-task")["enabled"], true);

    let r = form(
        &d,
        &cred,
        "/ui/hooks/post-task/toggle",
        &format!("csrf={csrf}"),
    );
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(
        app.hook("post-task")["enabled"],
        false,
        "the toggle changed the store"
    );
    let api = call(
        d.addr,
        "POST",
        "/api/v1/hooks/post-task/enable",
        &[
            ("Authorization", &cred.auth(d.addr)),
            ("X-CSRF-Token", &csrf),
        ],
        Some(""),
    );
    assert_eq!(api.status, 200, "the page's own calls carry its token");

    // An invalid delay: the error next to its field, what was typed kept, nothing changed.
    let r = form(
        &d,
        &cred,
        "/ui/hooks/post-task/edit",
        &format!("csrf={csrf}&name=Tidy&delaySeconds=soon"),
    );
    assert_eq!(r.status, 400);
    assert!(
        r.body
            .contains("data-field=\"delaySeconds\">must be a whole number from 0 to 86400"),
        "{}",
        r.body
    );
    assert!(r.body.contains("value=\"soon\""));
    assert_eq!(app.hook("post-task")["delaySeconds"], 10);
    let r = form(
        &d,
        &cred,
        "/ui/hooks/post-task/edit",
        &format!("csrf={csrf}&delaySeconds=45"),
    );
    assert_eq!(r.status, 303);
    assert_eq!(app.hook("post-task")["delaySeconds"], 45);

    // doctor tells when an installed http hook posts where no daemon listens.
    app.ok(&["install", "--transport", "http", "--daemon", "none"]);
    let ok = app.run(&["doctor"]);
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        text.contains("ok   http hook")
            && text.contains(&format!("posts to the daemon at http://{}", d.addr)),
        "{text}"
    );
    app.ok(&[
        "install",
        "--transport",
        "http",
        "--daemon",
        "none",
        "--http-url",
        "http://127.0.0.1:9",
    ]);
    let bad = app.run(&["doctor"]);
    let text = String::from_utf8_lossy(&bad.stdout);
    assert!(
        text.contains("FAIL http hook")
            && text.contains("http://127.0.0.1:9/api/v1/events")
            && text.contains("those events are lost"),
        "{text}"
    );

    // The session lookup explains a conversation.
    app.transcript("s-look", &app.proj, 1000);
    app.ok(&["notify", "--session", "s-look"]);
    let p = call(
        d.addr,
        "GET",
        "/?session=s-look",
        &[("Authorization", &cred.auth(d.addr))],
        None,
    );
    assert!(
        p.body.contains("id=\"session\"")
            && p.body.contains("s-look")
            && p.body.contains("not open (no agent process holds it)")
            && !p.body.contains("{\""),
        "{}",
        p.body
    );
    d.stop();
}

#[test]
fn metrics_read_by_prometheus_parser_count_events_and_runs() {
    let app = App::fake();
    app.ok(&["init"]);
    // Due in 2 s: the second event finds it still queued.
    app.ok(&[
        "hooks",
        "update",
        "post-task",
        "--delay",
        "2",
        "--max-context-k",
        "0",
    ]);
    let d = Served::start(&app, &[], &[]);
    let t = app.transcript("m1", &app.proj, 1000);
    let ev = json!({"sessionId": "m1", "cwd": app.proj, "transcriptPath": t});
    assert_eq!(
        d.send("POST", "/api/v1/events", &ev.to_string()).json()[0]["outcome"],
        "queued"
    );
    d.send("POST", "/api/v1/events", &ev.to_string());
    assert!(
        wait_until(30, || app
            .runs()
            .iter()
            .any(|r| r["finishedAt"].is_string())),
        "the follow-up ran"
    );
    let text = d.get("/metrics");
    assert_eq!(text.status, 200);
    assert!(
        text.header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    // Prometheus' own Python parser reads it; the figures are what happened.
    let script = "import sys, json\nfrom prometheus_client.parser import text_string_to_metric_families\n\
        out = {}\nfor f in text_string_to_metric_families(sys.stdin.read()):\n    for s in f.samples:\n        \
        out[s.name + json.dumps(s.labels, sort_keys=True)] = s.value\nprint(json.dumps(out))";
    let mut py = hooks_testkit::python(&["prometheus_client"])
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    py.stdin
        .take()
        .unwrap()
        .write_all(text.body.as_bytes())
        .unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused it: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        text.body
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["hooks_app_events_total{}"], 2.0, "{m}");
    assert_eq!(m["hooks_app_queued_total{}"], 1.0);
    assert_eq!(
        m["hooks_app_skipped_total{\"reason\": \"already_pending\"}"], 1.0,
        "{m}"
    );
    assert_eq!(
        m["hooks_app_runs_total{\"hook\": \"post-task\", \"status\": \"ok\"}"], 1.0,
        "{m}"
    );
    assert_eq!(m["hooks_app_cost_usd_total{\"hook\": \"post-task\"}"], 0.01);
    assert_eq!(
        m["hooks_app_tokens_total{\"hook\": \"post-task\", \"kind\": \"output\"}"],
        4.0
    );
    assert_eq!(m["hooks_app_lateness_seconds_count{}"], 1.0);
    assert_eq!(m["hooks_app_pending{\"state\": \"due\"}"], 0.0);
    d.stop();
}

#[test]
fn the_real_claude_http_hook_queues_through_the_daemon_once() {
    let app = App::real();
    app.api.set_final_line(Some("COMPLETED"));
    app.ok(&["init"]);
    app.post_task_at_once();
    // The daemon runs follow-ups with the hook token in its environment (as a user's would),
    // so a follow-up's own Stop reaches it too, and is recognised by its guard header.
    let token = "0123456789abcdef0123456789abcdef";
    std::fs::write(app.data_dir().join("hook.token"), format!("{token}\n")).unwrap();
    let d = Served::start(&app, &[], &[("HOOKS_APP_HOOK_TOKEN", token)]);
    let o = app.ok(&["install", "--transport", "http", "--daemon", "none"]);
    assert!(o.contains("HOOKS_APP_HOOK_TOKEN"), "{o}");
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(app.env.claude_home().join("settings.json")).unwrap(),
    )
    .unwrap();
    let h = &settings["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(h["type"], "http");
    assert_eq!(h["url"], format!("http://{}/api/v1/events", d.addr));
    assert_eq!(
        h["headers"]["Authorization"],
        "Bearer $HOOKS_APP_HOOK_TOKEN"
    );
    let mut c = Command::new(claude_bin());
    c.args(["-p", "--output-format", "json", "--", "build it SAY_DONE"])
        .current_dir(&app.proj)
        .stdin(Stdio::null());
    app.env.apply(&mut c);
    c.env("HOOKS_APP_HOOK_TOKEN", token);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ran = wait_until(60, || {
        app.runs()
            .iter()
            .any(|r| r["sessionId"] == sid.as_str() && r["finishedAt"].is_string())
    });
    // Both Stops arrived: the conversation's, and the follow-up's own.
    let events = || {
        d.get("/metrics")
            .body
            .lines()
            .find_map(|l| {
                l.strip_prefix("hooks_app_events_total ")
                    .map(|v| v.parse::<f64>().unwrap())
            })
            .unwrap_or(0.0)
    };
    let both = wait_until(30, || events() >= 2.0);
    let metrics = d.get("/metrics").body;
    let log = d.stop();
    assert!(ran, "the follow-up ran: {log}");
    assert!(both, "the follow-up's Stop reached the daemon: {metrics}");
    assert!(
        metrics.contains("hooks_app_queued_total 1\n"),
        "queued once: {metrics}"
    );
    assert!(
        !metrics.contains("already_ran"),
        "the guard, not the stamp, stopped the second: {metrics}"
    );
    let runs = app.runs();
    assert_eq!(runs.len(), 1, "{runs:#?}\n{log}");
    assert!(app.pending().is_empty());
}

#[test]
fn healthz_says_when_the_store_is_gone() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    let ok = call(d.addr, "GET", "/api/v1/healthz", &[], None);
    assert_eq!((ok.status, ok.json()["store"].clone()), (200, json!("ok")));
    let aside = app.env.dir.path().join("moved-away");
    std::fs::rename(app.data_dir(), &aside).unwrap();
    let gone = call(d.addr, "GET", "/api/v1/healthz", &[], None);
    assert_eq!(gone.status, 503, "{}", gone.body);
    assert_eq!(gone.json()["ok"], false);
    assert!(
        gone.json()["store"]
            .as_str()
            .is_some_and(|s| s.contains("is gone")),
        "{}",
        gone.body
    );
    std::fs::rename(&aside, app.data_dir()).unwrap();
    assert_eq!(
        call(d.addr, "GET", "/api/v1/healthz", &[], None).status,
        200
    );
    d.stop();
}

#[test]
fn the_api_pauses_and_unpauses_and_metrics_say_so() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    assert_eq!(d.get("/api/v1/pause").json(), json!({"paused": false}));
    let p = d.send("PUT", "/api/v1/pause", r#"{"for": "30m"}"#);
    assert_eq!(p.status, 200, "{p:?}");
    assert_eq!(
        (p.json()["paused"].clone(), p.json()["by"].clone()),
        (json!(true), json!("the HTTP API"))
    );
    assert_eq!(app.json(&["status"])["pause"]["until"], p.json()["until"]);
    let m = d.get("/metrics");
    assert!(m.body.contains("\nhooks_app_paused 1\n"), "{}", m.body);
    error_of(
        &d.send("PUT", "/api/v1/pause", r#"{"colour": "red"}"#),
        400,
        "colour",
    );
    error_of(
        &d.send("PUT", "/api/v1/pause", r#"{"for": "soon"}"#),
        400,
        "for",
    );
    let un = d.send("DELETE", "/api/v1/pause", "");
    assert_eq!(un.json(), json!({"paused": false, "woken": 0}));
    assert!(d.get("/metrics").body.contains("\nhooks_app_paused 0\n"));
    d.stop();
}

#[test]
fn the_api_runs_a_hook_now_through_the_usual_checks() {
    let app = App::fake();
    app.ok(&["init"]);
    app.transcript("api-run-1", &app.proj, 1000);
    let d = Served::start(&app, &[], &[]);
    let r = d.send(
        "POST",
        "/api/v1/hooks/post-task/run",
        r#"{"session": "api-run-1"}"#,
    );
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(r.json()["queued"], true);
    assert!(
        hooks_testkit::wait_until(30, || app.fake_log() == ["api-run-1 post-task"]),
        "the daemon ran it: {:?}",
        app.fake_log()
    );
    let again = d.send(
        "POST",
        "/api/v1/hooks/post-task/run",
        r#"{"session": "api-run-1"}"#,
    );
    assert_eq!(again.json()["queued"], false, "{:?}", again);
    assert!(
        again.json()["status"]
            .as_str()
            .unwrap()
            .starts_with("skipped: already ran")
    );
    error_of(
        &d.send("POST", "/api/v1/hooks/post-task/run", "{}"),
        400,
        "session",
    );
    error_of(
        &d.send(
            "POST",
            "/api/v1/hooks/post-task/run",
            r#"{"session": "nobody-here"}"#,
        ),
        404,
        "session",
    );
    error_of(
        &d.send(
            "POST",
            "/api/v1/hooks/nope/run",
            r#"{"session": "api-run-1"}"#,
        ),
        404,
        "id",
    );
    d.stop();
}

/// A page login lasts its stated 12 hours across daemon restarts (the on-demand daemon
/// exits when idle): kept in the private data folder by its hash, never by the id itself;
/// logging out ends it for every later daemon too.
#[test]
fn a_page_login_outlives_the_daemon_that_made_it() {
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    let (cred, page) = log_in(&app, &d);
    let csrf = page_csrf(&page);
    d.stop();
    let id = cred.id.as_str();
    let kept: Vec<String> = std::fs::read_dir(app.data_dir().join("http-sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(!kept[0].contains(id), "the file is named by the id's hash");
    let text =
        std::fs::read_to_string(app.data_dir().join("http-sessions").join(&kept[0])).unwrap();
    assert!(!text.contains(id), "the id itself is not written down");

    // A new daemon: the same login works, forms and all.
    let d = Served::start(&app, &[], &[]);
    let r = cred.get(d.addr, "/");
    assert_eq!(r.status, 200, "{r:?}");
    let r = form(
        &d,
        &cred,
        "/ui/hooks/post-task/toggle",
        &format!("csrf={csrf}"),
    );
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(app.hook("post-task")["enabled"], false);
    let wrong = call(
        d.addr,
        "GET",
        "/",
        &[("Authorization", "Page 00ff00ff")],
        None,
    );
    assert_eq!(wrong.status, 401, "an unknown session is refused");
    // Logged out: gone for this daemon and the next.
    let out = form(&d, &cred, "/logout", &format!("csrf={csrf}"));
    assert_eq!(out.status, 200, "{out:?}");
    d.stop();
    let d = Served::start(&app, &[], &[]);
    assert_eq!(cred.get(d.addr, "/").status, 401);
    d.stop();
}

/// The page runs a hook on a looked-up conversation, and once it followed that
/// conversation up, offers to run it again (the API's `force`), which it does.
#[test]
fn the_page_runs_a_hook_now_and_once_it_ran_offers_to_run_it_again() {
    let app = App::fake();
    app.ok(&["init"]);
    app.transcript("page-run-1", &app.proj, 1000);
    let d = Served::start(&app, &[], &[]);
    let (cred, page) = log_in(&app, &d);
    let csrf = page_csrf(&page);
    let lookup = |d: &Served| {
        call(
            d.addr,
            "GET",
            "/?session=page-run-1",
            &[("Authorization", &cred.auth(d.addr))],
            None,
        )
        .body
    };
    let shown = lookup(&d);
    assert!(
        shown.contains("Run post-task now") && !shown.contains("Run post-task again"),
        "{shown}"
    );
    let run = |extra: &str| {
        form(
            &d,
            &cred,
            "/ui/run",
            &format!("csrf={csrf}&hook=post-task&session=page-run-1{extra}"),
        )
    };
    assert_eq!(run("").status, 303);
    assert!(
        hooks_testkit::wait_until(30, || app.fake_log() == ["page-run-1 post-task"]),
        "the daemon ran it: {:?}",
        app.fake_log()
    );
    let shown = lookup(&d);
    assert!(
        shown.contains("Run post-task again") && shown.contains("name=\"force\" value=\"1\""),
        "{shown}"
    );
    error_of(&run("&force=yes"), 400, "force");
    assert_eq!(run("&force=1").status, 303);
    assert!(
        hooks_testkit::wait_until(30, || app.fake_log().len() == 2),
        "run again: {:?}",
        app.fake_log()
    );
    d.stop();
}

/// `POST /api/v1/sessions/{id}/follow-ups`: a follow-up at a time into a conversation named
/// by a prefix, fired by the daemon once and recorded; a series is queued one interval
/// apart; what breaks a rule is refused naming the field, and changes nothing.
#[test]
fn the_api_queues_follow_ups_at_a_time() {
    let app = App::fake();
    app.ok(&["init"]);
    let sid = "5a1e0c2d-7f3b-4c11-9d2e-0123456789ab";
    app.transcript(sid, &app.proj, 1000);
    let d = Served::start(&app, &[], &[]);
    let path = format!("/api/v1/sessions/{}/follow-ups", &sid[..8]);

    let store = std::fs::read(app.store_file()).unwrap();
    for (body, status, field) in [
        (json!({"after": "5m"}), 400, "prompt"),
        (json!({"prompt": "x"}), 400, "after"),
        (json!({"prompt": "x", "every": "1h"}), 400, "times"),
        (
            json!({"prompt": "x", "after": "5m", "every": "10s", "times": 2}),
            400,
            "every",
        ),
        (
            json!({"prompt": "x", "after": "5m", "times": "2"}),
            400,
            "times",
        ),
        (
            json!({"prompt": "x", "after": "5m", "session": "other"}),
            400,
            "session",
        ),
    ] {
        error_of(&d.send("POST", &path, &body.to_string()), status, field);
    }
    error_of(
        &d.send(
            "POST",
            "/api/v1/sessions/ffffffff-none/follow-ups",
            &json!({"prompt": "x", "after": "5m"}).to_string(),
        ),
        404,
        "id",
    );
    assert_eq!(
        std::fs::read(app.store_file()).unwrap(),
        store,
        "nothing changed"
    );

    let series = d.send(
        "POST",
        &path,
        &json!({"prompt": "look at CI", "every": "2h", "times": 2}).to_string(),
    );
    assert_eq!(series.status, 201, "{series:?}");
    assert_eq!(series.json()["followUps"].as_array().map(Vec::len), Some(2));
    let once = d.send(
        "POST",
        &path,
        &json!({"prompt": "SAY_COMPLETED check the deploy", "after": "0s"}).to_string(),
    );
    assert_eq!(once.status, 201, "{once:?}");
    let v = once.json();
    assert_eq!(v["sessionId"], sid);
    let hook = v["followUps"][0]["hookId"].as_str().unwrap().to_owned();
    assert!(
        wait_until(60, || app.runs().iter().any(|r| r["hookId"]
            == hook.as_str()
            && r["finishedAt"].is_string())),
        "the daemon ran it: {}",
        d.stop()
    );
    let runs = app.runs();
    assert_eq!(
        runs.len(),
        1,
        "once, and the series waits for its time: {runs:?}"
    );
    assert_eq!(runs[0]["sessionId"], sid);
    assert_eq!(app.queued().len(), 2, "the series is queued");

    // A prompt sent from outside with an idempotency key: delivered once, however often
    // the request comes (a retry after a lost answer).
    let prompts = format!("/api/v1/sessions/{sid}/prompts");
    let send = || {
        call(
            d.addr,
            "POST",
            &prompts,
            &[
                ("Authorization", &d.auth()),
                ("Idempotency-Key", "deploy-7"),
            ],
            Some(&json!({"prompt": "SAY_COMPLETED the deploy is done"}).to_string()),
        )
    };
    let first = send();
    assert_eq!(first.status, 202, "{first:?}");
    assert_eq!(first.json()["hookId"], "send-deploy-7");
    let again = send();
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.json()["sent"], false);
    assert!(
        wait_until(60, || app.runs().iter().any(|r| r["hookId"]
            == "send-deploy-7"
            && r["finishedAt"].is_string())),
        "the daemon sent it"
    );
    let third = send();
    assert_eq!(
        (third.status, third.json()["status"].as_str()),
        (200, Some("ok"))
    );
    assert_eq!(
        app.runs()
            .iter()
            .filter(|r| r["hookId"] == "send-deploy-7")
            .count(),
        1,
        "once"
    );
    let bad = call(
        d.addr,
        "POST",
        &prompts,
        &[("Authorization", &d.auth()), ("Idempotency-Key", "a b")],
        Some(&json!({"prompt": "x"}).to_string()),
    );
    error_of(&bad, 400, "Idempotency-Key");
    d.stop();
}
