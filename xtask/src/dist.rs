//! `cargo xtask dist [--check]`: the npm packages, as `@openai/codex` and Biome ship a Rust
//! binary. Under `target/dist/npm/`:
//!
//! - one package per platform, `@hooks-app/<os>-<cpu>`, holding the release binary at
//!   `bin/hooks-app`, with `os` and `cpu` set so npm installs it only there;
//! - the launcher, `hooks-app`: a few lines of Node (`xtask/npm/launcher.js`) that find the
//!   platform's package and run its binary, with every platform package as an optional
//!   dependency;
//! - each packed by `npm pack` (`*.tgz`), and `platforms.txt`: which platforms were built
//!   here, from which Rust target, and why the others were not.
//!
//! And under `target/dist/`, the archive `cargo binstall hooks-app` fetches from a release,
//! `hooks-app-<target>.tar.gz` holding `hooks-app-<target>/hooks-app`, laid out as the
//! `[package.metadata.binstall]` of `crates/hooks-app/Cargo.toml` says (`--check` holds the
//! two together).
//!
//! A platform is built where this machine's toolchain can (its standard library installed
//! and a linker for it); Linux prefers the static musl target when it is installed. The
//! host's build is the one `cargo build --release` makes, so after the bench it costs
//! nothing.
//!
//! `--check` then installs the tarballs with npm, offline, into an empty prefix and checks
//! that the installed `hooks-app` works: `--version`, `init`, `install`, and the Claude Code
//! hook entry `install` wrote, which must name the platform binary, not the launcher.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The platforms the launcher knows: npm's `os-cpu` (Node's `process.platform` and
/// `process.arch`), npm's `os` and `cpu`, and the Rust targets that build it, best first.
const PLATFORMS: [(&str, &str, &str, &[&str]); 4] = [
    (
        "linux-x64",
        "linux",
        "x64",
        &["x86_64-unknown-linux-musl", "x86_64-unknown-linux-gnu"],
    ),
    (
        "linux-arm64",
        "linux",
        "arm64",
        &["aarch64-unknown-linux-musl", "aarch64-unknown-linux-gnu"],
    ),
    ("darwin-arm64", "darwin", "arm64", &["aarch64-apple-darwin"]),
    ("darwin-x64", "darwin", "x64", &["x86_64-apple-darwin"]),
];

/// The npm scope of the platform packages.
const SCOPE: &str = "@hooks-app";

const LAUNCHER: &str = include_str!("../npm/launcher.js");

/// What became of one platform.
enum Built {
    /// Built from this Rust target, the binary at this path; why the better targets were
    /// not taken.
    Yes(&'static str, PathBuf, Vec<String>),
    /// Not built, and why.
    No(String),
}

pub fn run(root: &Path, args: &[&str]) -> Result<(), String> {
    let check = match args {
        [] => false,
        ["--check"] => true,
        _ => return Err("usage: cargo xtask dist [--check]".into()),
    };
    let version = workspace_version(root)?;
    let out = root.join("target/dist/npm");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let host = host_target()?;
    let mut report = String::new();
    let mut tarballs = Vec::new();
    let mut archives = Vec::new();
    for (key, os, cpu, targets) in PLATFORMS {
        match build(root, &host, targets) {
            Built::Yes(target, bin, passed) => {
                let dir = out.join(format!("hooks-app-{key}"));
                write_platform_package(&dir, key, os, cpu, &version, &bin)?;
                tarballs.push(pack(&dir, &out)?);
                archives.push(archive(root, target, &bin)?);
                let passed = if passed.is_empty() {
                    String::new()
                } else {
                    format!(" (not {})", passed.join("; "))
                };
                report.push_str(&format!("{key}: built from {target}{passed}\n"));
            }
            Built::No(why) => report.push_str(&format!("{key}: not built: {why}\n")),
        }
    }
    if tarballs.is_empty() {
        return Err(format!("no platform was built:\n{report}"));
    }
    let dir = out.join("hooks-app");
    write_launcher_package(&dir, &version)?;
    let launcher = pack(&dir, &out)?;
    write(&out.join("platforms.txt"), &report)?;
    eprint!("xtask: dist: {}/\n{report}", out.display());
    if check {
        for (target, tgz) in &archives {
            check_binstall(root, target, tgz)?;
        }
        tarballs.push(launcher);
        check_install(&tarballs, &version)?;
    }
    Ok(())
}

/// The workspace's version, `[workspace.package]`'s.
fn workspace_version(root: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).map_err(|e| e.to_string())?;
    text.lines()
        .skip_while(|l| l.trim() != "[workspace.package]")
        .find_map(|l| {
            let v = l.trim().strip_prefix("version")?.trim().strip_prefix('=')?;
            Some(v.trim().trim_matches('"').to_owned())
        })
        .ok_or_else(|| "Cargo.toml: no version in [workspace.package]".into())
}

