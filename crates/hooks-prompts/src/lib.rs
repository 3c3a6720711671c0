//! The prompt a follow-up runs, from files on disk: the `PromptSource` adapter
//! ([`FilePrompts`]: the conversation's own project first, when approved, then the
//! workspace), the approvals that gate a project's files ([`trust`], `trust.json`), and the
//! seeded hooks' prompts `init` writes.
//!
//! A repository is not the user: nothing in it runs until the user approved its exact
//! bytes. Depends on `hooks-core` and `hooks-platform` only.

mod files;
pub mod trust;

pub use files::*;
