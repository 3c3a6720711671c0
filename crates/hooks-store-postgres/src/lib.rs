//! The hook store on PostgreSQL: the hooks, the queue, the once-per-(hook, session) stamps,
//! the sessions' state and leases, and the run log, in one database that several hosts
//! share.
//!
//! - Claiming is one statement: due entries not under a live claim are picked earliest due
//!   first with `FOR UPDATE SKIP LOCKED`, one per session, and marked with the owner and
//!   expiry; a unique index on claimed entries' sessions makes "at most one claimed entry per
//!   session" the database's rule, across hosts. Completing, requeuing, renewing and
//!   releasing are `WHERE claim_owner = $me`: a process that lost its claim changes nothing.
//! - Stamps are `INSERT … ON CONFLICT DO NOTHING RETURNING`, a test-and-set; a run's start
//!   (stamp and session lease) is one transaction holding the session's row.
//! - Host affinity: an entry records the host it was queued on (a transcript lives where
//!   Claude ran), and a store opened for a host claims only that host's entries unless it
//!   was opened with `any_host`.
//! - A trigger notifies the channel `hooks_app_queue` on every change to the queue; a
//!   daemon listens on it ([`StoreSignals::watch`]), or polls where LISTEN cannot work
//!   (poolers in transaction mode).
//! - Times written by the database itself (`changed_at`) are its `now()`; the instants the
//!   core passes in come from a clock the app corrects by [`PgStore::clock_offset`], the
//!   database's time less this host's, measured when the store is opened.
//!
//! The adapter runs its own small runtime on a thread of its own, so its connections live
//! as long as the store, whichever runtime (or none) the caller awaits its futures on.

mod convert;
mod schema;

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hooks_core::decide::EnqueueDecision;
use hooks_core::ports::*;
use hooks_core::stamp::Timestamp;
use hooks_core::*;
use time::{Duration, OffsetDateTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, NoTls};

use convert::*;
pub use schema::{MIGRATIONS, SCHEMA_VERSION};

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// A libpq-style URL: `postgres://user:password@host:port/db?sslmode=require`, with
    /// `sslrootcert=FILE` for a private certificate authority.
    pub url: String,
    /// This host's id: entries queued here record it.
    pub host: String,
    /// Claim entries of every host, not just this one's (a Claude home on shared storage).
    pub any_host: bool,
    /// Listen for changes (LISTEN/NOTIFY); `false` where a pooler breaks LISTEN.
    pub listen: bool,
    /// At most this many connections at once.
    pub pool_size: usize,
}

impl PgOptions {
    pub fn new(url: impl Into<String>, host: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            host: host.into(),
            any_host: false,
            listen: true,
            pool_size: 8,
        }
    }
}

/// The URL without its password, for people and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail: String = tail
        .split('&')
        .map(|kv| {
            if kv.trim_start_matches('?').starts_with("password=") {
                let lead = if kv.starts_with('?') { "?" } else { "" };
                format!("{lead}password=***")
            } else {
                kv.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{scheme}://{authority}{tail}")
}

/// The store's own runtime: shut down in the background when the store goes, so dropping
/// a store inside another runtime is fine.
struct Rt(Option<tokio::runtime::Runtime>);

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

enum Tls {
    Off,
    On(tokio_postgres_rustls::MakeRustlsConnect),
}

struct Inner {
    config: tokio_postgres::Config,
    tls: Tls,
    idle: Mutex<Vec<Client>>,
    slots: Arc<Semaphore>,
    host: String,
    any_host: bool,
    listen: bool,
    location: String,
}

/// A pooled connection: back to the pool when dropped, unless it broke.
struct Conn {
    client: Option<Client>,
    inner: Arc<Inner>,
    _slot: OwnedSemaphorePermit,
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("a pooled connection")
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("a pooled connection")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(c) = self.client.take()
            && !c.is_closed()
        {
            lock(&self.inner.idle).push(c);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn db(e: tokio_postgres::Error) -> StoreError {
    StoreError::Io(describe(&e))
}

/// The error with its causes: a TLS failure says which (an unknown authority, a name that
/// does not match), a refused connection says so.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        return format!("database: {} ({})", d.message(), d.code().code());
    }
    let mut text = format!("database: {e}");
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

fn is_code(e: &tokio_postgres::Error, code: &tokio_postgres::error::SqlState) -> bool {
    e.code() == Some(code)
}

impl Inner {
    async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        match &self.tls {
            Tls::Off => {
                let (client, conn) = self.config.connect(NoTls).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
            Tls::On(tls) => {
                let (client, conn) = self.config.connect(tls.clone()).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
        }
    }

    async fn conn(self: &Arc<Self>) -> Result<Conn, StoreError> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Io("the store is closed".into()))?;
        let idle = lock(&self.idle).pop();
        let client = match idle {
            Some(c) if !c.is_closed() => c,
            _ => self.connect().await.map_err(|e| {
                StoreError::Io(format!(
                    "could not connect to {}: {}",
                    self.location,
                    describe(&e)
                ))
            })?,
        };
        Ok(Conn {
            client: Some(client),
            inner: self.clone(),
            _slot: slot,
        })
    }

    /// The host filter of claims: `$n` is this host, `$n+1` whether any host will do.
    fn hosts(&self) -> (&str, bool) {
        (&self.host, self.any_host)
    }
}

/// The PostgreSQL store.
pub struct PgStore {
    inner: Arc<Inner>,
    rt: Arc<Rt>,
    offset: Duration,
}

impl PgStore {
    /// Connects, brings the schema up to date (seeding the `post-task` hook into a new
    /// database) and measures the clock offset. A database whose schema is newer than this
    /// program knows is refused.
    pub fn open(options: PgOptions) -> Result<Self, StoreError> {
        let store = Self::connect(options)?;
        let offset = store.block(|inner| async move {
            let mut c = inner.conn().await?;
            schema::migrate(&mut c).await?;
            let before = OffsetDateTime::now_utc();
            let row = c.query_one("SELECT now()", &[]).await.map_err(db)?;
            let after = OffsetDateTime::now_utc();
            let theirs: OffsetDateTime = row.get(0);
            Ok(theirs - (before + (after - before) / 2))
        })?;
        Ok(Self { offset, ..store })
    }

    /// Connects without touching the schema (for `store migrate` and `doctor`).
    pub fn connect(options: PgOptions) -> Result<Self, StoreError> {
        let location = redact(&options.url);
        let (config, tls) = parse_url(&options.url)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hooks-store-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Io(format!("could not start the store's runtime: {e}")))?;
        let inner = Arc::new(Inner {
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(options.pool_size.max(1))),
            host: options.host,
            any_host: options.any_host,
            listen: options.listen,
            location,
        });
        let store = Self {
            inner,
            rt: Arc::new(Rt(Some(rt))),
            offset: Duration::ZERO,
        };
        store.block(|inner| async move {
            inner.conn().await?;
            Ok(())
        })?;
        Ok(store)
    }

    /// The database's clock less this host's, as measured when the store was opened.
    pub fn clock_offset(&self) -> Duration {
        self.offset
    }

    /// The schema version the database has (0 for none) and the one this program knows.
    pub fn schema_version(&self) -> Result<(i32, i32), StoreError> {
        self.block(|inner| async move {
            let c = inner.conn().await?;
            Ok((schema::version(&c).await?, SCHEMA_VERSION))
        })
    }

    /// Applies the migrations the database lacks; returns the versions applied.
    pub fn migrate(&self) -> Result<Vec<i32>, StoreError> {
        self.block(|inner| async move {
            let mut c = inner.conn().await?;
            schema::migrate(&mut c).await
        })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.0.as_ref().expect("the store's runtime")
    }

    /// Runs `f` on the store's runtime and waits for it from any runtime.
    fn run<T, F, Fut>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + use<T, F, Fut>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let handle = self.rt().spawn(f(self.inner.clone()));
        async move {
            handle
                .await
                .map_err(|e| StoreError::Io(format!("a store task failed: {e}")))?
        }
    }

    /// Runs `f` on the store's runtime and blocks this thread until it is done; for the
    /// synchronous parts (opening, the signals). Not to be called from the store's runtime.
    fn block<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let fut = f(self.inner.clone());
        self.rt().spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| StoreError::Io("a store task failed".into()))?
    }
}

