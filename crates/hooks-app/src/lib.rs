//! hooks-app
