//! Development tasks, std only.
//!
//! - `cargo xtask ci`: everything CI checks, in order: the pinned claude CLIs are installed,
//!   `cargo fmt --check`, clippy with `-D warnings` (all features, then Linux's), the
//!   layering and portability checks, the whole test suite on Linux's platform code with
//!   the oldest pinned Claude Code and again on the portable one with the newest, the
//!   planted store mistakes the contract must catch, the API docs, every publishable crate
//!   packed, the conformance checks when the shared folder is beside the project, a 60 s fuzz
//!   run of the HTTP API against its OpenAPI document, a quick benchmark so it cannot rot,
//!   and the npm packages built and installed offline (`dist --check`).
//! - `cargo xtask conformance`: the checks against outside material in the shared folder
//!   (`$HOOKS_SHARED`, or `../shared` beside the project): real third-party transcripts, and
//!   the original Python module reading and writing this project's store.
//! - `cargo xtask deps`: installs what the tests need (the pinned claude CLIs, from npm).
//! - `cargo xtask layering [--graph]`: proves the crate boundaries with `cargo tree`, and that
//!   no files of a crate import each other in a loop (modules.rs); `--graph` prints the
//!   module graph of every crate.
//! - `cargo xtask portability`: the code outside hooks-platform's Linux implementation
//!   uses nothing only Linux has (portability.rs).
//! - `cargo xtask fuzz-api [SECONDS]`: schemathesis against a real `serve --http` (fuzz.rs).
//! - `cargo xtask mutants [WHICH]`: plants typical store mistakes one at a time and
//!   proves the store contract catches each (mutants.rs).
//! - `cargo xtask api [--bless]`: every publishable crate's public items against the
//!   recorded baseline in docs/api/ (api.rs); `--bless` records them.
//! - `cargo xtask man`: writes the man page, `target/man/hooks-app.1`, from the CLI itself.
//! - `cargo xtask bench [--quick] [--json]`: measures the performance targets (see bench.rs).
//! - `cargo xtask dist [--check]`: the npm packages under `target/dist/npm/` (dist.rs);
//!   `--check` installs them offline into an empty prefix and tries the installed program.

mod api;
mod bench;
mod deps;
mod dist;
mod fuzz;
mod modules;
mod mutants;
mod portability;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The Claude Code versions the tests pin: the oldest supported and the newest at the time
/// of writing (the same list as hooks-testkit's `CLAUDE_VERSIONS`).
pub const CLAUDE_VERSIONS: [&str; 2] = ["2.1.197", "2.1.332"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_owned()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

/// Cargo verifies a package against the others through a local registry, and keeps what
/// it unpacks from it under `$CARGO_HOME/registry/src/-<hash>/<name>-<version>` (the hash
/// is the registry's path, the same for every run from one checkout) and what it builds
/// from it by name and version alone: a second run would check this tree's crates against
/// the last run's. Those unpacked copies of this workspace's crates are removed first, and
/// the check builds in a target folder of its own, emptied first.
fn forget_packed_copies() -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry/src")) else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    // Local registries only (crates.io's folder is named for its host): this workspace's
    // crate names.
    for reg in registries.flatten() {
        if !reg.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for krate in std::fs::read_dir(reg.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if krate.file_name().to_string_lossy().starts_with("hooks-") {
                std::fs::remove_dir_all(krate.path())
                    .map_err(|e| format!("{}: {e}", krate.path().display()))?;
            }
        }
    }
    Ok(())
}

