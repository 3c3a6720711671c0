//! The memory store is held to the store contract like any other, one test a rule.

use std::path::Path;
use std::sync::Arc;

use hooks_app::StoreOpen;
use hooks_core::ports::{HookStore, SessionStore};
use hooks_example_script_agent::memory_store;

fn open() -> hooks_app::Store {
    memory_store(&StoreOpen::new(
        "",
        "host-a",
        Path::new("/nonexistent"),
        true,
    ))
    .expect("a memory store")
}

mod memory_store_contract {
    use super::*;
    hooks_core::hook_store_contract!(|| ((), open().data as Arc<dyn HookStore>));
    hooks_core::session_store_contract!(|| ((), open().sessions as Arc<dyn SessionStore>));
}

#[test]
fn a_memory_store_names_nothing() {
    let e = memory_store(&StoreOpen::new("x", "host-a", Path::new("/"), true))
        .err()
        .expect("refused");
    assert!(e.contains("takes nothing after the colon"), "{e}");
}