fn host_target() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .ok_or_else(|| "rustc -vV names no host".into())
}

/// Whether the standard library for `target` is installed.
fn has_std(target: &str) -> bool {
    Command::new("rustc")
        .args(["--print", "target-libdir", "--target", target])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|d| d.join(format!("libstd-{target}.rlib")).exists() || has_rlib(&d))
}

fn has_rlib(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("libstd-") && n.ends_with(".rlib")
        })
}

/// Builds the release binary for the first of `targets` this machine can build.
fn build(root: &Path, host: &str, targets: &[&'static str]) -> Built {
    let mut why = Vec::new();
    for &target in targets {
        if target != host && !has_std(target) {
            why.push(format!(
                "{target}'s standard library is not installed (rustup target add {target})"
            ));
            continue;
        }
        let mut c = crate::cargo();
        c.args(["build", "--quiet", "--release", "-p", "hooks-app"]);
        // The host's own build goes where `cargo build --release` puts it (the bench's).
        let dir = if target == host {
            root.join("target/release")
        } else {
            c.args(["--target", target]);
            root.join("target").join(target).join("release")
        };
        eprintln!("xtask: dist: cargo build --release ({target})");
        match c.output() {
            Ok(o) if o.status.success() => return Built::Yes(target, dir.join("hooks-app"), why),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                let line = err
                    .lines()
                    .find(|l| l.starts_with("error"))
                    .unwrap_or("the build failed");
                why.push(format!("{target}: {line}"));
            }
            Err(e) => why.push(format!("{target}: cargo: {e}")),
        }
    }
    Built::No(why.join("; "))
}

/// A JSON string.
fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The fields every package shares.
fn common(version: &str) -> String {
    format!(
        "  \"version\": {},\n  \"license\": \"MIT\",\n  \"homepage\": \"https://docs.rs/hooks-app\",\n  \"keywords\": [\"claude-code\", \"codex\", \"hooks\", \"follow-up\"],\n",
        js(version)
    )
}

