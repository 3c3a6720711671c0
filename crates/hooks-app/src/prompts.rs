//! Prompt files on disk: looked up in the session's own project first, then in the
//! workspace. And the default post-task prompt that `init` writes.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hooks_core::PromptFile;
use hooks_core::ports::{PromptError, PromptSource};
use hooks_core::prompt::{Prompt, parse_prompt};

/// The largest prompt file read.
const MAX_PROMPT_BYTES: u64 = 256 * 1024;

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

/// Reads prompt files from the session's project or the workspace.
pub struct FilePrompts {
    workspace: PathBuf,
}

impl FilePrompts {
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_owned(),
        }
    }

    /// The places `file` is looked for, in order.
    pub fn candidates(&self, file: &PromptFile, session_cwd: Option<&str>) -> Vec<PathBuf> {
        let mut c = Vec::new();
        if let Some(cwd) = session_cwd.filter(|c| Path::new(c).is_absolute()) {
            c.push(Path::new(cwd).join(file.as_str()));
        }
        let ws = self.workspace.join(file.as_str());
        if !c.contains(&ws) {
            c.push(ws);
        }
        c
    }
}

#[async_trait]
impl PromptSource for FilePrompts {
    async fn load<'a>(
        &self,
        file: &PromptFile,
        session_cwd: Option<&'a str>,
    ) -> Result<Prompt, PromptError> {
        let candidates = self.candidates(file, session_cwd);
        let Some(path) = candidates.iter().find(|p| p.is_file()) else {
            let looked_in = candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PromptError::NotFound {
                file: file.to_string(),
                looked_in,
            });
        };
        let too_big = std::fs::metadata(path)
            .map(|m| m.len() > MAX_PROMPT_BYTES)
            .unwrap_or(false);
        if too_big {
            return Err(PromptError::Unreadable(format!(
                "{} is over {MAX_PROMPT_BYTES} bytes",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| PromptError::Unreadable(format!("{}: {e}", path.display())))?;
        parse_prompt(&text).map_err(|error| PromptError::Invalid {
            file: path.display().to_string(),
            error,
        })
    }
}

/// Writes the default post-task prompt into `workspace` unless a file is already there.
/// Returns the path when it wrote one.
pub fn write_default_prompt(workspace: &Path) -> std::io::Result<Option<PathBuf>> {
    let path = workspace.join(hooks_core::PROMPT_DIR).join("post-task.md");
    if path.exists() {
        return Ok(None);
    }
    std::fs::create_dir_all(path.parent().unwrap_or(workspace))?;
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(e),
    };
    std::io::Write::write_all(&mut f, DEFAULT_POST_TASK_PROMPT.as_bytes())?;
    Ok(Some(path))
}