fn step(name: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: {name}");
    let status = cmd
        .status()
        .map_err(|e| format!("{name}: could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("deps") => deps(),
        Some("conformance") => conformance(),
        Some("man") => man(),
        Some("layering") if rest.first() == Some(&"--graph") => {
            modules::graph(&root()).map(|g| print!("{g}"))
        }
        Some("layering") => layering(),
        Some("portability") => portability::run(&root()),
        Some("mutants") => mutants::run(rest.first().copied()),
        Some("api") => api::run(&root(), rest.first() == Some(&"--bless")),
        Some("bench") => bench::run(&root(), &rest),
        Some("dist") => dist::run(&root(), &rest),
        Some("fuzz-api") => fuzz::run(
            &root(),
            rest.first().and_then(|s| s.parse().ok()).unwrap_or(60),
        ),
        _ => Err(
            "usage: cargo xtask ci | deps | conformance | layering [--graph] | portability | mutants [WHICH] | api [--bless] | man | fuzz-api [SECONDS] | bench [--quick] [--json] [--markdown] | dist [--check]"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn man() -> Result<(), String> {
    step(
        "cargo build -p hooks-app",
        cargo().args(["build", "-q", "-p", "hooks-app"]),
    )?;
    let bin = root().join("target/debug/hooks-app");
    let out = Command::new(&bin)
        .arg("man")
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "hooks-app man failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dir = root().join("target/man");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let page = dir.join("hooks-app.1");
    std::fs::write(&page, &out.stdout).map_err(|e| e.to_string())?;
    eprintln!(
        "xtask: wrote {} (read it with: man -l {})",
        page.display(),
        page.display()
    );
    Ok(())
}

/// The shared folder of outside material, if it is there.
fn shared() -> Option<PathBuf> {
    let p =
        std::env::var_os("HOOKS_SHARED").map_or_else(|| root().join("../shared"), PathBuf::from);
    p.join("fixtures/claude-transcripts/README.md")
        .exists()
        .then_some(p)
}

fn conformance() -> Result<(), String> {
    let Some(dir) = shared() else {
        return Err(format!(
            "the shared folder is missing: expected {} with fixtures/claude-transcripts/ (or set HOOKS_SHARED)",
            root().join("../shared").display()
        ));
    };
    step(
        "conformance (real transcripts, the original module)",
        cargo()
            .args([
                "test",
                "-p",
                &package("hooks-meta"),
                "-p",
                &package("hooks-store-json"),
            ])
            .arg("--features")
            .arg(format!(
                "{}/conformance,{}/conformance",
                package("hooks-meta"),
                package("hooks-store-json")
            ))
            .args(["--test", "conformance"])
            .env("HOOKS_SHARED", &dir),
    )
}

/// The Codex CLI release the tests pin (the same as hooks-testkit's `CODEX_VERSION`).
pub const CODEX_VERSION: &str = "0.171.0";

/// Installs the pinned claude CLIs and the pinned Codex CLI into target/test-deps (where
/// hooks-testkit looks).
fn deps() -> Result<(), String> {
    for v in CLAUDE_VERSIONS {
        install_claude(v)?;
    }
    install_codex()
}

fn install_codex() -> Result<(), String> {
    install_cli("@openai/codex", CODEX_VERSION, "codex", "codex")
}

fn install_claude(want: &str) -> Result<(), String> {
    install_cli("@anthropic-ai/claude-code", want, "claude-code", "claude")
}

/// Installs `package@version` from npm into `target/test-deps/<folder>-<version>` (where
/// hooks-testkit looks) unless its `bin` already reports that version.
fn install_cli(package: &str, version: &str, folder: &str, bin: &str) -> Result<(), String> {
    let dir = root().join(format!("target/test-deps/{folder}-{version}"));
    let bin = dir.join("node_modules/.bin").join(bin);
    let reported = |b: &Path| {
        Command::new(b)
            .arg("--version")
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    if !reported(&bin).contains(version) {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        step(
            &format!("npm install {package}@{version}"),
            Command::new("npm")
                .args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                ])
                .arg(&dir)
                .arg(format!("{package}@{version}")),
        )
        .map_err(|e| format!("{e}: the tests need the real CLI from the npm registry"))?;
    }
    let v = reported(&bin);
    if !v.contains(version) {
        return Err(format!("{} reports {v:?}, not {version}", bin.display()));
    }
    eprintln!("xtask: {v} at {}", bin.display());
    Ok(())
}

/// The package a crate under `crates/` is published as: its folder's name under this
/// project's prefix (`hooks-core` is `hooks-app-core`), for `cargo -p`. The binary's crate
/// and the test kit keep their names.
pub fn package(dir: &str) -> String {
    match dir.strip_prefix("hooks-") {
        Some(rest) if dir != "hooks-app" && dir != "hooks-testkit" => format!("hooks-app-{rest}"),
        _ => dir.to_owned(),
    }
}

/// The core's normal dependencies hold no runtime, no JSON and no process or file-system
/// crate; adapters depend on the core and never on each other.
fn layering() -> Result<(), String> {
    let tree = |pkg: &str| -> Result<Vec<String>, String> {
        let out = cargo()
            .args([
                "tree",
                "-p",
                &package(pkg),
                "-e",
                "normal",
                "--prefix",
                "none",
                "--format",
                "{p}",
            ])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect())
    };
    let core = tree("hooks-core")?;
    let banned = [
        "tokio",
        "serde_json",
        "libc",
        "nix",
        "mio",
        "fs2",
        "fs4",
        "fs-err",
        "tempfile",
        "notify",
        "async-std",
        "smol",
        "rustix",
    ];
    let found: Vec<&String> = core
        .iter()
        .filter(|c| banned.contains(&c.as_str()))
        .collect();
    if !found.is_empty() {
        return Err(format!(
            "hooks-core's normal dependencies must do no IO, but include {found:?}"
        ));
    }
    // Each crate depends only on what its line in xtask/src/deps.rs allows: adapters on
    // the core (and the platform), never on each other.
    let broken = deps::violations(&deps::read(&root())?);
    if !broken.is_empty() {
        return Err(format!("crate dependencies:\n  {}", broken.join("\n  ")));
    }
    for pkg in [
        "hooks-core",
        "hooks-platform",
        "hooks-store-json",
        "hooks-store-postgres",
        "hooks-meta",
        "hooks-runner-claude",
        "hooks-runner-codex",
        "hooks-runner-webhook",
        "hooks-claude-code",
        "hooks-shapes",
        "hooks-http",
        "hooks-mcp",
        "hooks-prompts",
        "hooks-alerts",
        "hooks-runtime",
        "hooks-app",
    ] {
        if tree(pkg)?
            .iter()
            .any(|d| d == "hooks-testkit" || d == "mockall")
        {
            return Err(format!(
                "{pkg} has a test-only crate among its normal dependencies"
            ));
        }
    }
    // Only the composition root names adapters: the rest of the app works through ports.
    let adapter_names = [
        "hooks_store_json",
        "hooks_store_postgres",
        "hooks_meta::MetaStore",
        "hooks_runner_claude",
        "hooks_runner_webhook",
        "FilePrompts",
        "JsonStore",
        "PgStore",
        "SessionFiles",
        "ClaudeRunner",
        "WebhookRunner",
    ];
    let mut naming = Vec::new();
    for (module, text) in modules::read_app(&root())? {
        if module == "compose" || module.starts_with("compose::") || module.starts_with("compose/")
        {
            continue;
        }
        for name in adapter_names.iter().filter(|n| text.contains(*n)) {
            naming.push(format!("hooks-app's {module} names {name}"));
        }
    }
    if !naming.is_empty() {
        return Err(format!(
            "only hooks-app's compose/ picks adapters, but {}",
            naming.join("; ")
        ));
    }
    // The clap types are the command line's own: only the commands (and the crate root,
    // which parses the line) name them; the rest takes options the commands convert.
    let naming_cli = modules::naming_clap(&modules::read_app(&root())?);
    if !naming_cli.is_empty() {
        return Err(format!(
            "only hooks-app's commands name the clap types (cli), but {} do",
            naming_cli.join(", ")
        ));
    }
    // hooks-app's modules keep their layers: nothing names a module above it.
    let breaches = modules::layer_breaches(&modules::read_app(&root())?, modules::APP_LAYERS);
    if !breaches.is_empty() {
        return Err(format!(
            "hooks-app's layers (xtask/src/modules.rs APP_LAYERS):\n  {}",
            breaches.join("\n  ")
        ));
    }
    // No files of a crate import each other in a loop.
    let loops = modules::check(&root())?;
    if !loops.is_empty() {
        return Err(format!(
            "module loops (break each by moving what both need into a module below them):\n  {}",
            loops.join("\n  ")
        ));
    }
    eprintln!("xtask: layering ok (hooks-core: {})", core.join(", "));
    Ok(())
}

fn ci() -> Result<(), String> {
    deps()?;
    step(
        "cargo fmt --check",
        cargo().args(["fmt", "--all", "--", "--check"]),
    )?;
    // Twice: with every feature (the portable platform code among them), and as a Linux
    // build has it (the Linux platform code).
    step(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (the Linux platform code)",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    layering()?;
    portability::run(&root())?;
    let nextest = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let tests = |name: &str, args: &[&str], env: &[(&str, &str)]| {
        let mut c = cargo();
        if nextest {
            c.args(["nextest", "run", "--no-fail-fast"]);
        } else {
            c.args(["test", "--no-fail-fast"]);
        }
        c.args(args).envs(env.iter().copied());
        step(name, &mut c)
    };
    // Every test twice, each Claude Code on one platform code: Linux's with the oldest
    // supported release, the portable one (what a Mac runs) with the newest, the release
    // most people have. Each real-CLI test so runs once on each release, once on each
    // platform code, without a third pass.
    let newest = CLAUDE_VERSIONS[CLAUDE_VERSIONS.len() - 1];
    let linux = tests("tests", &["--workspace"], &[]);
    let portable = tests(
        &format!("tests (portable platform code, Claude Code {newest})"),
        &["--workspace", "--features", "hooks-app/portable"],
        &[("HOOKS_TEST_CLAUDE_VERSION", newest)],
    );
    linux?;
    portable?;
    mutants::run(None)?;
    step("doc tests", cargo().args(["test", "--workspace", "--doc"]))?;
    // The API docs build without a broken or private link, the test kit included.
    step(
        "docs",
        cargo()
            .args(["doc", "--workspace", "--no-deps", "--features"])
            .arg(format!("{}/mocks", package("hooks-core")))
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    // The public face as recorded: a removal or an addition is seen and reviewed.
    api::run(&root(), false)?;
    // Every crate a team needs packs as crates.io would take it (versions on every
    // dependency between them, a licence, a readme, keywords and categories) and builds
    // from its package alone, in dependency order, against the others' packages.
    forget_packed_copies()?;
    let packed = root().join("target/package-check");
    let _ = std::fs::remove_dir_all(&packed);
    step(
        "package",
        cargo().env("CARGO_TARGET_DIR", &packed).args([
            "package",
            "--workspace",
            "--allow-dirty",
            "--exclude",
            "hooks-testkit",
            "--exclude",
            "xtask",
            "--exclude",
            "hooks-example-script-agent",
        ]),
    )?;
    // A team's crate outside the workspace, set up as docs/adapters.md says, builds and
    // passes the contract through the documented manifest alone.
    step(
        "a crate outside the workspace (tests/outside-crate)",
        cargo()
            .env("CARGO_TARGET_DIR", root().join("target/outside"))
            .args(["test", "--manifest-path"])
            .arg(root().join("tests/outside-crate/Cargo.toml")),
    )?;
    if shared().is_some() {
        conformance()?;
    } else {
        eprintln!(
            "xtask: conformance not run: no shared folder beside the project (../shared or $HOOKS_SHARED); `cargo xtask conformance` runs it"
        );
    }
    fuzz::run(&root(), 60)?;
    bench::run(&root(), &["--quick"])?;
    // After the bench, whose release build the host's npm package takes.
    dist::run(&root(), &["--check"])
}
