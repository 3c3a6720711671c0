//! `cargo xtask portability`: the code outside hooks-platform's Linux implementation builds
//! and behaves on macOS. Two rules, read from the source as text:
//!
//! - `/proc`, `inotify` and `std::os::linux` appear only in the Linux implementation
//!   (`crates/hooks-platform/src/imp/linux.rs`), never in code elsewhere (comments aside);
//! - every `libc::NAME` used elsewhere is defined for `target_os = "macos"` in the libc the
//!   lock file pins: in `src/unix/` outside `linux_like/`, or in `src/unix/bsd/apple/`.
//!
//! Test code and the test kit run on Linux only and are not read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file that may use what only Linux has.
pub const LINUX_IMPL: &str = "crates/hooks-platform/src/imp/linux.rs";

const LINUX_ONLY_TEXT: [&str; 3] = ["/proc", "inotify", "std::os::linux"];

/// Every finding in `files` (path, text), given the names libc defines for macOS.
pub fn findings(files: &[(String, String)], macos: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if path.ends_with(LINUX_IMPL) {
            continue;
        }
        for (n, line) in code_lines(text) {
            for t in LINUX_ONLY_TEXT {
                if line.contains(t) {
                    out.push(format!(
                        "{path}:{n}: `{t}` is Linux's: ask hooks-platform instead"
                    ));
                }
            }
            for name in libc_names(line) {
                if !macos.contains(&name) {
                    out.push(format!(
                        "{path}:{n}: libc::{name} does not exist on macOS: move it into {LINUX_IMPL} behind hooks-platform's API"
                    ));
                }
            }
        }
    }
    out
}

/// The lines of `text` that are code: line comments and doc comments left out, and
/// everything from `#[cfg(test)]` on (tests sit at the end of a file here).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("")))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// The names used as `libc::NAME` on a line.
fn libc_names(line: &str) -> Vec<String> {
    line.match_indices("libc::")
        .filter(|(i, _)| {
            // `libc::` itself, not the tail of another path.
            line[..*i]
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
        })
        .map(|(i, m)| {
            line[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The names libc defines in the files it compiles for macOS.
pub fn macos_names(libc_src: &Path) -> Result<BTreeSet<String>, String> {
    let mut names = BTreeSet::new();
    // The files at the top of src/ (lib.rs, macros.rs, primitives.rs, …) hold the C types
    // every platform shares.
    let mut files: Vec<PathBuf> = std::fs::read_dir(libc_src)
        .map_err(|e| format!("{}: {e}", libc_src.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    collect(&libc_src.join("unix"), &mut files)?;
    for shared in ["new/apple", "new/common"] {
        if libc_src.join(shared).is_dir() {
            collect(&libc_src.join(shared), &mut files)?;
        }
    }
    for f in files {
        let rel = f
            .strip_prefix(libc_src)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        let apple_or_shared = !rel.contains("linux_like")
            && !rel.contains("/haiku")
            && !rel.contains("/hurd")
            && !rel.contains("/redox")
            && !rel.contains("/solarish")
            && !rel.contains("/aix")
            && !rel.contains("/nto")
            && !rel.contains("/newlib")
            && !rel.contains("/nuttx")
            && !rel.contains("/cygwin")
            && !rel.contains("freebsdlike")
            && !rel.contains("netbsdlike");
        if !apple_or_shared {
            continue;
        }
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        // Re-exports (`pub use core::ffi::{c_char, c_int, …};`) name what they bring in.
        for (i, _) in text.match_indices("pub use ") {
            let stmt = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e)];
            let inner = stmt.rsplit(['{', ':']).next().unwrap_or("");
            for name in inner.split([',', '}', ' ', '\n']) {
                let name = name.trim();
                if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    names.insert(name.to_owned());
                }
            }
        }
        for word in ["fn ", "const ", "type ", "struct ", "union ", "static "] {
            for (i, _) in text.match_indices(word) {
                let before = text[..i].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = text[i + word.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        }
    }
    Ok(names)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// The `src` folder of the libc the lock file pins, from `cargo metadata`.
pub fn libc_src(root: &Path) -> Result<PathBuf, String> {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text
        .match_indices("\"manifest_path\":\"")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            &rest[..rest.find('"').unwrap_or(0)]
        })
        .find(|p| {
            Path::new(p)
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libc-0.2."))
        })
        .ok_or("cargo metadata names no libc 0.2")?;
    Ok(Path::new(at).parent().unwrap_or(Path::new(".")).join("src"))
}

/// The workspace's own sources that must build on macOS.
pub fn sources(root: &Path) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(root.join("crates")).map_err(|e| e.to_string())? {
        let krate = e.map_err(|e| e.to_string())?.path();
        if krate.file_name().is_some_and(|n| n == "hooks-testkit") {
            continue;
        }
        let src = krate.join("src");
        if src.is_dir() {
            collect(&src, &mut files)?;
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            std::fs::read_to_string(&f)
                .map(|t| (rel, t))
                .map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

pub fn run(root: &Path) -> Result<(), String> {
    let macos = macos_names(&libc_src(root)?)?;
    let files = sources(root)?;
    let found = findings(&files, &macos);
    if !found.is_empty() {
        return Err(format!(
            "code outside {LINUX_IMPL} would not build or work on macOS:\n  {}",
            found.join("\n  ")
        ));
    }
    eprintln!(
        "xtask: portability ok ({} files; libc names for macOS: {})",
        files.len(),
        macos.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn the_workspace_passes_and_a_planted_linux_call_fails() {
        let root = root();
        let macos = macos_names(&libc_src(&root).unwrap()).unwrap();
        for known in [
            "kill",
            "setsid",
            "mmap",
            "getpgid",
            "gethostname",
            "SIGKILL",
            "MAP_PRIVATE",
        ] {
            assert!(macos.contains(known), "{known} is in libc for macOS");
        }
        let mut files = sources(&root).unwrap();
        assert_eq!(findings(&files, &macos), Vec::<String>::new());

        files.push((
            "crates/hooks-store-json/src/planted.rs".into(),
            "fn w() { let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) }; }\n".into(),
        ));
        files.push((
            "crates/hooks-app/src/planted.rs".into(),
            "// /proc in a comment is fine\nfn h() -> String { std::fs::read_to_string(\"/proc/sys/kernel/hostname\").unwrap() }\n"
                .into(),
        ));
        let found = findings(&files, &macos);
        assert!(
            found
                .iter()
                .any(|f| f.contains("planted.rs:1: libc::inotify_init1 does not exist on macOS")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.contains("planted.rs:1: `inotify` is Linux's")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.contains("hooks-app/src/planted.rs:2: `/proc` is Linux's")),
            "{found:?}"
        );
        assert!(
            !found.iter().any(|f| f.contains("planted.rs:1: `/proc`")),
            "a comment is not code: {found:?}"
        );
    }
}
