//! The module graph of each crate, read from the source as text: which file of a crate
//! names which other file of it (`crate::x`, `use crate::{x, y::z}`, `super::x`), and each
//! folder's module (`x/mod.rs`) above its children. No files may name each other in a
//! loop; the crate root (`lib.rs`, `main.rs`), which declares the modules, is left out.
//! Test code (from `#[cfg(test)]` on) is not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A crate's files by module path (`a::b`), with their text.
pub type Files = BTreeMap<String, String>;

/// The files of the crate whose sources are in `src`, by module path.
pub fn read_crate(src: &Path) -> Result<Files, String> {
    let mut out = Files::new();
    walk(src, src, &mut out)?;
    Ok(out)
}

/// hooks-app's modules as the layers see them: the command line's crate (`hooks-app`: its
/// commands and clap types) and the library it runs on (`hooks-runtime`: the driving side,
/// the composition and the leaves), which hooks-app uses under the same names.
pub fn read_app(root: &Path) -> Result<Files, String> {
    let mut app = read_crate(&root.join("crates/hooks-app/src"))?;
    for (m, text) in read_crate(&root.join("crates/hooks-runtime/src"))? {
        app.entry(m).or_default().push_str(&text);
    }
    Ok(app)
}

fn walk(root: &Path, dir: &Path, out: &mut Files) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(root, &p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).map_err(|e| e.to_string())?;
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            out.insert(module_of(&rel.to_string_lossy()), text);
        }
    }
    Ok(())
}

/// `a/b.rs` → `a::b`; `a/mod.rs` → `a`; `lib.rs` and `main.rs` → `` (the root).
pub fn module_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    if rel == "lib" || rel == "main" {
        return String::new();
    }
    rel.replace('/', "::")
}

/// The code of a file: comments out, and nothing from `#[cfg(test)]` on.
fn code(text: &str) -> String {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file's code names, as written after `crate::` (or resolved from
/// `super::`), including each name of a `use crate::{…}` group.
fn named_paths(module: &str, text: &str) -> Vec<String> {
    let code = code(text);
    let mut out = Vec::new();
    let parent: Vec<&str> = module.split("::").collect();
    let parent = parent[..parent.len().saturating_sub(1)].join("::");
    for (prefix, base) in [("crate::", String::new()), ("super::", parent)] {
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[i + prefix.len()..];
            let join = |p: &str| {
                if base.is_empty() {
                    p.to_owned()
                } else {
                    format!("{base}::{p}")
                }
            };
            if let Some(group) = rest.strip_prefix('{') {
                for item in group_items(group) {
                    out.push(join(&item));
                }
            } else {
                out.push(join(&path_at(rest)));
            }
        }
    }
    out
}

/// The path that starts `s`: `a::b::C` (stops at anything else).
fn path_at(s: &str) -> String {
    let mut end = 0;
    let b = s.as_bytes();
    while end < b.len() {
        let c = b[end] as char;
        if c.is_alphanumeric() || c == '_' {
            end += 1;
        } else if s[end..].starts_with("::")
            && s[end + 2..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            end += 2;
        } else {
            break;
        }
    }
    s[..end].to_owned()
}

/// Adds the path `item` names under the innermost group's prefix.
fn push(items: &mut Vec<String>, prefixes: &[String], item: &str) {
    let item = item.trim();
    if item.is_empty() {
        return;
    }
    items.push(match prefixes.last().filter(|b| !b.is_empty()) {
        None => path_at(item),
        Some(base) => format!("{base}::{}", path_at(item)),
    });
}

/// The top-level items of a `{…}` group (its text after the `{`), nested groups flattened.
fn group_items(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut prefix_stack: Vec<String> = vec![String::new()];
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                let head = s[start..i].trim().trim_end_matches("::").to_owned();
                let base = prefix_stack.last().cloned().unwrap_or_default();
                prefix_stack.push(if base.is_empty() {
                    head
                } else {
                    format!("{base}::{head}")
                });
                depth += 1;
                start = i + 1;
            }
            b'}' => {
                push(&mut items, &prefix_stack, &s[start..i]);
                if depth == 0 {
                    break;
                }
                prefix_stack.pop();
                depth -= 1;
                start = i + 1;
            }
            b',' => {
                push(&mut items, &prefix_stack, &s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    items.retain(|p| !p.is_empty() && !p.ends_with("::self") && p != "self");
    items
}

/// The file a path names: its longest prefix that is a module of the crate.
fn file_named(files: &Files, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| files.contains_key(m))
}

