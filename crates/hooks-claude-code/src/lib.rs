//! Claude Code's own formats, as hooks-app meets them on its driving side: the hook input
//! Claude Code sends ([`hook_input`]) and what a hook may answer ([`hook_output`]), and its `settings.json`, where `install` puts this
//! app's handlers and `uninstall` takes them out byte for byte ([`settings`], on the
//! text editor [`jsonedit`]), the settings files of each scope on disk and what install
//! created in them ([`files`]), and the releases it was tested against ([`versions`]).
//!
//! It knows no crate of the workspace but the platform (regular files, durable writes):
//! what it reads is turned into the core's types by the composition root. What a host can see of a running Claude Code (transcripts,
//! `sessions/<pid>.json`) stays in `hooks-meta`, the session-meta adapter, because adapters
//! never depend on each other.

pub mod files;
pub mod hook_input;
pub mod hook_output;
pub mod jsonedit;
pub mod settings;
pub mod versions;
