//! `cargo xtask fuzz-api [SECONDS]`: schemathesis (from PyPI, in a virtual environment under
//! target/test-deps) against a real `serve --http` on 127.0.0.1, driven by the API's own
//! OpenAPI document: no response may be a server error, and every response must match the
//! document (status, content type, headers, body). Bounded in time; the JUnit report is
//! kept in target/fuzz-api/.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The schemathesis release the run is pinned to.
const SCHEMATHESIS: &str = "4.32.5";

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(root: &Path, seconds: u64) -> Result<(), String> {
    let venv = root.join(format!("target/test-deps/schemathesis-{SCHEMATHESIS}"));
    let bin = venv.join("bin/schemathesis");
    if !bin.exists() {
        eprintln!("xtask: installing schemathesis {SCHEMATHESIS} from PyPI");
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .arg(format!("schemathesis=={SCHEMATHESIS}"))
                .status()
                .is_ok_and(|s| s.success());
        if !ok {
            return Err(
                "could not install schemathesis (python3 with venv and PyPI are needed)".into(),
            );
        }
    }
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "-p", "hooks-app"])
        .current_dir(root)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("building hooks-app failed".into());
    }
    let dir = root.join("target/fuzz-api");
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let app = root.join("target/debug/hooks-app");
    let cmd = |args: &[&str]| {
        let mut c = Command::new(&app);
        c.env("HOME", &home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("HOOKS_DATA_DIR")
            .env_remove("HOOKS_STORE")
            .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
            .args(["--claude-bin", "/bin/false"])
            .args(args)
            .current_dir(&work);
        c
    };
    let ok = cmd(&["init"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err("hooks-app init failed".into());
    }
    let data = home.join(".local/share/hooks-app");
    let log = std::fs::File::create(dir.join("serve.log")).map_err(|e| e.to_string())?;
    let _daemon = Daemon(
        cmd(&["serve", "--http", "127.0.0.1:0"])
            .stderr(log)
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    // The daemon's registration says where it serves, once it listens.
    let registration = data.join(format!("daemons/{}.json", _daemon.0.id()));
    let t = Instant::now();
    let url = loop {
        if let Ok(text) = std::fs::read_to_string(&registration)
            && let Some(u) = text
                .split("\"http\":\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
        {
            break u.to_owned();
        }
        if t.elapsed() > Duration::from_secs(30) {
            return Err("the daemon did not start serving HTTP".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let token = std::fs::read_to_string(data.join("http.token")).map_err(|e| e.to_string())?;
    eprintln!("xtask: fuzzing {url}/api/v1 for {seconds} s");
    let status = Command::new(&bin)
        .arg("run")
        .arg(format!("{url}/api/v1/openapi.json"))
        .args(["-H", &format!("Authorization: Bearer {}", token.trim())])
        .args(["--max-time", &seconds.to_string(), "-n", "30"])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
        ])
        .args(["--report", "junit", "--report-dir"])
        .arg(&dir)
        .env("SCHEMATHESIS_TELEMETRY", "false")
        // Its cache of found failures goes with the report, not into the checkout.
        .current_dir(&dir)
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the API fuzz run found problems (report in {})",
            dir.display()
        ))
    }
}
