//! hooks-meta
