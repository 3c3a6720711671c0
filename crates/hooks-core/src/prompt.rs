//! Prompt files: an optional `---` frontmatter block, then the body sent to Claude.
//!
//! The frontmatter is a small subset of YAML: `key: value` lines, quoted or not, and
//! `key:` followed by `- item` lines for lists. Keys this module does not know are ignored.

use crate::model::ValidationError;

/// The `claude` options a prompt file may set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// The model to run with (`--model`).
    pub model: Option<String>,
    /// The permission mode (`--permission-mode`).
    pub permission_mode: Option<String>,
    /// The most turns (`--max-turns`).
    pub max_turns: Option<u32>,
    /// The tools allowed (`--allowedTools`).
    pub allowed_tools: Vec<String>,
    /// Text appended to the system prompt (kept off the command line).
    pub append_system_prompt: Option<String>,
    /// Claude stops a run that spends more than this (the hook's cost cap); not from the
    /// prompt file.
    pub max_budget: crate::model::CostCap,
}

impl RunOptions {
    /// The command-line arguments these options become, in a fixed order. The appended
    /// system prompt is not among them: it is prompt text, which no command line carries
    /// (every local user can read `/proc/*/cmdline`); a runner passes it as a private file.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(m) = &self.model {
            args.extend(["--model".to_owned(), m.clone()]);
        }
        if let Some(p) = &self.permission_mode {
            args.extend(["--permission-mode".to_owned(), p.clone()]);
        }
        if let Some(n) = self.max_turns {
            args.extend(["--max-turns".to_owned(), n.to_string()]);
        }
        if !self.allowed_tools.is_empty() {
            args.extend(["--allowedTools".to_owned(), self.allowed_tools.join(",")]);
        }
        if let Some(usd) = self.max_budget.usd() {
            args.extend(["--max-budget-usd".to_owned(), usd.to_string()]);
        }
        args
    }
}

/// A parsed prompt file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Prompt {
    /// The prompt's text, its `{{variables}}` filled once rendered.
    pub body: String,
    /// How it is to run (its frontmatter's options).
    pub options: RunOptions,
}

impl Prompt {
    /// A prompt of `body` run with `options`.
    pub fn new(body: impl Into<String>, options: RunOptions) -> Self {
        Self {
            body: body.into(),
            options,
        }
    }
}

/// Splits a file into its frontmatter lines (without the fences) and its body. A file
/// without a closing fence has no frontmatter.
pub fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = t
        .strip_prefix("---\n")
        .or_else(|| t.strip_prefix("---\r\n"))
    else {
        return (None, t);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let fm = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return (Some(fm), body);
        }
        offset += line.len();
    }
    (None, t)
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// `key: value` pairs, with `- item` lists joined by newlines so a list and a
/// comma-separated value both reach [`split_list`].
fn pairs(frontmatter: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in frontmatter.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(item) = trimmed.strip_prefix("- ")
            && line.starts_with(char::is_whitespace) | line.starts_with('-')
            && let Some(last) = out.last_mut()
        {
            if !last.1.is_empty() {
                last.1.push('\n');
            }
            last.1.push_str(unquote(item));
            continue;
        }
        if let Some((k, v)) = line.split_once(':')
            && !line.starts_with(char::is_whitespace)
        {
            out.push((k.trim().to_owned(), unquote(v).to_owned()));
        }
    }
    out
}

fn split_list(v: &str) -> Vec<String> {
    let v = v.trim();
    let v = v
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(v);
    v.split([',', '\n'])
        .map(|s| unquote(s).to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn safe(field: &'static str, v: &str) -> Result<String, ValidationError> {
    if v.starts_with('-') {
        return Err(ValidationError::new(
            field,
            format!("must not start with '-' (got {v:?})"),
        ));
    }
    if v.contains(['\n', '\r', '\0']) {
        return Err(ValidationError::new(field, "must be a single line"));
    }
    Ok(v.to_owned())
}

/// Whether Claude Code would take the file for a subagent definition of its own: its
/// frontmatter has both `name` and `description` (it then lists the file among its agents).
pub fn reads_as_subagent(text: &str) -> bool {
    let Some(fm) = split_frontmatter(text).0 else {
        return false;
    };
    let keys: Vec<String> = pairs(fm).into_iter().map(|(k, _)| k).collect();
    keys.iter().any(|k| k == "name") && keys.iter().any(|k| k == "description")
}

/// Reads the run options from frontmatter. Values that could be taken for a flag (a leading
/// `-`) or that hold a newline are refused, naming the key.
pub fn parse_options(frontmatter: &str) -> Result<RunOptions, ValidationError> {
    let mut o = RunOptions::default();
    for (k, v) in pairs(frontmatter) {
        if v.is_empty() {
            continue;
        }
        match k.as_str() {
            "model" => o.model = Some(safe("model", &v)?),
            "permission-mode" | "permissionMode" => {
                o.permission_mode = Some(safe("permission-mode", &v)?)
            }
            "max-turns" | "maxTurns" => {
                let n = v
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        ValidationError::new(
                            "max-turns",
                            format!("must be a whole number ≥ 1 (got {v:?})"),
                        )
                    })?;
                o.max_turns = Some(n);
            }
            "allowed-tools" | "allowedTools" | "tools" => {
                o.allowed_tools = split_list(&v)
                    .iter()
                    .map(|t| safe("allowed-tools", t))
                    .collect::<Result<_, _>>()?;
            }
            "append-system-prompt" | "appendSystemPrompt" => {
                o.append_system_prompt = Some(safe("append-system-prompt", &v)?);
            }
            _ => {}
        }
    }
    Ok(o)
}