/// Parses the URL (taking out `sslrootcert`, which the client does not know) and sets up
/// TLS for any `sslmode` but `disable`.
fn parse_url(url: &str) -> Result<(tokio_postgres::Config, Tls), StoreError> {
    let bad = |why: String| {
        StoreError::Invalid(ValidationError::new(
            "store",
            format!("must be a PostgreSQL URL (postgres://user@host:port/db?sslmode=…): {why}"),
        ))
    };
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut root_cert = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter(|kv| match kv.strip_prefix("sslrootcert=") {
            Some(path) => {
                root_cert = Some(path.to_owned());
                false
            }
            None => true,
        })
        // libpq's verifying modes: every TLS connection here verifies the certificate and
        // the host name, so they are `require`.
        .map(|kv| match kv {
            "sslmode=verify-ca" | "sslmode=verify-full" => "sslmode=require",
            other => other,
        })
        .collect();
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| bad(format!("{e}")))?;
    if config.get_application_name().is_none() {
        config.application_name("hooks-app");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(10));
    }
    let tls = match config.get_ssl_mode() {
        tokio_postgres::config::SslMode::Disable => Tls::Off,
        _ => {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            if let Some(path) = root_cert {
                let pem =
                    std::fs::read(&path).map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                let mut added = 0;
                for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
                    let cert: rustls::pki_types::CertificateDer<'static> =
                        cert.map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                    added += 1;
                }
                if added == 0 {
                    return Err(bad(format!("sslrootcert {path}: no certificate in it")));
                }
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let cfg = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| bad(format!("TLS: {e}")))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Tls::On(tokio_postgres_rustls::MakeRustlsConnect::new(cfg))
        }
    };
    Ok((config, tls))
}

const HOOK_COLUMNS: &str = "id, name, event, delay_seconds, prompt_file, enabled, skip_cron, \
     skip_subagents, max_context_k, max_cost_usd, created_at, last_status, history_at, history_session, \
     max_lateness_s, errors, deliver, agent, repeat";

const PENDING_COLUMNS: &str = "hook_id, session_id, due_at, queued_at, retries, claim_owner, \
     claim_expires_at, waiting_reason, waiting_since, waiting_open, error, waiting_kind, \
     attempts, not_taken";

/// How many columns `PENDING_COLUMNS` names: a query that returns more reads them after.
const PENDING_WIDTH: usize = 14;

async fn hook_for_update(
    tx: &tokio_postgres::Transaction<'_>,
    id: &HookId,
) -> Result<Option<Hook>, StoreError> {
    let sql = format!("SELECT {HOOK_COLUMNS} FROM hooks WHERE id = $1 FOR UPDATE");
    match tx.query_opt(&sql, &[&id.as_str()]).await.map_err(db)? {
        Some(row) => Ok(Some(hook_from_row(&row)?)),
        None => Ok(None),
    }
}

async fn write_record(
    tx: &tokio_postgres::Transaction<'_>,
    hook: &HookId,
    session: &SessionId,
    record: &HookRecord,
) -> Result<(), StoreError> {
    if let Some(mut h) = hook_for_update(tx, hook).await? {
        queue::record(&mut h, session, record);
        let (at, sessions) = history_arrays(&h.history);
        tx.execute(
            "UPDATE hooks SET last_status = $2, history_at = $3, history_session = $4 WHERE id = $1",
            &[&hook.as_str(), &h.last_status.as_ref().map(ToString::to_string), &at, &sessions],
        )
        .await
        .map_err(db)?;
    }
    Ok(())
}

