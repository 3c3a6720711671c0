//! The interactive `claude` TUI in a pseudo-terminal, driven through tmux on a private
//! server socket (its own `-L` name, no config file), so a test sees the screen a person
//! would see and types as they would.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::{ClaudeEnv, claude_bin, mock, wait_until};

/// One TUI in its own tmux server. The server (and the TUI, if still there) is ended when
/// this is dropped.
pub struct Tui {
    socket: String,
    /// The pid of the `claude` process (the pane's process).
    pub pid: u32,
}

fn tmux(socket: &str, args: &[&str]) -> Output {
    Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tmux runs (install tmux)")
}

/// Marks `cwd` onboarded and trusted and the dummy key approved, so the TUI starts at its
/// prompt instead of asking. Written where Claude Code looks with `CLAUDE_CONFIG_DIR` set
/// and without.
fn pre_accept(env: &ClaudeEnv, cwd: &Path) {
    let key = env
        .vars()
        .into_iter()
        .find(|(k, _)| k == "ANTHROPIC_API_KEY")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let cwd = cwd.to_string_lossy().into_owned();
    let v = serde_json::json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [key]},
        "projects": {cwd: {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
    });
    for p in [
        env.home().join(".claude.json"),
        env.claude_home().join(".claude.json"),
    ] {
        std::fs::write(p, v.to_string()).expect("write .claude.json");
    }
}

/// What the TUI shows once it takes input, by version.
pub const READY: [&str; 2] = ["for shortcuts", "shift+tab to cycle"];

impl Tui {
    /// Starts `claude` (no arguments) in `cwd` with the environment of `env`, and waits
    /// for its prompt.
    pub fn start(env: &ClaudeEnv, cwd: &Path) -> Self {
        pre_accept(env, cwd);
        let t = Self::start_program(&claude_bin(), &[], &env.vars(), cwd);
        // 2.1.197's ready screen says "? for shortcuts"; 2.1.332's, "⏵⏵ auto mode on
        // (shift+tab to cycle)".
        assert!(
            t.wait_for_any(60, &READY),
            "the TUI came up: {}",
            t.screen()
        );
        t
    }

    /// Starts `program` with `program_args` in `cwd` with the variables `vars`, without
    /// waiting for anything: another agent's TUI.
    pub fn start_program(
        program: &Path,
        program_args: &[&str],
        vars: &[(String, String)],
        cwd: &Path,
    ) -> Self {
        let socket = format!("hooks-test-{}-{}", std::process::id(), mock::unique());
        let mut args: Vec<String> = vec![
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            "main".into(),
            "-x".into(),
            "160".into(),
            "-y".into(),
            "50".into(),
            "-c".into(),
            cwd.to_string_lossy().into_owned(),
        ];
        for (k, v) in vars {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("--".into());
        args.push(program.to_string_lossy().into_owned());
        args.extend(program_args.iter().map(|a| (*a).to_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tmux(&socket, &refs);
        assert!(
            o.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let pid = String::from_utf8_lossy(
            &tmux(&socket, &["display", "-p", "-t", "main", "#{pane_pid}"]).stdout,
        )
        .trim()
        .parse()
        .expect("the pane's pid");
        Self { socket, pid }
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&tmux(&self.socket, &["capture-pane", "-p", "-t", "main"]).stdout)
            .into_owned()
    }

    /// Waits up to `secs` for `text` to be on the screen.
    pub fn wait_for(&self, secs: u64, text: &str) -> bool {
        wait_until(secs, || self.screen().contains(text))
    }

    /// Waits until the screen shows any of `texts`.
    pub fn wait_for_any(&self, secs: u64, texts: &[&str]) -> bool {
        wait_until(secs, || {
            let screen = self.screen();
            texts.iter().any(|t| screen.contains(t))
        })
    }

    /// Types `text`, then Enter.
    pub fn type_line(&self, text: &str) {
        tmux(&self.socket, &["send-keys", "-t", "main", "-l", text]);
        // A separate key event: typed in one go with the text, Enter can land in a paste.
        wait_until(5, || self.screen().contains(text));
        tmux(&self.socket, &["send-keys", "-t", "main", "Enter"]);
    }

    /// Types `text` into the input box without sending it: a person still writing.
    pub fn type_text(&self, text: &str) {
        tmux(&self.socket, &["send-keys", "-t", "main", "-l", text]);
        wait_until(5, || self.screen().contains(text));
    }

    /// Answers a menu that shows `question` with `keys` and Enter until the screen shows
    /// `then`, within `secs`: a TUI may draw a menu before it takes keys, so an answer that
    /// changed nothing is given again, a second later.
    pub fn answer(&self, question: &str, keys: &str, then: &str, secs: u64) -> bool {
        let mut last: Option<std::time::Instant> = None;
        wait_until(secs, || {
            let screen = self.screen();
            if screen.contains(then) {
                return true;
            }
            if screen.contains(question)
                && last.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1))
            {
                tmux(&self.socket, &["send-keys", "-t", "main", "-l", keys]);
                tmux(&self.socket, &["send-keys", "-t", "main", "Enter"]);
                last = Some(std::time::Instant::now());
            }
            false
        })
    }

    /// Quits with `command` (typed over a cleared input box, then Enter), given again every
    /// two seconds until the program is gone, within `secs`: a TUI may not take keys yet.
    /// The command is typed a key at a time, each once the input line shows the last, and
    /// sent only when the line holds it exactly: keys that come in a burst can be taken as
    /// a paste (Codex 0.171.0 on a busy machine made `/quit` into `/quitquit`).
    pub fn quit_with(&self, command: &str, secs: u64) -> bool {
        let mut last: Option<std::time::Instant> = None;
        wait_until(secs, || {
            if !self.alive() {
                return true;
            }
            if last.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(2)) {
                tmux(&self.socket, &["send-keys", "-t", "main", "C-u"]);
                if self.type_paced(command) {
                    tmux(&self.socket, &["send-keys", "-t", "main", "Enter"]);
                }
                last = Some(std::time::Instant::now());
            }
            false
        })
    }

    /// Types `text` a key at a time, each once the screen has a line ending with what was
    /// typed so far; returns whether one ends with all of it.
    fn type_paced(&self, text: &str) -> bool {
        let shows = |typed: &str| self.screen().lines().any(|l| l.trim_end().ends_with(typed));
        let mut typed = String::new();
        for c in text.chars() {
            typed.push(c);
            tmux(
                &self.socket,
                &["send-keys", "-t", "main", "-l", &c.to_string()],
            );
            wait_until(2, || shows(&typed));
        }
        shows(text)
    }

    /// Presses Enter: sends what the input box holds.
    pub fn enter(&self) {
        tmux(&self.socket, &["send-keys", "-t", "main", "Enter"]);
    }

    /// Whether the `claude` process is still there.
    pub fn alive(&self) -> bool {
        // A zombie (exited, not reaped yet by tmux) is gone too.
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .is_ok_and(|s| !s.contains(") Z "))
    }

    /// Sends `sig` to the `claude` process.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on the pid of the process this test started in its pane.
        unsafe {
            libc::kill(self.pid as libc::pid_t, sig);
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        tmux(&self.socket, &["kill-server"]);
    }
}
