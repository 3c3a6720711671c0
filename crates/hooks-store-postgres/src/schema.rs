//! The schema's migrations: versioned SQL embedded in the program, applied in order, each
//! in a transaction with its version, under an advisory lock so that two hosts migrating at
//! once apply each migration exactly once.

use hooks_core::ports::StoreError;
use hooks_core::*;
use time::OffsetDateTime;
use tokio_postgres::Client;

use crate::convert::insert_hook;
use crate::db;

/// The migrations, by version.
pub const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_init.sql")),
    (2, include_str!("../migrations/0002_pause.sql")),
    (3, include_str!("../migrations/0003_max_lateness.sql")),
    (4, include_str!("../migrations/0004_failures.sql")),
    (5, include_str!("../migrations/0005_delivered.sql")),
    (6, include_str!("../migrations/0006_deliver.sql")),
    (7, include_str!("../migrations/0007_agent.sql")),
    (8, include_str!("../migrations/0008_wait_kinds.sql")),
    (9, include_str!("../migrations/0009_repeat.sql")),
];

/// The version this program's schema has.
pub const SCHEMA_VERSION: i32 = 9;

/// Any number: names the advisory lock migrations hold.
const MIGRATION_LOCK: i64 = 0x686f_6f6b_7361_7070;

/// The database's schema version; 0 for a database without one.
pub async fn version(c: &Client) -> Result<i32, StoreError> {
    let exists: bool = c
        .query_one("SELECT to_regclass('hooks_app_schema') IS NOT NULL", &[])
        .await
        .map_err(db)?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let v: Option<i32> = c
        .query_one("SELECT max(version) FROM hooks_app_schema", &[])
        .await
        .map_err(db)?
        .get(0);
    Ok(v.unwrap_or(0))
}

fn too_new(v: i32) -> StoreError {
    StoreError::Corrupt(format!(
        "the database's schema is version {v}, newer than this hooks-app knows \
         ({SCHEMA_VERSION}): upgrade hooks-app"
    ))
}

/// Applies what the database lacks; returns the versions applied. A new database gets the
/// `post-task` hook, as a new JSON store does.
pub async fn migrate(c: &mut Client) -> Result<Vec<i32>, StoreError> {
    let have = version(c).await?;
    if have > SCHEMA_VERSION {
        return Err(too_new(have));
    }
    if have == SCHEMA_VERSION {
        return Ok(Vec::new());
    }
    let tx = c.transaction().await.map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(db)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS hooks_app_schema ( \
           version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await
    .map_err(db)?;
    // Read again under the lock: another host may have migrated meanwhile.
    let have: i32 = tx
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM hooks_app_schema",
            &[],
        )
        .await
        .map_err(db)?
        .get(0);
    if have > SCHEMA_VERSION {
        return Err(too_new(have));
    }
    let mut applied = Vec::new();
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
        tx.batch_execute(sql).await.map_err(|e| {
            StoreError::Io(format!("migration {v} failed: {}", crate::describe(&e)))
        })?;
        tx.execute("INSERT INTO hooks_app_schema (version) VALUES ($1)", &[v])
            .await
            .map_err(db)?;
        applied.push(*v);
    }
    // A new database is seeded once the whole schema is there (the hooks are written with
    // every column the program knows); one from before the failure event gets the second
    // seed, off, unless a hook has its id already.
    if have < 4 {
        let now: OffsetDateTime = tx.query_one("SELECT now()", &[]).await.map_err(db)?.get(0);
        let now = now.replace_nanosecond(0).unwrap_or(now);
        for hook in seed_hooks(now) {
            if hook.id != post_task_id() || have == 0 {
                let taken = tx
                    .query_opt("SELECT 1 FROM hooks WHERE id = $1", &[&hook.id.as_str()])
                    .await
                    .map_err(db)?
                    .is_some();
                if !taken {
                    insert_hook(&tx, &hook, false).await.map_err(db)?;
                }
            }
        }
    }
    tx.commit().await.map_err(db)?;
    Ok(applied)
}