/// Why a fenced write changed nothing: the entry is gone, or not this owner's.
async fn fence_error(c: &Client, key: &EntryKey) -> StoreError {
    match c
        .query_opt(
            "SELECT 1 FROM pending WHERE hook_id = $1 AND session_id = $2",
            &[&key.hook_id.as_str(), &key.session_id.as_str()],
        )
        .await
    {
        Ok(Some(_)) => StoreError::Fenced(key.clone()),
        Ok(None) => StoreError::EntryNotFound(key.clone()),
        Err(e) => db(e),
    }
}

fn key_arrays(keys: &[EntryKey]) -> (Vec<String>, Vec<String>) {
    keys.iter()
        .map(|k| (k.hook_id.to_string(), k.session_id.to_string()))
        .unzip()
}

#[async_trait]
impl HookStore for PgStore {
    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.run(|inner| async move {
            let mut c = inner.conn().await?;
            let tx = c
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(db)?;
            let hooks = tx
                .query(
                    &format!("SELECT {HOOK_COLUMNS} FROM hooks ORDER BY position"),
                    &[],
                )
                .await
                .map_err(db)?
                .iter()
                .map(hook_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            let pending = tx
                .query(
                    &format!("SELECT {PENDING_COLUMNS} FROM pending ORDER BY position"),
                    &[],
                )
                .await
                .map_err(db)?
                .iter()
                .map(pending_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            tx.commit().await.map_err(db)?;
            Ok(Snapshot { hooks, pending })
        })
        .await
    }

    async fn get_hook(&self, id: &HookId) -> Result<Option<Hook>, StoreError> {
        let id = id.clone();
        self.run(|inner| async move {
            let c = inner.conn().await?;
            let sql = format!("SELECT {HOOK_COLUMNS} FROM hooks WHERE id = $1");
            match c.query_opt(&sql, &[&id.as_str()]).await.map_err(db)? {
                Some(row) => Ok(Some(hook_from_row(&row)?)),
                None => Ok(None),
            }
        })
        .await
    }

    async fn create_hook(&self, spec: HookSpec, now: Timestamp) -> Result<Hook, StoreError> {
        self.run(|inner| async move {
            let c = inner.conn().await?;
            loop {
                let taken: HashSet<String> = c
                    .query("SELECT id FROM hooks", &[])
                    .await
                    .map_err(db)?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                let id = unique_hook_id(&spec.name, |c| taken.contains(c));
                let hook = spec.clone().into_hook(id, now);
                match insert_hook(&*c, &hook, false).await {
                    Ok(()) => return Ok(hook),
                    // Another process took the id in between: choose again.
                    Err(e) if is_code(&e, &tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {}
                    Err(e) => return Err(db(e)),
                }
            }
        })
        .await
    }

    async fn update_hook(&self, id: &HookId, patch: &HookPatch) -> Result<Hook, StoreError> {
        let (id, patch) = (id.clone(), patch.clone());
        self.run(|inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            let mut hook = hook_for_update(&tx, &id)
                .await?
                .ok_or_else(|| StoreError::HookNotFound(id.clone()))?;
            patch.apply(&mut hook);
            insert_hook(&tx, &hook, true).await.map_err(db)?;
            tx.commit().await.map_err(db)?;
            Ok(hook)
        })
        .await
    }

    async fn import_hook(&self, hook: &Hook) -> Result<(), StoreError> {
        let hook = hook.clone();
        self.run(|inner| async move {
            let c = inner.conn().await?;
            insert_hook(&*c, &hook, true).await.map_err(db)
        })
        .await
    }

    async fn delete_hook(&self, id: &HookId) -> Result<usize, StoreError> {
        let id = id.clone();
        self.run(|inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            if tx
                .query_opt(
                    "SELECT 1 FROM hooks WHERE id = $1 FOR UPDATE",
                    &[&id.as_str()],
                )
                .await
                .map_err(db)?
                .is_none()
            {
                return Err(StoreError::HookNotFound(id));
            }
            let dropped = tx
                .execute("DELETE FROM pending WHERE hook_id = $1", &[&id.as_str()])
                .await
                .map_err(db)?;
            tx.execute("DELETE FROM hooks WHERE id = $1", &[&id.as_str()])
                .await
                .map_err(db)?;
            tx.commit().await.map_err(db)?;
            Ok(dropped as usize)
        })
        .await
    }

