//! The PostgreSQL store against a real server: the store and session contracts, the schema,
//! host affinity, and several real processes at once.

use std::sync::Arc;

use hooks_core::ports::*;
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

/// The store contracts, one test a rule, each on a database of its own.
mod contract_on_the_postgres_store {
    use super::*;
    hooks_core::hook_store_contract!(|| ((), Arc::new(fresh("host-a").1) as Arc<dyn HookStore>));
    hooks_core::session_store_contract!(|| {
        ((), Arc::new(fresh("host-a").1) as Arc<dyn SessionStore>)
    });
    // Two hosts on one database.
    hooks_core::store_signals_contract!(|| {
        let (url, a) = fresh("host-a");
        let b = store_on(&url, "host-b");
        ((), Arc::new(a), Arc::new(b))
    });
}

#[tokio::test]
async fn tls_with_sslmode_and_a_private_authority() {
    let (url, ca) = hooks_testkit::pg::tls_database();
    // The server takes TLS only: a plain connection is refused.
    let plain = PgStore::open(PgOptions::new(format!("{url}?sslmode=disable"), "h"));
    assert!(plain.is_err(), "a plain connection was refused");
    // TLS checked against the web's authorities only: this server's is not one of them.
    let e = PgStore::open(PgOptions::new(format!("{url}?sslmode=require"), "h"))
        .err()
        .expect("an unknown authority is refused")
        .to_string();
    assert!(
        e.contains("could not connect") && e.contains("UnknownIssuer"),
        "{e}"
    );
    // With its authority named, the store works over TLS.
    let store = PgStore::open(PgOptions::new(
        format!("{url}?sslmode=require&sslrootcert={}", ca.display()),
        "h",
    ))
    .expect("TLS with the private authority");
    let hooks = store.snapshot().await.expect("snapshot").hooks;
    assert_eq!(hooks.len(), 2, "seeded over TLS");
    // A missing authority file is a clear error naming it.
    let e = PgStore::open(PgOptions::new(
        format!("{url}?sslmode=require&sslrootcert=/nonexistent/ca.crt"),
        "h",
    ))
    .err()
    .expect("refused")
    .to_string();
    assert!(e.contains("sslrootcert /nonexistent/ca.crt"), "{e}");
}