/// The edges file → file of a crate (the root left out), each with the names it takes.
pub fn edges(files: &Files) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (module, text) in files {
        if module.is_empty() {
            continue;
        }
        for path in named_paths(module, text) {
            let Some(target) = file_named(files, &path) else {
                continue;
            };
            if target.is_empty() || target == *module {
                continue;
            }
            let name = path
                .strip_prefix(&format!("{target}::"))
                .unwrap_or("")
                .to_owned();
            out.entry((module.clone(), target))
                .or_default()
                .insert(name);
        }
        // A folder's module uses its children (by relative paths this reading does not
        // see): a child naming its folder's module closes a loop.
        if let Some((parent, _)) = module.rsplit_once("::")
            && files.contains_key(parent)
        {
            out.entry((parent.to_owned(), module.clone()))
                .or_default()
                .insert("(declares it)".to_owned());
        }
    }
    out
}

/// Every loop among the files: the groups of two or more that all reach each other.
pub fn loops(files: &Files) -> Vec<Vec<String>> {
    let e = edges(files);
    let nodes: Vec<&String> = files.keys().filter(|m| !m.is_empty()).collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for (a, b) in e.keys() {
                if *a == n && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) {
            continue;
        }
        let group: Vec<String> = nodes
            .iter()
            .filter(|m| **m == *n || (reaches[*n].contains(**m) && reaches[**m].contains(*n)))
            .map(|m| (*m).clone())
            .collect();
        if group.len() > 1 {
            done.extend(group.iter().cloned());
            out.push(group);
        }
    }
    out
}

