//! The PostgreSQL store against a real server: the store and session contracts, the schema,
//! host affinity, and several real processes at once.

use std::sync::Arc;

use hooks_core::ports::*;
use hooks_core::testing::contract;
use hooks_store_postgres::{PgOptions, PgStore};

mod behaviour;

/// A store on a fresh database of the test server, for host `host`.
pub fn store_on(url: &str, host: &str) -> PgStore {
    PgStore::open(PgOptions::new(url, host)).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

pub fn fresh(host: &str) -> (String, PgStore) {
    let url = hooks_testkit::pg::database();
    let s = store_on(&url, host);
    (url, s)
}

#[tokio::test]
async fn contract_on_the_postgres_store() {
    contract::run_all(&|| Arc::new(fresh("host-a").1) as Arc<dyn HookStore>).await;
}

#[tokio::test]
async fn session_contract_on_the_postgres_store() {
    contract::run_sessions(&|| Arc::new(fresh("host-a").1) as Arc<dyn SessionStore>).await;
}
