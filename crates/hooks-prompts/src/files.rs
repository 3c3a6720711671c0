//! Prompt files on disk: looked up in the session's own project first, then in the
//! workspace. And the seeded hooks' prompts that `init` writes.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hooks_core::PromptFile;
use hooks_core::ports::{PromptError, PromptSource};
use hooks_core::prompt::{Prompt, parse_prompt};

use crate::trust::MAX_PROMPT_BYTES;

/// The post-task prompt `init` writes when the workspace has none. Its frontmatter has a
/// `name` but no `description`: Claude Code registers `.claude/agents/**/*.md` files that
/// have both as subagents, and a hook prompt must not become one.
pub const DEFAULT_POST_TASK_PROMPT: &str = "---
name: post-task
---

You finished the task in this conversation a moment ago. This is a short tidy-up pass on
that same work: go through the list below, act only where something really needs doing,
and keep each step small. Nothing here is new feature work.

1. Lessons. If this task taught something that the code does not show (a trap, a
   constraint, an approach that failed), write it down where this project keeps such
   notes, once, in a sentence or two.
2. Documentation. If the change alters how the project is built, run, configured or
   used, bring the README and other docs in line with how things are now.
3. Artefacts. Keep what is worth keeping (reports, screenshots, generated samples) in
   the place this project uses for them, and leave scratch files out of the tree.
4. Clean-up. Stop background processes and dev servers you started and no longer need,
   and remove temporary branches or worktrees you created once their work is merged.
5. Changelog. If the project keeps a changelog, add the user-facing entry for this work.

Do not announce the task as done again and do not start anything new. If none of the
steps applies, say so in one line.

Finish your reply with the word COMPLETED alone on its last line.
";

/// The folder of the data folder that holds the prompts of follow-ups at a time.
pub const KEPT_DIR: &str = "scheduled";

/// Reads prompt files from the session's project, when the user approved them there, or
/// from the workspace.
pub struct FilePrompts {
    workspace: PathBuf,
    /// Where `trust.json` is; `None`: no project file is ever approved.
    data_dir: Option<PathBuf>,
}

/// Where a prompt came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The user's workspace.
    Workspace(PathBuf),
    /// The conversation's project, approved with these contents.
    Approved(PathBuf),
}

impl FilePrompts {
    pub fn new(workspace: &Path, data_dir: &Path) -> Self {
        Self {
            workspace: workspace.to_owned(),
            data_dir: Some(data_dir.to_owned()),
        }
    }

    /// The places `file` is looked for, in order: the session's project (when it is not
    /// the workspace), then the workspace.
    pub fn candidates(&self, file: &PromptFile, session_cwd: Option<&str>) -> Vec<PathBuf> {
        let mut c = Vec::new();
        if let Some(project) = self.project(session_cwd) {
            c.push(project.join(file.as_str()));
        }
        c.push(self.workspace.join(file.as_str()));
        c
    }

    /// Where [`PromptSource::save`] keeps prompts: `<data-dir>/scheduled/`.
    fn kept_dir(&self) -> Option<PathBuf> {
        self.data_dir.as_ref().map(|d| d.join(KEPT_DIR))
    }

    /// The session's project, when it is another folder than the workspace.
    fn project(&self, session_cwd: Option<&str>) -> Option<PathBuf> {
        let cwd = Path::new(session_cwd?);
        if !cwd.is_absolute() {
            return None;
        }
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        (canon(cwd) != canon(&self.workspace)).then(|| cwd.to_owned())
    }

    /// The prompt a follow-up in `session_cwd` runs, and where it came from.
    pub fn resolve(
        &self,
        file: &PromptFile,
        session_cwd: Option<&str>,
    ) -> Result<(Prompt, Origin), PromptError> {
        let name = Path::new(file.as_str())
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(file.as_str());
        // A follow-up at a time's own prompt, kept in the data folder by `save`: the
        // person's (or their agent's) words, which no folder a conversation is in shadows.
        if let Some(dir) = self.kept_dir()
            && let Some((real, bytes)) =
                crate::trust::read_prompt_file(&dir, name, MAX_PROMPT_BYTES)
                    .map_err(PromptError::Unreadable)?
        {
            return parse(&real, &bytes).map(|p| (p, Origin::Workspace(real)));
        }
        let mut unapproved = None;
        // A project prompt folder that leads into another project is used for nothing: the
        // workspace's file runs, or the follow-up says why none could.
        let mut led_out = None;
        if let Some(project) = self.project(session_cwd) {
            let dir = crate::trust::project_prompt_dir(&project);
            if let Err(why) = &dir {
                led_out = Some(why.clone());
            }
            if let Ok(dir) = dir
                && let Some((real, bytes)) =
                    crate::trust::read_prompt_file(&dir, name, MAX_PROMPT_BYTES)
                        .map_err(PromptError::Unreadable)?
            {
                let trust = match &self.data_dir {
                    Some(d) => crate::trust::TrustList::load(d).map_err(PromptError::Unreadable)?,
                    None => crate::trust::TrustList::default(),
                };
                if runs_as_approved(&trust, &real, name, &bytes) {
                    return parse(&real, &bytes).map(|p| (p, Origin::Approved(real)));
                }
                unapproved = Some((real, project));
            }
        }
        let dir = crate::trust::prompt_dir(&self.workspace);
        match crate::trust::read_prompt_file(&dir, name, MAX_PROMPT_BYTES)
            .map_err(PromptError::Unreadable)?
        {
            Some((real, bytes)) => parse(&real, &bytes).map(|p| (p, Origin::Workspace(real))),
            None => Err(match (led_out, unapproved) {
                (Some(why), _) => PromptError::Unreadable(why),
                (None, Some((real, project))) => PromptError::Unapproved {
                    file: real.display().to_string(),
                    project: hooks_platform::shell_quote(&project.to_string_lossy()),
                },
                (None, None) => PromptError::NotFound {
                    file: file.to_string(),
                    looked_in: self
                        .candidates(file, session_cwd)
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                },
            }),
        }
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Prompt, PromptError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| PromptError::Unreadable(format!("{}: is not UTF-8 text", path.display())))?;
    parse_prompt(text).map_err(|error| PromptError::Invalid {
        file: path.display().to_string(),
        error,
    })
}

