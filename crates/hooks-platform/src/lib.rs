//! What the app asks of the operating system beyond plain `std`, in one small place.
//!
//! Every path the app reads from input (a transcript named by a hook event, a prompt file
//! in a repository, a settings file, the store) is opened through [`files`]: non-blocking,
//! so a FIFO or a device named there cannot freeze the process, and checked to be a
//! regular file before a byte is read, within a size cap.

pub mod files;

pub use files::{ReadLimit, open_regular, read_regular};
