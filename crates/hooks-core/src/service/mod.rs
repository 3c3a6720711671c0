//! The application service: the use cases, composed from the ports and the decisions.
//!
//! It holds no state of its own but the leases of the follow-ups this process is running;
//! everything durable lives behind the ports.

mod fire;
mod notify;
mod run;
mod settings;
mod types;

pub use notify::agents_of;
pub use types::*;