    async fn enqueue(&self, entries: Vec<PendingEntry>) -> Result<Vec<EnqueueResult>, StoreError> {
        self.run(|inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            let mut out = Vec::with_capacity(entries.len());
            for e in &entries {
                let queued = tx
                    .execute(
                        &format!(
                            "INSERT INTO pending ({PENDING_INSERT}) \
                             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 \
                             WHERE EXISTS (SELECT 1 FROM hooks WHERE id = $1 FOR SHARE) \
                             ON CONFLICT (hook_id, session_id) DO NOTHING"
                        ),
                        &pending_insert_params(e, &inner.host).as_refs(),
                    )
                    .await
                    .map_err(db)?;
                out.push(if queued == 1 {
                    EnqueueResult::Queued
                } else if tx
                    .query_opt("SELECT 1 FROM hooks WHERE id = $1", &[&e.hook_id.as_str()])
                    .await
                    .map_err(db)?
                    .is_some()
                {
                    EnqueueResult::AlreadyPending
                } else {
                    EnqueueResult::HookDeleted
                });
            }
            tx.commit().await.map_err(db)?;
            Ok(out)
        })
        .await
    }

    async fn enqueue_event(
        &self,
        request: &EnqueueRequest,
    ) -> Result<Vec<(HookId, EnqueueDecision)>, StoreError> {
        let request = request.clone();
        self.run(|inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            // The hooks that match, held against a delete until this is done.
            let rules = tx
                .query(
                    "SELECT id, event, delay_seconds, enabled, skip_cron, skip_subagents, errors, agent, \
                     repeat FROM hooks WHERE event = $1 ORDER BY position FOR SHARE",
                    &[&request.event.as_str()],
                )
                .await
                .map_err(db)?
                .iter()
                .map(rules_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            let pending = tx
                .query(
                    &format!("SELECT {PENDING_COLUMNS} FROM pending WHERE session_id = $1"),
                    &[&request.session.as_str()],
                )
                .await
                .map_err(db)?
                .iter()
                .map(pending_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            let (decisions, entries) = queue::plan_event(&rules, &pending, &request);
            let mut out = Vec::with_capacity(decisions.len());
            for (hook, decision) in decisions {
                let decision = match (&decision, entries.iter().find(|e| e.hook_id == hook)) {
                    (EnqueueDecision::Queue { .. }, Some(e)) => {
                        let n = tx
                            .execute(
                                &format!(
                                    "INSERT INTO pending ({PENDING_INSERT}) \
                                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                                     ON CONFLICT (hook_id, session_id) DO NOTHING"
                                ),
                                &pending_insert_params(e, &inner.host).as_refs(),
                            )
                            .await
                            .map_err(db)?;
                        if n == 1 {
                            decision
                        } else {
                            // Queued by a concurrent event of the same session just now.
                            EnqueueDecision::Skip(hooks_core::decide::SkipReason::AlreadyPending)
                        }
                    }
                    _ => decision,
                };
                out.push((hook, decision));
            }
            tx.commit().await.map_err(db)?;
            Ok(out)
        })
        .await
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        owner: &str,
        ttl: Duration,
        limit: usize,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let owner = owner.to_owned();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let (host, any) = inner.hosts();
            let limit = i64::try_from(limit.min(10_000)).unwrap_or(10_000);
            let expires = now + ttl;
            // Candidates: due, not under a live claim, of this host, in a session where no
            // other entry is claimed (a dead claim is taken over on its own entry first).
            // Locked rows are skipped: another claimer has them. One per session.
            let sql = format!(
                "WITH cand AS ( \
                   SELECT p.hook_id, p.session_id, p.due_at, p.position, p.claim_owner FROM pending p \
                   WHERE p.due_at <= $1 AND (p.claim_owner IS NULL OR p.claim_expires_at <= $1) \
                     AND ($5 OR p.host = $4) \
                     AND NOT EXISTS (SELECT 1 FROM pending q WHERE q.session_id = p.session_id \
                                     AND q.claim_owner IS NOT NULL AND q.hook_id <> p.hook_id) \
                   ORDER BY p.due_at, p.position LIMIT $3::bigint * 4 + 16 \
                   FOR UPDATE OF p SKIP LOCKED), \
                 one AS (SELECT DISTINCT ON (session_id) hook_id, session_id, due_at, position FROM cand \
                   ORDER BY session_id, due_at, position), \
                 pick AS (SELECT hook_id, session_id FROM one ORDER BY due_at, position LIMIT $3::bigint) \
                 UPDATE pending p SET claim_owner = $2, claim_expires_at = $6 \
                 FROM pick WHERE p.hook_id = pick.hook_id AND p.session_id = pick.session_id \
                 RETURNING {}, p.position",
                PENDING_COLUMNS
                    .split(", ")
                    .map(|col| format!("p.{col}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut tries = 0;
            loop {
                match c
                    .query(&sql, &[&now, &owner, &limit, &host, &any, &expires])
                    .await
                {
                    Ok(rows) => {
                        let mut got = rows
                            .iter()
                            .map(|r| Ok((pending_from_row(r)?, r.get::<_, i64>(PENDING_WIDTH))))
                            .collect::<Result<Vec<_>, StoreError>>()?;
                        got.sort_by_key(|(e, pos)| (e.due_at.time(), *pos));
                        return Ok(got.into_iter().map(|(e, _)| e).collect());
                    }
                    // Two claimers took entries of one session at once: the index refused
                    // the second. Look again; the session is held now.
                    Err(e)
                        if is_code(&e, &tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
                            && tries < 20 =>
                    {
                        tries += 1;
                    }
                    Err(e) => return Err(db(e)),
                }
            }
        })
        .await
    }

    async fn renew(
        &self,
        keys: &[EntryKey],
        owner: &str,
        expires_at: Timestamp,
    ) -> Result<Vec<EntryKey>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let (hooks, sessions) = key_arrays(keys);
        let owner = owner.to_owned();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            c.query(
                "UPDATE pending p SET claim_expires_at = $3 \
                 FROM unnest($1::text[], $2::text[]) AS k(hook_id, session_id) \
                 WHERE p.hook_id = k.hook_id AND p.session_id = k.session_id AND p.claim_owner = $4 \
                 RETURNING p.hook_id, p.session_id",
                &[&hooks, &sessions, &expires_at, &owner],
            )
            .await
            .map_err(db)?
            .iter()
            .map(|r| key_from_row(r, 0))
            .collect()
        })
        .await
    }

    async fn requeue(&self, key: &EntryKey, owner: &str, to: &Requeue) -> Result<(), StoreError> {
        let (key, owner, to) = (key.clone(), owner.to_owned(), to.clone());
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let w = to.waiting.as_ref();
            let n = c
                .execute(
                    "UPDATE pending SET claim_owner = NULL, claim_expires_at = NULL, due_at = $4, \
                     retries = $5, waiting_reason = $6, waiting_since = $7, waiting_open = $8, \
                     waiting_kind = $9, attempts = $10, not_taken = $11 \
                     WHERE hook_id = $1 AND session_id = $2 AND claim_owner = $3",
                    &[
                        &key.hook_id.as_str(),
                        &key.session_id.as_str(),
                        &owner,
                        &to.due_at,
                        &count_param(to.retries),
                        &w.map(|w| w.reason.as_str()),
                        &w.map(|w| w.since),
                        &w.map(Waiting::waits_for_close),
                        &w.map(|w| w.kind.as_str()),
                        &count_param(to.attempts),
                        &count_param(to.not_taken),
                    ],
                )
                .await
                .map_err(db)?;
            if n == 1 {
                Ok(())
            } else {
                Err(fence_error(&c, &key).await)
            }
        })
        .await
    }

    async fn wake(
        &self,
        session: &SessionId,
        due_at: Timestamp,
        open_only: bool,
    ) -> Result<usize, StoreError> {
        let session = session.clone();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let n = c
                .execute(
                    "UPDATE pending SET waiting_reason = NULL, waiting_since = NULL, waiting_open = NULL, \
                     waiting_kind = NULL, due_at = LEAST(due_at, $2) \
                     WHERE session_id = $1 AND waiting_reason IS NOT NULL \
                     AND (waiting_open OR (NOT $3 AND waiting_kind IS DISTINCT FROM $4))",
                    &[
                        &session.as_str(),
                        &due_at,
                        &open_only,
                        &WaitKind::Limit.as_str(),
                    ],
                )
                .await
                .map_err(db)?;
            Ok(n as usize)
        })
        .await
    }

    async fn complete(
        &self,
        key: &EntryKey,
        owner: &str,
        record: Option<HookRecord>,
    ) -> Result<(), StoreError> {
        let (key, owner) = (key.clone(), owner.to_owned());
        self.run(move |inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            let n = tx
                .execute(
                    "DELETE FROM pending WHERE hook_id = $1 AND session_id = $2 AND claim_owner = $3",
                    &[&key.hook_id.as_str(), &key.session_id.as_str(), &owner],
                )
                .await
                .map_err(db)?;
            if n != 1 {
                drop(tx);
                return Err(fence_error(&c, &key).await);
            }
            if let Some(r) = &record {
                write_record(&tx, &key.hook_id, &key.session_id, r).await?;
            }
            tx.commit().await.map_err(db)
        })
        .await
    }

    async fn release(&self, keys: &[EntryKey], owner: &str) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let (hooks, sessions) = key_arrays(keys);
        let owner = owner.to_owned();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            c.execute(
                "UPDATE pending p SET claim_owner = NULL, claim_expires_at = NULL \
                 FROM unnest($1::text[], $2::text[]) AS k(hook_id, session_id) \
                 WHERE p.hook_id = k.hook_id AND p.session_id = k.session_id AND p.claim_owner = $3",
                &[&hooks, &sessions, &owner],
            )
            .await
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn drop_unclaimed(
        &self,
        keys: &[EntryKey],
        now: Timestamp,
    ) -> Result<Vec<PendingEntry>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let (hooks, sessions) = key_arrays(keys);
        let returning = PENDING_COLUMNS
            .split(", ")
            .map(|c| format!("p.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let rows = c
                .query(
                    &format!(
                        "DELETE FROM pending p \
                         USING unnest($1::text[], $2::text[]) AS k(hook_id, session_id) \
                         WHERE p.hook_id = k.hook_id AND p.session_id = k.session_id \
                           AND (p.claim_owner IS NULL OR p.claim_expires_at <= $3) \
                         RETURNING {returning}, p.position"
                    ),
                    &[&hooks, &sessions, &now],
                )
                .await
                .map_err(db)?;
            let mut gone = rows
                .iter()
                .map(|r| Ok((pending_from_row(r)?, r.get::<_, i64>(PENDING_WIDTH))))
                .collect::<Result<Vec<_>, StoreError>>()?;
            // In queue order, as every store returns entries.
            gone.sort_by_key(|(_, position)| *position);
            Ok(gone.into_iter().map(|(e, _)| e).collect())
        })
        .await
    }

    async fn record(
        &self,
        hook: &HookId,
        session: &SessionId,
        record: HookRecord,
    ) -> Result<(), StoreError> {
        let (hook, session) = (hook.clone(), session.clone());
        self.run(move |inner| async move {
            let mut c = inner.conn().await?;
            let tx = c.transaction().await.map_err(db)?;
            write_record(&tx, &hook, &session, &record).await?;
            tx.commit().await.map_err(db)
        })
        .await
    }

    async fn append_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        let run = run.clone();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            append_run(&*c, &run).await
        })
        .await
    }

    async fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let filter = filter.clone();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let limit = filter
                .limit
                .map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs \
                 WHERE ($1::text IS NULL OR hook_id = $1) AND ($2::text IS NULL OR session_id = $2) \
                   AND ($4::timestamptz IS NULL OR started_at >= $4) \
                 ORDER BY position DESC LIMIT $3"
            );
            let mut out = c
                .query(
                    &sql,
                    &[
                        &filter.hook_id.as_ref().map(HookId::as_str),
                        &filter.session_id.as_ref().map(SessionId::as_str),
                        &limit,
                        &filter.since,
                    ],
                )
                .await
                .map_err(db)?
                .iter()
                .filter_map(run_from_row)
                .collect::<Vec<_>>();
            out.reverse();
            Ok(out)
        })
        .await
    }

    async fn summary(&self, now: Timestamp) -> Result<QueueSummary, StoreError> {
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let (host, any) = inner.hosts();
            let row = c
                .query_one(
                    "SELECT \
                       EXISTS (SELECT 1 FROM pending WHERE $3 OR host = $2), \
                       (SELECT min(due_at) FROM pending WHERE claim_owner IS NULL AND ($3 OR host = $2)), \
                       (SELECT min(CASE WHEN claim_expires_at > $1 THEN GREATEST(due_at, claim_expires_at) \
                                   ELSE due_at END) \
                          FROM pending WHERE claim_owner IS NOT NULL AND ($3 OR host = $2)), \
                       EXISTS (SELECT 1 FROM pending WHERE waiting_open AND ($3 OR host = $2))",
                    &[&now, &host, &any],
                )
                .await
                .map_err(db)?;
            let free: Option<OffsetDateTime> = row.get(1);
            let held: Option<OffsetDateTime> = row.get(2);
            Ok(QueueSummary {
                any_pending: row.get(0),
                next_wake: [free, held].into_iter().flatten().min(),
                open_waits: row.get(3),
            })
        })
        .await
    }

    async fn budget(&self) -> Result<Option<cost::Budget>, StoreError> {
        self.run(|inner| async move {
            let c = inner.conn().await?;
            match c
                .query_opt("SELECT daily_usd, time_zone, when_reached FROM budget", &[])
                .await
                .map_err(db)?
            {
                None => Ok(None),
                Some(r) => budget_from_row(&r).map(Some),
            }
        })
        .await
    }

    async fn pause(&self) -> Result<Option<Pause>, StoreError> {
        self.run(|inner| async move {
            let c = inner.conn().await?;
            Ok(
                c.query_opt("SELECT since, until, paused_by FROM pause", &[])
                    .await
                    .map_err(db)?
                    .map(|r| Pause {
                        since: r.get(0),
                        until: r.get(1),
                        by: r.get(2),
                    }),
            )
        })
        .await
    }

    async fn set_pause(&self, pause: Option<Pause>) -> Result<(), StoreError> {
        self.run(move |inner| {
            let pause = pause.clone();
            async move {
                let c = inner.conn().await?;
                match pause {
                    None => {
                        c.execute("DELETE FROM pause", &[]).await.map_err(db)?;
                    }
                    Some(p) => {
                        c.execute(
                            "INSERT INTO pause (only_row, since, until, paused_by) \
                             VALUES (true, $1, $2, $3) ON CONFLICT (only_row) DO UPDATE SET \
                             since = EXCLUDED.since, until = EXCLUDED.until, \
                             paused_by = EXCLUDED.paused_by",
                            &[&p.since, &p.until, &p.by],
                        )
                        .await
                        .map_err(db)?;
                    }
                }
                Ok(())
            }
        })
        .await
    }

    async fn set_budget(&self, budget: Option<cost::Budget>) -> Result<(), StoreError> {
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            match budget {
                None => {
                    c.execute("DELETE FROM budget", &[]).await.map_err(db)?;
                }
                Some(b) => {
                    c.execute(
                        "INSERT INTO budget (only_row, daily_usd, time_zone, when_reached) \
                         VALUES (true, $1, $2, $3) ON CONFLICT (only_row) DO UPDATE SET \
                         daily_usd = EXCLUDED.daily_usd, time_zone = EXCLUDED.time_zone, \
                         when_reached = EXCLUDED.when_reached",
                        &[
                            &b.daily.usd().unwrap_or(0.0),
                            &b.time_zone,
                            &b.when_reached.as_str(),
                        ],
                    )
                    .await
                    .map_err(db)?;
                }
            }
            Ok(())
        })
        .await
    }
}

