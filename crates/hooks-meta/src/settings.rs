//! The model Claude Code's settings choose for a conversation's folder.
//!
//! Claude Code takes `model` from the most specific settings file that sets it: the
//! project's local settings (`<cwd>/.claude/settings.local.json`), the project's shared
//! settings (`<cwd>/.claude/settings.json`), then the user's (`<claude-home>/settings.json`).
//! Only the name is read, for an estimate's price: nothing here runs or steers a follow-up.

use std::path::Path;

use hooks_platform::files::{ReadLimit, read_regular};

/// The most of one settings file that is read.
const MAX_SETTINGS: u64 = 1024 * 1024;

/// The model the settings choose for a conversation in `cwd`, if any file sets one.
pub fn settings_model(claude_home: &Path, cwd: Option<&Path>) -> Option<String> {
    let project = cwd.map(|c| c.join(".claude"));
    let files = [
        project.as_ref().map(|p| p.join("settings.local.json")),
        project.as_ref().map(|p| p.join("settings.json")),
        Some(claude_home.join("settings.json")),
    ];
    files.into_iter().flatten().find_map(|f| model_in(&f))
}

fn model_in(file: &Path) -> Option<String> {
    let bytes = read_regular(file, ReadLimit::bytes(MAX_SETTINGS)).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("model")
        .and_then(|m| m.as_str())
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_settings_file_that_names_a_model_wins() {
        let d = tempfile::tempdir().unwrap();
        let (home, proj) = (d.path().join("home"), d.path().join("proj"));
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        assert_eq!(settings_model(&home, Some(&proj)), None);
        std::fs::write(
            home.join("settings.json"),
            r#"{"model": "sonnet", "hooks": {}}"#,
        )
        .unwrap();
        assert_eq!(
            settings_model(&home, Some(&proj)).as_deref(),
            Some("sonnet")
        );
        assert_eq!(settings_model(&home, None).as_deref(), Some("sonnet"));
        // Not JSON, or no model: the next file down decides.
        std::fs::write(proj.join(".claude/settings.json"), "{not json").unwrap();
        std::fs::write(
            proj.join(".claude/settings.local.json"),
            r#"{"model": " "}"#,
        )
        .unwrap();
        assert_eq!(
            settings_model(&home, Some(&proj)).as_deref(),
            Some("sonnet")
        );
        std::fs::write(proj.join(".claude/settings.json"), r#"{"model": "opus"}"#).unwrap();
        assert_eq!(settings_model(&home, Some(&proj)).as_deref(), Some("opus"));
        std::fs::write(
            proj.join(".claude/settings.local.json"),
            r#"{"model": "haiku"}"#,
        )
        .unwrap();
        assert_eq!(settings_model(&home, Some(&proj)).as_deref(), Some("haiku"));
    }
}
