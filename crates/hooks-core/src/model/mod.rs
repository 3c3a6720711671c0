//! Validated domain types. Each constructor checks one field's rule and names the field in
//! its error, so a bad value never gets past the edge that received it.

mod hook;
mod queue;
mod run;
mod session;
mod values;

pub use crate::failure::{FailureKind, FailureKinds};
pub use crate::id::{HookId, SessionId, ValidationError};
pub use hook::*;
pub use queue::*;
pub use run::*;
pub use session::*;
pub use values::*;
