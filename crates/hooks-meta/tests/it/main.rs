//! Session files and transcript facts, on real files.

mod live;
mod own_transcripts;
mod real_transcripts;
mod sessions;