fn meta(e: StoreError) -> MetaError {
    match e {
        StoreError::Corrupt(m) => MetaError::Corrupt(m),
        other => MetaError::Io(other.to_string()),
    }
}

fn mdb(e: tokio_postgres::Error) -> MetaError {
    MetaError::Io(describe(&e))
}

async fn session_state(
    c: &impl tokio_postgres::GenericClient,
    session: &SessionId,
) -> Result<(SessionState, Option<RunLease>), MetaError> {
    let row = c
        .query_opt(
            &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = $1"),
            &[&session.as_str()],
        )
        .await
        .map_err(mdb)?;
    let stamps = c
        .query(
            "SELECT hook_id, at FROM stamps WHERE session_id = $1",
            &[&session.as_str()],
        )
        .await
        .map_err(mdb)?;
    let (mut state, lease) = match &row {
        Some(r) => session_from_row(r),
        None => (SessionState::default(), None),
    };
    state.stamps = stamps
        .iter()
        .filter_map(|r| Some((HookId::parse(r.get::<_, &str>(0)).ok()?, r.get(1))))
        .collect();
    Ok((state, lease))
}

#[async_trait]
impl SessionStore for PgStore {
    async fn state(
        &self,
        session: &SessionId,
    ) -> Result<(SessionState, Option<RunLease>), MetaError> {
        let session = session.clone();
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            Ok(session_state(&*c, &session).await)
        })
        .await
        .map_err(meta)?
    }

    async fn remember(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> Result<SessionState, MetaError> {
        let (session, u) = (session.clone(), update.clone());
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let r = c
                .execute(
                    "INSERT INTO sessions (session_id, cwd, transcript_path, origin) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (session_id) DO UPDATE SET \
                       cwd = COALESCE(sessions.cwd, EXCLUDED.cwd), \
                       transcript_path = COALESCE(EXCLUDED.transcript_path, sessions.transcript_path), \
                       origin = COALESCE(EXCLUDED.origin, sessions.origin), changed_at = now() \
                     WHERE (sessions.cwd, sessions.transcript_path, sessions.origin) IS DISTINCT FROM \
                       (COALESCE(sessions.cwd, EXCLUDED.cwd), \
                        COALESCE(EXCLUDED.transcript_path, sessions.transcript_path), \
                        COALESCE(EXCLUDED.origin, sessions.origin))",
                    &[
                        &session.as_str(),
                        &u.cwd,
                        &u.transcript_path,
                        &u.origin.map(Origin::as_str),
                    ],
                )
                .await;
            if let Err(e) = r {
                return Ok(Err(mdb(e)));
            }
            Ok(session_state(&*c, &session).await.map(|(s, _)| s))
        })
        .await
        .map_err(meta)?
    }

    async fn stamp(
        &self,
        session: &SessionId,
        hook: &HookId,
        at: Timestamp,
    ) -> Result<StampResult, MetaError> {
        let (session, hook) = (session.clone(), hook.clone());
        self.run(move |inner| async move {
            let mut c = inner.conn().await?;
            Ok(stamp(&mut c, &session, &hook, at).await)
        })
        .await
        .map_err(meta)?
    }

    async fn unstamp(&self, session: &SessionId, hook: &HookId) -> Result<bool, MetaError> {
        let (session, hook) = (session.clone(), hook.clone());
        self.run(move |inner| {
            let (session, hook) = (session.clone(), hook.clone());
            async move {
                let c = inner.conn().await?;
                let n = c
                    .execute(
                        "DELETE FROM stamps WHERE session_id = $1 AND hook_id = $2",
                        &[&session.as_str(), &hook.as_str()],
                    )
                    .await
                    .map_err(db)?;
                Ok(n > 0)
            }
        })
        .await
        .map_err(meta)
    }

    async fn begin_run(&self, session: &SessionId, lease: &RunLease) -> Result<Begin, MetaError> {
        let (session, lease) = (session.clone(), lease.clone());
        self.run(move |inner| async move {
            let mut c = inner.conn().await?;
            Ok(begin_run(&mut c, &session, &lease).await)
        })
        .await
        .map_err(meta)?
    }

    async fn update_lease(&self, session: &SessionId, lease: &RunLease) -> Result<bool, MetaError> {
        let (session, lease) = (session.clone(), lease.clone());
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let p = LeaseParams::of(&session, &lease);
            let n = c
                .execute(
                    &format!("UPDATE sessions SET {LEASE_SET}, changed_at = now() WHERE session_id = $1 AND lease_run_id = $2"),
                    &p.as_refs(),
                )
                .await;
            Ok(n.map(|n| n == 1).map_err(mdb))
        })
        .await
        .map_err(meta)?
    }

    async fn end_lease(&self, session: &SessionId, run_id: &str) -> Result<(), MetaError> {
        let (session, run_id) = (session.clone(), run_id.to_owned());
        self.run(move |inner| async move {
            let c = inner.conn().await?;
            let r = c
                .execute(
                    &format!(
                        "UPDATE sessions SET {LEASE_CLEAR}, changed_at = now() WHERE session_id = $1 AND lease_run_id = $2"
                    ),
                    &[&session.as_str(), &run_id],
                )
                .await;
            Ok(r.map(|_| ()).map_err(mdb))
        })
        .await
        .map_err(meta)?
    }

    async fn leases(&self) -> Result<Vec<(SessionId, RunLease)>, MetaError> {
        self.run(|inner| async move {
            let c = inner.conn().await?;
            let rows = c
                .query(
                    &format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions WHERE lease_run_id IS NOT NULL ORDER BY session_id"
                    ),
                    &[],
                )
                .await;
            Ok(rows.map_err(mdb).map(|rows| {
                rows.iter()
                    .filter_map(|r| {
                        let s = SessionId::parse(r.get::<_, &str>(0)).ok()?;
                        Some((s, session_from_row(r).1?))
                    })
                    .collect()
            }))
        })
        .await
        .map_err(meta)?
    }

    async fn sessions(&self) -> Result<Vec<SessionRecord>, MetaError> {
        self.run(|inner| async move {
            let c = inner.conn().await?;
            let ids: Vec<String> = match c
                .query(
                    "SELECT session_id FROM sessions UNION SELECT session_id FROM stamps ORDER BY 1",
                    &[],
                )
                .await
            {
                Ok(rows) => rows.iter().map(|r| r.get(0)).collect(),
                Err(e) => return Ok(Err(mdb(e))),
            };
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let Ok(session) = SessionId::parse(&id) else {
                    continue;
                };
                match session_state(&*c, &session).await {
                    Ok((state, lease)) => out.push(SessionRecord {
                        session,
                        state,
                        lease,
                    }),
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(Ok(out))
        })
        .await
        .map_err(meta)?
    }

    async fn prune(
        &self,
        before: Timestamp,
        keep: &HashSet<SessionId>,
    ) -> Result<Vec<SessionId>, MetaError> {
        let keep: Vec<String> = keep.iter().map(ToString::to_string).collect();
        self.run(move |inner| async move {
            let mut c = inner.conn().await?;
            let r = async {
                let tx = c.transaction().await?;
                let gone: Vec<String> = tx
                    .query(
                        "DELETE FROM sessions s WHERE s.changed_at < $1 AND s.lease_run_id IS NULL \
                         AND NOT (s.session_id = ANY ($2)) \
                         AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.session_id = s.session_id) \
                         RETURNING s.session_id",
                        &[&before, &keep],
                    )
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                tx.execute("DELETE FROM stamps WHERE session_id = ANY ($1)", &[&gone])
                    .await?;
                tx.commit().await?;
                Ok::<_, tokio_postgres::Error>(gone)
            }
            .await;
            Ok(r.map_err(mdb).map(|gone| {
                let mut ids: Vec<SessionId> =
                    gone.iter().filter_map(|s| SessionId::parse(s).ok()).collect();
                ids.sort();
                ids
            }))
        })
        .await
        .map_err(meta)?
    }
}

