//! Driving the built binary in a scratch home.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use hooks_testkit::{ClaudeEnv, MockApi, claude_bin, write_script};
use serde_json::Value;

pub const APP: &str = env!("CARGO_BIN_EXE_hooks-app");

/// A scratch user: home, Claude home, data dir and a project folder.
pub struct App {
    pub api: MockApi,
    pub env: ClaudeEnv,
    pub proj: PathBuf,
    pub claude: PathBuf,
    /// `--store` for every command (`HOOKS_STORE`); the JSON store in the data folder
    /// when `None`.
    pub store: Option<String>,
    /// `--host-id` for every command (`HOOKS_HOST_ID`).
    pub host_id: Option<String>,
    /// The processes [`App::spawn`] started, by pid and start: whatever of them still runs
    /// when the test ends, passed or failed, is ended.
    spawned: std::sync::Mutex<Vec<(u32, u64)>>,
}

impl Drop for App {
    fn drop(&mut self) {
        let spawned = self
            .spawned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for &(pid, start) in spawned.iter() {
            // Only the very process it started: a pid reused since is another's.
            if hooks_platform::process::is_alive(pid, start) {
                // SAFETY: kill(2) on a process this test started, checked just above.
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
    }
}

impl App {
    /// With the real `claude`.
    pub fn real() -> Self {
        let api = MockApi::start();
        let env = ClaudeEnv::new(&api);
        let proj = env.workdir("proj");
        Self {
            api,
            env,
            proj,
            claude: claude_bin(),
            store: None,
            host_id: None,
            spawned: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// With a fake `claude` script: it appends `<session> <hook>` to `fake.log` and
    /// `start|end <session> <hook> <daemon pid> <unix ns>` to `spans.log`, becomes a
    /// process that never ends when `$FAKE_HANG` is set, waits `$FAKE_SECONDS` seconds if
    /// set (its behaviour under test, not synchronisation), and prints a successful result
    /// ending with COMPLETED.
    pub fn fake() -> Self {
        let api = MockApi::start();
        let env = ClaudeEnv::new(&api);
        let proj = env.workdir("proj");
        let claude = env.dir.path().join("fake-claude");
        write_script(
            &claude,
            &format!(
                "#!/bin/sh\necho \"$3 $HOOKS_APP_FOLLOW_UP\" >> '{log}'\n\
                 echo \"start $3 $HOOKS_APP_FOLLOW_UP $PPID $(date +%s%N)\" >> '{spans}'\n\
                 [ -n \"$FAKE_HANG\" ] && exec sleep 100000\n[ -n \"$FAKE_SECONDS\" ] && sleep \"$FAKE_SECONDS\"\n\
                 echo \"end $3 $HOOKS_APP_FOLLOW_UP $PPID $(date +%s%N)\" >> '{spans}'\n\
                 printf '%s\\n' '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"tidied\\nCOMPLETED\",\"num_turns\":1,\"total_cost_usd\":0.01,\"session_id\":\"'\"$3\"'\",\"usage\":{{\"input_tokens\":1,\"cache_creation_input_tokens\":2,\"cache_read_input_tokens\":3,\"output_tokens\":4}}}}'\n",
                log = env.dir.path().join("fake.log").display(),
                spans = env.dir.path().join("spans.log").display(),
            ),
        );
        Self {
            api,
            env,
            proj,
            claude,
            store: None,
            host_id: None,
            spawned: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// With a fake `claude`, on a fresh PostgreSQL database.
    pub fn fake_pg() -> Self {
        Self::fake().on_store(&hooks_testkit::pg::database())
    }

    /// The same, on the store `url`.
    pub fn on_store(mut self, url: &str) -> Self {
        self.store = Some(url.to_owned());
        self
    }

    /// The same, as host `id` of a shared store.
    pub fn for_host(mut self, id: &str) -> Self {
        self.host_id = Some(id.to_owned());
        self
    }

    pub fn data_dir(&self) -> PathBuf {
        self.env.home().join(".local/share/hooks-app")
    }

    pub fn store_file(&self) -> PathBuf {
        self.data_dir().join("hooks.json")
    }

    /// The fake's invocations, one `<session> <hook>` per line.
    pub fn fake_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.env.dir.path().join("fake.log"))
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The fake's runs as they started and ended, in order of their start.
    pub fn spans(&self) -> Vec<Span> {
        let text =
            std::fs::read_to_string(self.env.dir.path().join("spans.log")).unwrap_or_default();
        let mut spans: Vec<Span> = Vec::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let [what, session, hook, daemon, ns] = f[..] else {
                panic!("a spans.log line of five fields: {line:?}");
            };
            let (daemon, ns) = (daemon.parse().unwrap(), ns.parse().unwrap());
            if what == "start" {
                spans.push(Span {
                    session: session.to_owned(),
                    hook: hook.to_owned(),
                    daemon,
                    start: ns,
                    end: None,
                });
            } else if let Some(s) = spans.iter_mut().find(|s| {
                s.end.is_none() && s.session == session && s.hook == hook && s.daemon == daemon
            }) {
                s.end = Some(ns);
            }
        }
        spans
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(APP);
        self.env.apply(&mut c);
        c.env("HOOKS_CLAUDE_BIN", &self.claude)
            .env_remove("HOOKS_DATA_DIR")
            .env_remove("HOOKS_WORKSPACE");
        for (var, value) in [
            ("HOOKS_STORE", &self.store),
            ("HOOKS_HOST_ID", &self.host_id),
        ] {
            match value {
                Some(v) => c.env(var, v),
                None => c.env_remove(var),
            };
        }
        if args.first() == Some(&"claude-hook") {
            // A hook call reads no variable (a project's settings `env` reaches every hook):
            // what it needs is on its command line, as `install` writes it.
            c.args(self.hook_flags());
        }
        c.args(args).current_dir(&self.proj).stdin(Stdio::null());
        c
    }

    /// The global options `install` writes before `claude-hook` here: the scratch data
    /// folder and Claude Code folder are not the ones under the user database's home, and
    /// the store and host id the test chose.
    pub fn hook_flags(&self) -> Vec<String> {
        let mut f = vec![
            "--data-dir".to_owned(),
            self.data_dir().to_string_lossy().into_owned(),
            "--claude-home".to_owned(),
            self.env.claude_home().to_string_lossy().into_owned(),
        ];
        for (flag, value) in [("--store", &self.store), ("--host-id", &self.host_id)] {
            if let Some(v) = value {
                f.extend([flag.to_owned(), v.clone()]);
            }
        }
        f
    }

    /// The hook command `install` writes here, `claude-hook` followed by `tail`.
    pub fn hook_command(&self, tail: &str) -> String {
        format!(
            "{APP} --data-dir {} --claude-home {} claude-hook{tail}",
            hooks_platform::shell_quote(&self.data_dir().to_string_lossy()),
            hooks_platform::shell_quote(&self.env.claude_home().to_string_lossy())
        )
    }

    /// Runs `command` as Claude Code runs a hook (`/bin/sh -c`), in `cwd`, with this
    /// user's environment plus `extra` (a project's settings `env`, a `PATH`), `input` on
    /// stdin.
    pub fn hook_as_claude(
        &self,
        command: &str,
        cwd: &Path,
        extra: &[(&str, String)],
        input: &str,
    ) -> Output {
        use std::io::Write;
        let mut c = Command::new("/bin/sh");
        self.env.apply(&mut c);
        c.args(["-c", command])
            .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("/bin/sh");
        let _ = child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes());
        child.wait_with_output().expect("the hook's output")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run hooks-app")
    }

    /// Runs and expects success; returns stdout.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "hooks-app {args:?} failed ({:?}): {}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).expect("utf-8")
    }

    #[track_caller]
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        serde_json::from_str(&self.ok(&a)).expect("one JSON value")
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        let child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hooks-app");
        if let Some(p) = hooks_platform::process::process(child.id()) {
            self.spawned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((p.pid, p.start));
        }
        child
    }

    /// `claude -p` in the project, as a user would run it.
    pub fn claude(&self, prompt: &str) -> Value {
        let (code, v, err) = self.env.run(&self.proj, &["--", prompt]);
        assert_eq!(code, 0, "claude failed: {v} {err}");
        v
    }

    /// `claude -p` in the project; the conversation's id.
    pub fn claude_session(&self, prompt: &str) -> String {
        let v = self.claude(prompt);
        v["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no session_id: {v}"))
            .to_owned()
    }