/// The loops of every crate of the workspace, as readable lines (empty when none).
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (name, src) in crates(root)? {
        let files = read_crate(&src)?;
        let e = edges(&files);
        for group in loops(&files) {
            let ties: Vec<String> = e
                .iter()
                .filter(|((a, b), _)| group.contains(a) && group.contains(b))
                .map(|((a, b), names)| {
                    format!(
                        "{a} -> {b} ({})",
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            out.push(format!(
                "{name}: {} import each other in a loop: {}",
                group.join(", "),
                ties.join("; ")
            ));
        }
    }
    Ok(out)
}

/// hooks-app's layers, top first. A module (by its first path segment) may name modules of
/// its own layer or below, never above; every module must be in one.
pub const APP_LAYERS: &[&[&str]] = &[
    // The command table and the commands.
    &["commands"],
    // The driving side: Claude Code's hook entry point, the daemon (with the HTTP server's
    // backend), install, alerts, follow-ups at a time.
    &["claude_hook", "daemon", "install", "schedule", "mcp"],
    // The composition and what it builds from: adapters' choice, prompts, prices, trust,
    // what is known of a session.
    &["compose", "prices"],
    // Leaves: the clap types, the options they parse into, output and helpers.
    &["cli", "options", "output", "fsutil", "blocking"],
];

/// hooks-app's modules other than the commands (and the crate root, which parses the
/// command line) that name the clap types in `cli`: they should take the options the
/// commands convert the command line into.
pub fn naming_clap(files: &Files) -> Vec<String> {
    let own = |m: &str, top: &str| m == top || m.starts_with(&format!("{top}::"));
    files
        .iter()
        .filter(|(m, _)| !m.is_empty() && !own(m, "cli") && !own(m, "commands"))
        .filter(|(_, text)| text.contains("crate::cli"))
        .map(|(m, _)| m.clone())
        .collect()
}

/// Where hooks-app's modules break [`APP_LAYERS`], as readable lines.
pub fn layer_breaches(files: &Files, layers: &[&[&str]]) -> Vec<String> {
    let layer = |m: &str| {
        let top = m.split("::").next().unwrap_or(m);
        layers.iter().position(|l| l.contains(&top))
    };
    let mut out = Vec::new();
    for m in files.keys().filter(|m| !m.is_empty()) {
        if layer(m).is_none() {
            let top = m.split("::").next().unwrap_or(m).to_owned();
            out.push(format!("{top} is in no layer of xtask's APP_LAYERS"));
        }
    }
    for ((a, b), names) in edges(files) {
        if let (Some(la), Some(lb)) = (layer(&a), layer(&b))
            && lb < la
        {
            out.push(format!(
                "{a} (layer {la}) names {b} (layer {lb}), a layer above it: {}",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The crates' source folders: `crates/*/src` and `xtask/src`.
pub fn crates(root: &Path) -> Result<Vec<(String, std::path::PathBuf)>, String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("crates"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let src = e.path().join("src");
        if src.is_dir() {
            out.push((e.file_name().to_string_lossy().into_owned(), src));
        }
    }
    out.push(("xtask".into(), root.join("xtask/src")));
    out.sort();
    Ok(out)
}

/// The module graph of every crate, for `cargo xtask layering --graph`.
pub fn graph(root: &Path) -> Result<String, String> {
    let mut s = String::new();
    for (name, src) in crates(root)? {
        let files = read_crate(&src)?;
        let lines: usize = files.values().map(|t| t.lines().count()).sum();
        s.push_str(&format!("{name} ({} files, {lines} lines)\n", files.len()));
        for ((a, b), names) in edges(&files) {
            s.push_str(&format!(
                "  {a} -> {b}: {}\n",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Files {
        list.iter()
            .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn paths_and_groups_are_read_as_rust_writes_them() {
        let f = files(&[
            ("", "mod a; mod b; mod c;"),
            (
                "a",
                "use crate::{b::{X, Y}, c};\nfn f() { crate::c::g(); }\n// crate::d in a comment\n",
            ),
            ("b", "pub struct X;"),
            ("c", "pub fn g() {}"),
            ("c::inner", "use super::g;"),
        ]);
        let e = edges(&f);
        let got: Vec<(&str, &str)> = e.keys().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            got,
            [("a", "b"), ("a", "c"), ("c", "c::inner"), ("c::inner", "c")]
        );
        assert_eq!(
            e[&("a".into(), "b".into())],
            BTreeSet::from(["X".into(), "Y".into()])
        );
        // A child naming its folder's module is a loop; without it there is none.
        assert_eq!(loops(&f), [vec!["c".to_owned(), "c::inner".to_owned()]]);
        let f: Files = f.into_iter().filter(|(m, _)| m != "c::inner").collect();
        assert!(loops(&f).is_empty());
    }

    #[test]
    fn the_workspace_has_no_loops_and_a_planted_one_is_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(check(root).unwrap(), Vec::<String>::new());
        let mut f = read_crate(&root.join("crates/hooks-core/src")).unwrap();
        f.insert("planted".into(), "use crate::service::Service;\n".into());
        let service = f.get_mut("service").unwrap();
        service.insert_str(0, "use crate::planted::Thing;\n");
        let found = loops(&f);
        assert_eq!(found, [vec!["planted".to_owned(), "service".to_owned()]]);
    }

    #[test]
    fn hooks_app_keeps_its_layers_and_a_leaf_naming_a_command_is_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut app = read_app(root).unwrap();
        assert_eq!(layer_breaches(&app, APP_LAYERS), Vec::<String>::new());
        // At the top: what follows a file's `#[cfg(test)]` is its tests, and not read.
        app.get_mut("output")
            .unwrap()
            .insert_str(0, "use crate::commands::dispatch;\n");
        app.insert("newthing".into(), String::new());
        let found = layer_breaches(&app, APP_LAYERS);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("newthing is in no layer"), "{found:?}");
        assert!(
            found[1].starts_with("output (layer 3) names commands (layer 0)"),
            "{found:?}"
        );
    }

    #[test]
    fn only_the_commands_name_the_clap_types_and_a_planted_use_is_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut app = read_app(root).unwrap();
        assert_eq!(naming_clap(&app), Vec::<String>::new());
        app.get_mut("daemon::scheduler")
            .unwrap()
            .push_str("\nuse crate::cli::RunArgs;\n");
        assert_eq!(naming_clap(&app), ["daemon::scheduler"]);
    }
}