async fn touch_session(
    c: &impl tokio_postgres::GenericClient,
    session: &SessionId,
) -> Result<(), tokio_postgres::Error> {
    c.execute(
        "INSERT INTO sessions (session_id) VALUES ($1) \
         ON CONFLICT (session_id) DO UPDATE SET changed_at = now()",
        &[&session.as_str()],
    )
    .await
    .map(|_| ())
}

async fn stamp(
    c: &mut Client,
    session: &SessionId,
    hook: &HookId,
    at: Timestamp,
) -> Result<StampResult, MetaError> {
    let tx = c.transaction().await.map_err(mdb)?;
    let won = tx
        .query_opt(
            "INSERT INTO stamps (session_id, hook_id, at) VALUES ($1, $2, $3) \
             ON CONFLICT (session_id, hook_id) DO NOTHING RETURNING at",
            &[&session.as_str(), &hook.as_str(), &at],
        )
        .await
        .map_err(mdb)?;
    let result = match won {
        Some(_) => {
            touch_session(&tx, session).await.map_err(mdb)?;
            StampResult::Won
        }
        None => {
            let prev: OffsetDateTime = tx
                .query_one(
                    "SELECT at FROM stamps WHERE session_id = $1 AND hook_id = $2",
                    &[&session.as_str(), &hook.as_str()],
                )
                .await
                .map_err(mdb)?
                .get(0);
            StampResult::Lost { at: prev }
        }
    };
    tx.commit().await.map_err(mdb)?;
    Ok(result)
}

