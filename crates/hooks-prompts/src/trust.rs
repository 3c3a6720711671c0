//! Which prompt files from a conversation's own project the user approved.
//!
//! A repository is not the user: a cloned project's `.claude/agents/hooks/post-task.md`
//! would otherwise decide what an unattended agent does with the user's credentials. As
//! direnv's `allow` and mise's `trust` do, a project's prompt file is used only after
//! `hooks-app trust DIR` recorded its content hash in `<data-dir>/trust.json`; a changed
//! file needs approval again. The user's own workspace needs none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file, in the data folder.
pub const TRUST_FILE: &str = "trust.json";
/// The largest trust file read.
const MAX_TRUST_BYTES: u64 = 4 * 1024 * 1024;

/// One approved file: its content's hash, and when it was approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub sha256: String,
    pub approved_at: String,
}

/// The approvals, by the file's absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustList {
    #[serde(default)]
    pub files: BTreeMap<String, Approval>,
}

/// A content hash as trust.json keeps it.
pub fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TrustList {
    /// The list in `data_dir` (empty when there is none). A file that does not parse is an
    /// error: approvals are never guessed.
    pub fn load(data_dir: &Path) -> Result<Self, String> {
        let path = data_dir.join(TRUST_FILE);
        let bytes = match hooks_platform::read_regular(
            &path,
            hooks_platform::ReadLimit::bytes(MAX_TRUST_BYTES),
        ) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("could not read {}: {e}", path.display())),
        };
        serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{}: not a valid trust file at line {}, column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })
    }

    /// Writes the list (0600), whole, by rename. An error names the file.
    pub fn save(&self, data_dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| format!("could not serialise the trust list: {e}"))?;
        let path = data_dir.join(TRUST_FILE);
        hooks_platform::files::write_private(&path, &format!("{text}\n"))
            .map_err(|e| format!("could not write {}: {e}", path.display()))
    }

    /// Whether `path` is approved with exactly these contents.
    pub fn approves(&self, path: &Path, bytes: &[u8]) -> bool {
        self.files
            .get(path.to_string_lossy().as_ref())
            .is_some_and(|a| a.sha256 == hash(bytes))
    }
}

/// The prompt folder of `project`, as its canonical path.
pub fn prompt_dir(project: &Path) -> PathBuf {
    let dir = project.join(hooks_core::PROMPT_DIR);
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// The prompt folder of a project whose files need approval, as its canonical path, when
/// it lies inside the project: an approval holds for the project that was approved and its
/// own files, so a folder (or `.claude`) that is a link into another project, whose files
/// the user approved there, is refused with an error that says where it leads.
pub fn project_prompt_dir(project: &Path) -> Result<PathBuf, String> {
    let dir = prompt_dir(project);
    let home = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    if dir.exists() && !dir.starts_with(&home) {
        return Err(format!(
            "{} leads out of its project (to {}): an approval holds for a project's own files, so none of these is used",
            project.join(hooks_core::PROMPT_DIR).display(),
            dir.display()
        ));
    }
    Ok(dir)
}

/// A prompt file's bytes, read without following a link out of its folder: a link to
/// another file of the same folder is followed, any other link, a FIFO or a device is an
/// error that says so. `Ok(None)` when there is no such file. Returns the canonical path.
pub fn read_prompt_file(
    dir: &Path,
    name: &str,
    max: u64,
) -> Result<Option<(PathBuf, Vec<u8>)>, String> {
    let path = dir.join(name);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let real = if meta.file_type().is_symlink() {
        let target = std::fs::canonicalize(&path)
            .map_err(|e| format!("{}: a link that leads nowhere: {e}", path.display()))?;
        let home = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        if target.parent() != Some(home.as_path()) {
            return Err(format!(
                "{} is a symbolic link out of its folder (to {}): it is not followed",
                path.display(),
                target.display()
            ));
        }
        target
    } else {
        std::fs::canonicalize(&path).unwrap_or(path)
    };
    let bytes =
        hooks_platform::read_regular(&real, hooks_platform::ReadLimit::bytes(max).no_follow())
            .map_err(|e| format!("{}: {e}", real.display()))?;
    Ok(Some((real, bytes)))
}

/// The prompt files of a project, by name, sorted.
pub fn project_prompt_names(project: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(project.join(hooks_core::PROMPT_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// The largest prompt file read.
pub const MAX_PROMPT_BYTES: u64 = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_folder_is_not_followed_one_inside_is() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("p/.claude/agents/hooks");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.md"), "inside").unwrap();
        std::fs::write(d.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), dir.join("out.md")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.md"), dir.join("b.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd.md")).unwrap();
        let e = read_prompt_file(&dir, "out.md", 1024).unwrap_err();
        assert!(e.contains("symbolic link out of its folder"), "{e}");
        let e = read_prompt_file(&dir, "passwd.md", 1024).unwrap_err();
        assert!(e.contains("symbolic link out of its folder"), "{e}");
        let (_, b) = read_prompt_file(&dir, "b.md", 1024).unwrap().unwrap();
        assert_eq!(b, b"inside");
        assert!(read_prompt_file(&dir, "none.md", 1024).unwrap().is_none());
    }

    #[test]
    fn an_approval_holds_for_the_same_bytes_only() {
        let d = tempfile::tempdir().unwrap();
        let mut t = TrustList::default();
        let p = Path::new("/p/.claude/agents/hooks/x.md");
        t.files.insert(
            p.to_string_lossy().into_owned(),
            Approval {
                sha256: hash(b"one"),
                approved_at: "2026-12-03T00:00:00+0000".into(),
            },
        );
        t.save(d.path()).unwrap();
        let back = TrustList::load(d.path()).unwrap();
        assert!(back.approves(p, b"one"));
        assert!(!back.approves(p, b"one "), "a changed file");
        assert!(!back.approves(Path::new("/q/x.md"), b"one"));
        std::fs::write(d.path().join(TRUST_FILE), "{").unwrap();
        let e = TrustList::load(d.path()).unwrap_err();
        assert!(e.contains("not a valid trust file"), "{e}");
    }
}
