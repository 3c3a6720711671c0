//! Session files and transcript facts, on real files.

mod cli_transcripts;
mod live;
mod own_transcripts;
mod sessions;