async fn begin_run(
    c: &mut Client,
    session: &SessionId,
    lease: &RunLease,
) -> Result<Begin, MetaError> {
    let tx = c.transaction().await.map_err(mdb)?;
    tx.execute(
        "INSERT INTO sessions (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING",
        &[&session.as_str()],
    )
    .await
    .map_err(mdb)?;
    // The session's row, held until the end: one run starts at a time per session.
    let row = tx
        .query_one(
            &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = $1 FOR UPDATE"),
            &[&session.as_str()],
        )
        .await
        .map_err(mdb)?;
    if let Some(held) = session_from_row(&row).1 {
        return Ok(Begin::Held(held));
    }
    let prev = tx
        .query_opt(
            "SELECT at FROM stamps WHERE session_id = $1 AND hook_id = $2",
            &[&session.as_str(), &lease.hook_id.as_str()],
        )
        .await
        .map_err(mdb)?;
    if let Some(r) = prev {
        return Ok(Begin::Stamped { at: r.get(0) });
    }
    tx.execute(
        "INSERT INTO stamps (session_id, hook_id, at) VALUES ($1, $2, $3)",
        &[
            &session.as_str(),
            &lease.hook_id.as_str(),
            &lease.started_at,
        ],
    )
    .await
    .map_err(mdb)?;
    let p = LeaseParams::of(session, lease);
    tx.execute(
        &format!("UPDATE sessions SET {LEASE_SET}, changed_at = now() WHERE session_id = $1"),
        &p.as_refs(),
    )
    .await
    .map_err(mdb)?;
    tx.commit().await.map_err(mdb)?;
    Ok(Begin::Won)
}

