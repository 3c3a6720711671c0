//! hooks-store-json
