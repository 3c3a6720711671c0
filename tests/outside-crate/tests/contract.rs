//! The contract and the mocks, reached from a crate outside the workspace.

use std::sync::Arc;

use hooks_core::ports::{HookStore, MockRunner, Runner, SessionStore};
use hooks_core::testing::{InMemorySessions, InMemoryStore};

mod store_contract {
    use super::*;
    hooks_core::hook_store_contract!(|| ((), InMemoryStore::new() as Arc<dyn HookStore>));
    hooks_core::session_store_contract!(|| ((), InMemorySessions::new() as Arc<dyn SessionStore>));
}

#[tokio::test]
async fn a_ports_mock_is_there_for_a_teams_tests() {
    let mut runner = MockRunner::new();
    runner.expect_delivers_into_open().return_const(true);
    runner.expect_end_leftovers().return_const(3usize);
    let runner: Arc<dyn Runner> = Arc::new(runner);
    assert!(runner.delivers_into_open());
    let group = hooks_core::ProcessRef { pid: 1, start: 0 };
    assert_eq!(runner.end_leftovers(&group).await, 3);
}