impl StoreSignals for PgStore {
    fn watch(&self, wake: Box<dyn Fn() + Send + Sync>) -> Result<(), String> {
        if !self.inner.listen {
            return Err("listening for changes is off for this store (a pooler in transaction mode breaks LISTEN)".into());
        }
        let inner = self.inner.clone();
        self.rt().spawn(listen(inner, wake));
        Ok(())
    }

    fn fingerprint(&self) -> Option<String> {
        None
    }

    fn exists(&self) -> bool {
        true
    }

    fn housekeep(&self) -> Result<usize, StoreError> {
        // Nothing is left behind by a writer that died: its transaction rolled back, and
        // its claims expire where the claim statement looks.
        Ok(0)
    }

    fn location(&self) -> String {
        self.inner.location.clone()
    }

    fn restore_hint(&self) -> Option<String> {
        None
    }
}

/// Listens on the queue's channel for as long as the store lives, calling `wake` for each
/// notification, and once after each reconnection (what changed meanwhile is not lost).
async fn listen(inner: Arc<Inner>, wake: Box<dyn Fn() + Send + Sync>) {
    let mut backoff = std::time::Duration::from_millis(200);
    loop {
        let r: Result<(), tokio_postgres::Error> = async {
            macro_rules! drive {
                ($conn:expr) => {{
                    let mut conn = $conn;
                    let (client, conn) = (conn.0, &mut conn.1);
                    let listening = client.batch_execute("LISTEN hooks_app_queue");
                    tokio::pin!(listening);
                    loop {
                        tokio::select! {
                            r = &mut listening => { r?; break; }
                            m = std::future::poll_fn(|cx| conn.poll_message(cx)) => match m {
                                Some(Ok(_)) => {}
                                Some(Err(e)) => return Err(e),
                                None => return Ok(()),
                            }
                        }
                    }
                    wake();
                    backoff = std::time::Duration::from_millis(200);
                    loop {
                        match std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                            Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => wake(),
                            Some(Ok(_)) => {}
                            Some(Err(e)) => return Err(e),
                            None => return Ok(()),
                        }
                    }
                }};
            }
            match &inner.tls {
                Tls::Off => drive!(inner.config.connect(NoTls).await?),
                Tls::On(tls) => drive!(inner.config.connect(tls.clone()).await?),
            }
        }
        .await;
        let _ = r;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(std::time::Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_as_libpq_reads_them_and_passwords_never_shown() {
        for (url, tls) in [
            ("postgres://u@h:5432/db", true),
            ("postgres://u@h/db?sslmode=disable", false),
            (
                "postgresql://u@h/db?sslmode=require&connect_timeout=3",
                true,
            ),
            ("postgres://u@h/db?sslmode=verify-full", true),
            (
                "postgres://u@h/db?sslmode=verify-ca&application_name=x",
                true,
            ),
        ] {
            let (_, t) = parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(matches!(t, Tls::On(_)), tls, "{url}");
        }
        for bad in [
            "postgres://u@h/db?sslmode=sometimes",
            "postgres://u@h/db?nonsense=1",
        ] {
            let e = parse_url(bad).err().expect("refused").to_string();
            assert!(
                e.starts_with("invalid store: must be a PostgreSQL URL"),
                "{e}"
            );
        }
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/hooks?sslmode=require"),
            "postgres://app:***@db:5432/hooks?sslmode=require"
        );
        assert_eq!(
            redact("postgres://db/hooks?user=a&password=x"),
            "postgres://db/hooks?user=a&password=***"
        );
        assert_eq!(redact("postgres://app@db/hooks"), "postgres://app@db/hooks");
    }
}