fn write_platform_package(
    dir: &Path,
    key: &str,
    os: &str,
    cpu: &str,
    version: &str,
    bin: &Path,
) -> Result<(), String> {
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dest = dir.join("bin/hooks-app");
    std::fs::copy(bin, &dest).map_err(|e| format!("{}: {e}", bin.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    write(
        &dir.join("package.json"),
        &format!(
            "{{\n  \"name\": {},\n{}  \"description\": {},\n  \"os\": [{}],\n  \"cpu\": [{}],\n  \"files\": [\"bin/hooks-app\"],\n  \"preferUnplugged\": true\n}}\n",
            js(&format!("{SCOPE}/{key}")),
            common(version),
            js(&format!(
                "The hooks-app binary for {key}; install the `hooks-app` package, which runs it."
            )),
            js(os),
            js(cpu),
        ),
    )?;
    write(
        &dir.join("README.md"),
        &format!(
            "# {SCOPE}/{key}\n\nThe `hooks-app` binary for {key}. Install `hooks-app` (`npm install -g hooks-app`), which depends on this package and runs it.\n"
        ),
    )
}

fn write_launcher_package(dir: &Path, version: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let platforms: Vec<String> = PLATFORMS
        .iter()
        .map(|(key, ..)| format!("{}: {}", js(key), js(&format!("{SCOPE}/{key}"))))
        .collect();
    let launcher = LAUNCHER.replace("__PLATFORMS__", &format!("{{ {} }}", platforms.join(", ")));
    let dest = dir.join("bin/hooks-app.js");
    write(&dest, &launcher)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let deps: Vec<String> = PLATFORMS
        .iter()
        .map(|(key, ..)| format!("    {}: {}", js(&format!("{SCOPE}/{key}")), js(version)))
        .collect();
    write(
        &dir.join("package.json"),
        &format!(
            "{{\n  \"name\": \"hooks-app\",\n{}  \"description\": \"Follow-up prompts for finished Claude Code and Codex conversations: a durable queue that resumes the same conversation once per hook.\",\n  \"bin\": {{ \"hooks-app\": \"bin/hooks-app.js\" }},\n  \"files\": [\"bin/hooks-app.js\"],\n  \"engines\": {{ \"node\": \">=18\" }},\n  \"optionalDependencies\": {{\n{}\n  }}\n}}\n",
            common(version),
            deps.join(",\n")
        ),
    )?;
    write(
        &dir.join("README.md"),
        "# hooks-app\n\nFollow-up prompts for finished Claude Code and Codex conversations.\n\n```sh\nnpm install -g hooks-app\nhooks-app init && hooks-app install\n```\n\nIn Claude Code, the hooks-app plugin can hold the hooks instead: `/plugin marketplace add` the hooks-app repository, `/plugin install hooks-app@hooks-app`, then `hooks-app install --plugin`.\n\nThis package is a small Node launcher; the program is the platform package npm installs beside it (`@hooks-app/linux-x64`, `@hooks-app/darwin-arm64`, …).\n",
    )
}

/// The release archive of `target`'s binary, for `cargo binstall`.
fn archive(root: &Path, target: &str, bin: &Path) -> Result<(String, PathBuf), String> {
    let dist = root.join("target/dist");
    let name = format!("hooks-app-{target}");
    let staging = dist.join(&name);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| e.to_string())?;
    std::fs::copy(bin, staging.join("hooks-app")).map_err(|e| e.to_string())?;
    let tgz = dist.join(format!("{name}.tar.gz"));
    ok(
        Command::new("tar")
            .arg("czf")
            .arg(&tgz)
            .arg("-C")
            .arg(&dist)
            .arg(&name),
        "tar",
    )?;
    let _ = std::fs::remove_dir_all(&staging);
    Ok((target.to_owned(), tgz))
}

/// The archive is where binstall's metadata says, holding the binary where it says.
fn check_binstall(root: &Path, target: &str, tgz: &Path) -> Result<(), String> {
    let manifest = std::fs::read_to_string(root.join("crates/hooks-app/Cargo.toml"))
        .map_err(|e| e.to_string())?;
    let field = |name: &str| {
        manifest
            .lines()
            .skip_while(|l| l.trim() != "[package.metadata.binstall]")
            .find_map(|l| {
                let v = l.trim().strip_prefix(name)?.trim().strip_prefix('=')?;
                Some(v.trim().trim_matches('"').to_owned())
            })
            .ok_or_else(|| format!("crates/hooks-app/Cargo.toml: no binstall {name}"))
    };
    let fill = |t: String| {
        t.replace("{ target }", target)
            .replace("{ bin }", "hooks-app")
            .replace("{ binary-ext }", "")
    };
    let url = fill(field("pkg-url")?);
    let file = tgz.file_name().unwrap_or_default().to_string_lossy();
    if !url.ends_with(&format!("/{file}")) || field("pkg-fmt")? != "tgz" {
        return Err(format!(
            "binstall's pkg-url {url} does not name {file} (tgz)"
        ));
    }
    let inside = fill(field("bin-dir")?);
    let listing = ok(Command::new("tar").arg("tzf").arg(tgz), "tar tzf")?;
    if !listing.lines().any(|l| l == inside) {
        return Err(format!(
            "{} holds no {inside}, where binstall's bin-dir looks:\n{listing}",
            tgz.display()
        ));
    }
    Ok(())
}

/// `npm pack` of `dir` into `out`; the tarball's path.
fn pack(dir: &Path, out: &Path) -> Result<PathBuf, String> {
    let o = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(out)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("npm pack: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "npm pack {}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let name = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let tgz = out.join(name.lines().last().unwrap_or_default());
    if tgz.is_file() {
        Ok(tgz)
    } else {
        Err(format!(
            "npm pack {}: no tarball {}",
            dir.display(),
            tgz.display()
        ))
    }
}

/// Runs `cmd`, expecting success; its stdout.
fn ok(cmd: &mut Command, what: &str) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A new folder of this run's own under the temp folder: made with `mkdir`, which fails
/// where anything (another user's planted folder or link) already has the name.
fn exclusive_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let dir = base.join(format!(
            "hooks-app-dist-check-{}-{nanos:x}-{n}",
            std::process::id()
        ));
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        match b.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!("no new folder could be made in {}", base.display()))
}

