//! hooks-testkit
