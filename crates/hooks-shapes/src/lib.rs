//! What the CLI and the HTTP API both say: the `--json` documents (spec §5), the forms of
//! money, time and counts people read, and the spans they write. One crate so the CLI's
//! `--json` and the API print the same document for the same value.
//!
//! Depends on `hooks-core` alone and does no IO.

pub mod json;
pub mod span;
pub mod text;