/// Installs the tarballs offline into an empty prefix and checks the installed program.
fn check_install(tarballs: &[PathBuf], version: &str) -> Result<(), String> {
    let scratch = exclusive_dir()?;
    let (prefix, home) = (scratch.join("prefix"), scratch.join("home"));
    let (data, claude_home, proj) = (home.join("data"), home.join(".claude"), home.join("proj"));
    for d in [&prefix, &proj, &claude_home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let result = (|| {
        eprintln!(
            "xtask: dist: npm install -g --offline into {}",
            prefix.display()
        );
        ok(
            Command::new("npm")
                .args(["install", "-g", "--offline", "--no-audit", "--no-fund"])
                .arg("--prefix")
                .arg(&prefix)
                .arg("--cache")
                .arg(scratch.join("npm-cache"))
                .args(tarballs)
                .env("HOME", &home),
            "npm install -g",
        )?;
        let app = prefix.join("bin/hooks-app");
        let run = |args: &[&str]| {
            let mut c = Command::new(&app);
            c.arg("--data-dir")
                .arg(&data)
                .arg("--claude-home")
                .arg(&claude_home)
                .args(args)
                .current_dir(&proj)
                .env("HOME", &home)
                .env_remove("HOOKS_DATA_DIR")
                .env_remove("CLAUDECODE");
            ok(&mut c, &format!("hooks-app {}", args.join(" ")))
        };
        let v = ok(Command::new(&app).arg("--version"), "hooks-app --version")?;
        if !v.contains(version) {
            return Err(format!("hooks-app --version says {v:?}, not {version}"));
        }
        // The launcher passes the program's exit code on (a usage error is 2).
        let code = Command::new(&app)
            .arg("no-such-command")
            .output()
            .map_err(|e| e.to_string())?
            .status
            .code();
        if code != Some(2) {
            return Err(format!("hooks-app no-such-command exited {code:?}, not 2"));
        }
        run(&["init"])?;
        run(&["install", "--daemon", "none"])?;
        let settings = std::fs::read_to_string(claude_home.join("settings.json"))
            .map_err(|e| format!("install wrote no settings.json: {e}"))?;
        let command = settings
            .lines()
            .find_map(|l| {
                let v = l.trim().strip_prefix("\"command\": \"")?;
                Some(v.trim_end_matches(',').trim_end_matches('"').to_owned())
            })
            .ok_or_else(|| format!("no hook command in settings.json:\n{settings}"))?;
        let lib = prefix.join("lib/node_modules");
        let platform_bin = format!("{}/{SCOPE}/", lib.display());
        if command.contains(".js") || !command.contains(&platform_bin) {
            return Err(format!(
                "the hook command must name the platform binary under {platform_bin}, never the launcher: {command}"
            ));
        }
        // The plugin's record names the platform binary too.
        run(&["install", "--plugin", "--daemon", "none"])?;
        let record = claude_home.join("plugins/data/hooks-app-hooks-app/hooks-app.sh");
        let line = std::fs::read_to_string(&record)
            .map_err(|e| format!("install --plugin wrote no {}: {e}", record.display()))?;
        if line.contains(".js") || !line.contains(&platform_bin) {
            return Err(format!(
                "the plugin's record must name the platform binary under {platform_bin}, never the launcher: {line}"
            ));
        }
        // The hook as Claude Code runs it, on a turn that ended with DONE.
        let session = "5b3f8e2a-0c4d-4e6f-9a1b-2c3d4e5f6a7b";
        let input = format!(
            "{{\"session_id\":\"{session}\",\"transcript_path\":\"{}/projects/p/{session}.jsonl\",\"cwd\":\"{}\",\"hook_event_name\":\"Stop\",\"stop_hook_active\":false,\"last_assistant_message\":\"built it\\nDONE\"}}",
            claude_home.display(),
            proj.display()
        );
        let command = command.replace("\\\"", "\"").replace("\\\\", "\\");
        let mut hook = Command::new("/bin/sh");
        hook.args(["-c", &command])
            .current_dir(&proj)
            .env("HOME", &home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = hook.spawn().map_err(|e| format!("the hook: {e}"))?;
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().ok_or("the hook's stdin")?;
            stdin
                .write_all(input.as_bytes())
                .map_err(|e| e.to_string())?;
        }
        let o = child.wait_with_output().map_err(|e| e.to_string())?;
        let said = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() || !said.contains("post-task") {
            return Err(format!(
                "the hook ({}): {said}{}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        let pending = run(&["pending", "--json"])?;
        if !pending.contains(session) || !pending.contains("post-task") {
            return Err(format!("the hook queued nothing: {pending}"));
        }
        eprintln!(
            "xtask: dist: the npm install works: {} --version, init, install, and its hook queued post-task through {}",
            app.display(),
            command.split_whitespace().next().unwrap_or_default()
        );
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