#[async_trait]
impl PromptSource for FilePrompts {
    async fn load<'a>(
        &self,
        file: &PromptFile,
        session_cwd: Option<&'a str>,
    ) -> Result<Prompt, PromptError> {
        self.resolve(file, session_cwd).map(|(p, _)| p)
    }

    /// Writes `text` to `<data-dir>/scheduled/<name>` (a private folder, the file 0600),
    /// never over a file already there.
    async fn save(&self, file: &PromptFile, text: &str) -> Result<bool, PromptError> {
        let Some(dir) = self.kept_dir() else {
            return Err(PromptError::Unreadable(format!(
                "{file}: no data folder to keep it in"
            )));
        };
        let name = Path::new(file.as_str())
            .file_name()
            .unwrap_or_default()
            .to_owned();
        let path = dir.join(name);
        let fail = |e: std::io::Error| PromptError::Unreadable(format!("{}: {e}", path.display()));
        hooks_platform::files::create_private_dir(&dir).map_err(fail)?;
        let opened = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
        };
        let mut f = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(fail(e)),
        };
        std::io::Write::write_all(&mut f, text.as_bytes()).map_err(fail)?;
        f.sync_all().map_err(fail)?;
        Ok(true)
    }
}

/// The prompt of the seeded `continue-after-limit` hook, written by `init` beside the
/// post-task one.
pub const DEFAULT_CONTINUE_PROMPT: &str = "---
name: continue-after-limit
---

You were stopped by a usage or capacity limit ({{error}}) in the middle of the task in
this conversation. The limit has reset now. Carry on with the task exactly where you
stopped: do not start over, do not repeat work that is already done, and do not ask
whether to continue.

When the task is finished, end your reply with the word DONE alone on its last line.
";

/// The prompts `init` writes: the seeded hooks' files, by name.
pub const DEFAULT_PROMPTS: [(&str, &str); 2] = [
    ("post-task.md", DEFAULT_POST_TASK_PROMPT),
    ("continue-after-limit.md", DEFAULT_CONTINUE_PROMPT),
];

/// Whether a project's prompt file `name` at `real`, holding `bytes`, may run: the person
/// approved exactly these contents, or they are hooks-app's own default, byte for byte (as
/// `init` wrote it there), which says nothing a repository chose; so a project `init` set
/// up keeps its prompts whichever folder is the workspace now, and a changed one waits.
pub fn runs_as_approved(
    trust: &crate::trust::TrustList,
    real: &Path,
    name: &str,
    bytes: &[u8],
) -> bool {
    trust.approves(real, bytes)
        || DEFAULT_PROMPTS
            .iter()
            .any(|(n, text)| *n == name && text.as_bytes() == bytes)
}

/// Writes the seeded hooks' prompts into `workspace`, each unless a file is already there.
/// Returns each path, and whether it was written.
pub fn write_default_prompts(workspace: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
    let dir = workspace.join(hooks_core::PROMPT_DIR);
    let mut out = Vec::new();
    for (name, text) in DEFAULT_PROMPTS {
        let path = dir.join(name);
        if path.exists() {
            out.push((path, false));
            continue;
        }
        std::fs::create_dir_all(&dir)?;
        let mut f = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                out.push((path, false));
                continue;
            }
            Err(e) => return Err(e),
        };
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        out.push((path, true));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A kept prompt is found from any folder, before a project's file of its name (which
    /// a repository could have planted), and is never written over.
    #[tokio::test]
    async fn a_kept_prompt_is_private_never_overwritten_and_no_project_shadows_it() {
        let d = tempfile::tempdir().unwrap();
        let (workspace, data, project) =
            (d.path().join("w"), d.path().join("d"), d.path().join("p"));
        for dir in [&workspace, &data, &project] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let prompts = FilePrompts::new(&workspace, &data);
        let file = PromptFile::parse(".claude/agents/hooks/after-1.md").unwrap();
        let planted = project.join(hooks_core::PROMPT_DIR);
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(planted.join("after-1.md"), "the repository's words").unwrap();
        assert!(
            prompts
                .save(&file, "---\nname: after-1\n---\n\ncheck CI\n")
                .await
                .unwrap()
        );
        assert!(
            !prompts.save(&file, "other words").await.unwrap(),
            "never over a kept one"
        );
        let kept = data.join(KEPT_DIR).join("after-1.md");
        assert_eq!(
            std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(data.join(KEPT_DIR))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        let p = prompts
            .load(&file, Some(project.to_str().unwrap()))
            .await
            .unwrap();
        assert_eq!(p.body.trim(), "check CI");
    }
}
