//! Flags several commands share.

use clap::Args;

#[derive(Debug, Args, Clone, Copy)]
pub struct JsonFlag {
    /// One JSON value on stdout
    #[arg(long)]
    pub json: bool,
}
