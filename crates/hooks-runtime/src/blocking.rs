//! Async calls from the synchronous commands: one current-thread runtime per call. A leaf.

use crate::{AppError, AppResult};

/// Runs `f` to its end on a runtime of its own.
pub fn block_on<F: std::future::Future>(f: F) -> AppResult<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::runtime(format!("could not start the runtime: {e}")))?;
    Ok(rt.block_on(f))
}