/// Parses a whole prompt file. An empty body is refused: there would be nothing to send.
pub fn parse_prompt(text: &str) -> Result<Prompt, ValidationError> {
    let (fm, body) = split_frontmatter(text);
    let options = fm.map(parse_options).transpose()?.unwrap_or_default();
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return Err(ValidationError::new(
            "prompt",
            "the prompt file has no body after its frontmatter",
        ));
    }
    // Lines are counted in the file, as an editor shows them.
    let before = text.len() - body.len() + (body.len() - body.trim_start().len());
    let first_line = text[..before].matches('\n').count() + 1;
    check_variables(trimmed, first_line)?;
    let body = trimmed;
    Ok(Prompt {
        body: body.to_owned(),
        options,
    })
}

/// The variables a prompt body may use, as `{{name}}`; `{{{{` writes `{{`.
pub const PROMPT_VARIABLES: [&str; 8] = [
    "session_id",
    "cwd",
    "transcript_path",
    "hook_id",
    "last_message",
    "error",
    "due_at",
    "attempt",
];

/// A body in pieces: text as it is, and variables by name.
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Splits a body into text and variables; `Err` is (the line in the body, counted from
/// 0, and what is wrong there).
fn pieces(body: &str) -> Result<Vec<Piece<'_>>, (usize, String)> {
    let mut out = Vec::new();
    let mut rest = body;
    let line_of = |at: &str| body[..body.len() - at.len()].matches('\n').count();
    while let Some(i) = rest.find("{{") {
        out.push(Piece::Text(&rest[..i]));
        let after = &rest[i + 2..];
        if let Some(more) = after.strip_prefix("{{") {
            out.push(Piece::Text("{{"));
            rest = more;
            continue;
        }
        let Some(end) = after.find("}}") else {
            return Err((
                line_of(&rest[i..]),
                "{{ without a closing }} (write {{{{ for a literal {{)".to_owned(),
            ));
        };
        let name = after[..end].trim();
        if !PROMPT_VARIABLES.contains(&name) {
            return Err((
                line_of(&rest[i..]),
                format!(
                    "unknown variable {{{{{name}}}}} (the variables are {}; write {{{{{{{{ for a literal {{{{)",
                    PROMPT_VARIABLES.join(", ")
                ),
            ));
        }
        out.push(Piece::Var(name));
        rest = &after[end + 2..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// Checks that a body uses only known variables; the error names the variable and its
/// line in the file (the body starting at `first_line`).
pub fn check_variables(body: &str, first_line: usize) -> Result<(), ValidationError> {
    pieces(body).map(|_| ()).map_err(|(line, why)| {
        ValidationError::new("prompt", format!("line {}: {why}", first_line + line))
    })
}

/// The body with each variable replaced by its value; a body that does not check is
/// returned as it is (it never reaches here: [`parse_prompt`] refuses it).
pub fn render(body: &str, value: impl Fn(&str) -> String) -> String {
    match pieces(body) {
        Err(_) => body.to_owned(),
        Ok(ps) => ps
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) => t.to_owned(),
                Piece::Var(v) => value(v),
            })
            .collect(),
    }
}

/// The most of the conversation's last message `{{last_message}}` takes.
pub const LAST_MESSAGE_CAP: usize = 4096;

/// Errors of a [`PromptSource`](crate::ports::PromptSource).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    #[error("prompt file {file} not found (looked in {looked_in})")]
    /// No such file, in the conversation's project or the workspace.
    NotFound {
        /// The file asked for.
        file: String,
        /// Where it was looked for.
        looked_in: String,
    },
    #[error("prompt file {0}")]
    /// The file could not be read; why.
    Unreadable(String),
    #[error("prompt file {file}: {error}")]
    /// The file breaks a rule.
    Invalid {
        /// Which file.
        file: String,
        /// The rule it breaks.
        error: ValidationError,
    },
    /// The conversation's project has its own prompt file, which the user has not approved
    /// (or which changed since), and the workspace has none to use instead.
    #[error(
        "prompt file {file} is the project's own and waits for approval: review it, then run `hooks-app trust {project}`"
    )]
    /// A project's own prompt file waits for the person's approval (`hooks-app trust`).
    Unapproved {
        /// The project's file.
        file: String,
        /// The project whose approval it waits for.
        project: String,
    },
}

impl PromptError {
    /// Whether a follow-up is skipped for it (the user's decision is awaited), rather than
    /// failed.
    pub fn is_skip(&self) -> bool {
        matches!(self, Self::Unapproved { .. })
    }
}
