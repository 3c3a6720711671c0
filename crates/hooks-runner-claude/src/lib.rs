//! hooks-runner-claude