    /// The queue as (hook, session) pairs, in its order.
    pub fn queued(&self) -> Vec<(String, String)> {
        self.pending()
            .iter()
            .map(|p| {
                (
                    p["hookId"].as_str().unwrap_or_default().to_owned(),
                    p["sessionId"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    pub fn runs(&self) -> Vec<Value> {
        self.json(&["runs"]).as_array().cloned().unwrap_or_default()
    }

    pub fn pending(&self) -> Vec<Value> {
        self.json(&["pending"])
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub fn hook(&self, id: &str) -> Value {
        self.json(&["hooks", "show", id])
    }

    /// Makes `post-task` due as soon as a conversation is done, whatever its context.
    #[track_caller]
    pub fn post_task_at_once(&self) {
        self.ok(&[
            "hooks",
            "update",
            "post-task",
            "--delay",
            "0",
            "--max-context-k",
            "0",
        ]);
    }

    /// The hook's `lastStatus`.
    #[track_caller]
    pub fn last_status(&self, id: &str) -> String {
        self.hook(id)["lastStatus"]
            .as_str()
            .expect("a lastStatus")
            .to_owned()
    }

    /// Writes a transcript for `session` under the Claude home, last changed long ago.
    pub fn transcript(&self, session: &str, cwd: &Path, context_tokens: u64) -> PathBuf {
        let dir = self.env.claude_home().join("projects/-proj");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{session}.jsonl"));
        let line = serde_json::json!({"type": "assistant", "cwd": cwd, "isSidechain": false, "sessionId": session,
            "message": {"id": "m1", "model": "claude-x", "content": [{"type": "text", "text": "done\nDONE"}],
            "usage": {"input_tokens": context_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}});
        std::fs::write(&p, format!("{line}\n")).unwrap();
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(past)
            .unwrap();
        p
    }
}

/// One run of the fake `claude`: nanoseconds since the epoch; no end when it was killed.
#[derive(Debug, Clone)]
pub struct Span {
    pub session: String,
    pub hook: String,
    /// The daemon that ran it (the fake's parent).
    pub daemon: u32,
    pub start: u128,
    pub end: Option<u128>,
}

/// Sends a signal to a process this test started.
pub fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on a pid this test spawned and has not reaped yet.
    unsafe {
        libc::kill(pid, sig);
    }
}
