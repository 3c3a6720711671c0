//! The composition root: where things are (`context`), which adapters the command line
//! chose (`choice`), and the adapters built from them (`build`, `clock`). The only
//! module of hooks-app that names a concrete adapter (`cargo xtask layering` checks it);
//! everything else works through the core's ports.

mod adapters;
mod build;
mod choice;
mod clock;
mod context;

pub use adapters::*;
pub use build::*;
pub use choice::*;
pub use clock::*;
pub use context::*;
