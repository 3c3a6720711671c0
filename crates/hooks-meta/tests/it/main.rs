//! Session files and transcript facts, on real files.

mod cli_transcripts;
mod codex;
mod live;
mod own_transcripts;
mod sessions;
