//! Adapters a team adds to the whole app without forking it: a store named on the command
//! line as `--store NAME:ARG` and a runner named as `--runner NAME` (its argument in
//! `--runner-url`), each registered under its name by a `main.rs` of a few lines:
//!
//! ```text
//! use std::sync::Arc;
//! use hooks_app::{Adapters, RunnerMake};
//! # fn my_runner(_: &RunnerMake<'_>) -> Result<Arc<dyn hooks_core::ports::Runner>, String> { unimplemented!() }
//!
//! fn main() -> std::process::ExitCode {
//!     Adapters::new().runner("mine", my_runner).run()
//! }
//! ```
//!
//! Every command, the daemon (and the one started on demand), `claude-hook`, HTTP and the
//! page then work with them as with the built-in ones: the choice passes to every hooks-app
//! this one starts, and `install` writes it into the hook command it installs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hooks_core::ports::{HookStore, Runner, SessionStore, StoreSignals};

/// The store through its ports, what a [`StoreAdapter`] returns: its data, the sessions'
/// durable state kept beside it, and what a daemon needs besides.
#[derive(Clone)]
pub struct Store {
    /// Hooks, the queue and the run log.
    pub data: Arc<dyn HookStore>,
    /// The sessions' durable state: stamps, run leases, what is remembered.
    pub sessions: Arc<dyn SessionStore>,
    /// Another process's changes, and upkeep.
    pub signals: Arc<dyn StoreSignals>,
    /// The store's clock less this host's: a shared store's time is the one that counts.
    pub clock_offset: time::Duration,
}

impl std::ops::Deref for Store {
    type Target = dyn HookStore;
    fn deref(&self) -> &Self::Target {
        &*self.data
    }
}

/// What a store adapter is told when the app opens a store.
#[non_exhaustive]
pub struct StoreOpen<'a> {
    /// What follows `NAME:` in `--store NAME:ARG`.
    pub arg: &'a str,
    /// This host's id in a shared store.
    pub host_id: &'a str,
    /// The data folder: where a store kept on this machine may live.
    pub data_dir: &'a Path,
    /// Whether a store that is not there yet is to be made and seeded
    /// ([`hooks_core::seed_hooks`]); without it, a store not there is an error, and
    /// nothing is made. Commands that only read (`hooks list`, `pending`, `status`, …)
    /// open without it.
    pub create: bool,
    /// `--any-host`: entries queued by any host are this host's to fire. A store shared by
    /// hosts honours it; one that cannot refuses to open, naming `--any-host`.
    pub any_host: bool,
    /// `--store-poll`: the daemon polls the store for changes rather than being told of
    /// them ([`hooks_core::ports::StoreSignals::watch`] is not called). A store whose
    /// change feed needs setting up at open may skip it.
    pub poll: bool,
}

/// Opens a store of one kind. The store it returns is held to the contract
/// ([`hooks_core::hook_store_contract!`] and its siblings).
pub trait StoreAdapter: Send + Sync {
    /// The store `at.arg` names, or why not (shown to the person, after `store:`).
    fn open(&self, at: &StoreOpen<'_>) -> Result<Store, String>;

    /// `store migrate`: brings the store `at.arg` names up to its adapter's schema, and
    /// says what it did (`Some("applied migrations 3, 4")`), or `None` when there was
    /// nothing to do. The default does nothing: an adapter that keeps no schema, or
    /// migrates on [`StoreAdapter::open`], need not write one.
    fn migrate(&self, at: &StoreOpen<'_>) -> Result<Option<String>, String> {
        let _ = at;
        Ok(None)
    }
}

impl<'a> StoreOpen<'a> {
    /// What the app tells an adapter, for an adapter's own tests.
    /// `any_host` and `poll` are off; set them on the value to test them.
    pub fn new(arg: &'a str, host_id: &'a str, data_dir: &'a Path, create: bool) -> Self {
        Self {
            arg,
            host_id,
            data_dir,
            create,
            any_host: false,
            poll: false,
        }
    }
}

impl<F> StoreAdapter for F
where
    F: Fn(&StoreOpen<'_>) -> Result<Store, String> + Send + Sync,
{
    fn open(&self, at: &StoreOpen<'_>) -> Result<Store, String> {
        self(at)
    }
}

/// What a runner adapter is told when the app needs a runner.
#[non_exhaustive]
pub struct RunnerMake<'a> {
    /// `--runner-url` (`HOOKS_RUNNER_URL`), as given: the runner's own argument.
    pub arg: Option<&'a str>,
    /// How long one run may take; the runner ends a run that takes longer.
    pub timeout: Duration,
}

impl<'a> RunnerMake<'a> {
    /// What the app tells an adapter, for an adapter's own tests.
    pub fn new(arg: Option<&'a str>, timeout: Duration) -> Self {
        Self { arg, timeout }
    }
}

/// Makes a runner of one kind.
pub trait RunnerAdapter: Send + Sync {
    /// The runner, or why not (shown to the person, after `runner:`).
    fn make(&self, with: &RunnerMake<'_>) -> Result<Arc<dyn Runner>, String>;

    /// What `doctor` says of this runner: `Ok(detail)` when it can run follow-ups (its
    /// program is there and runs, its backend answers), `Err(why)` when it cannot, said so
    /// a person knows what to fix. It must start no follow-up and change nothing. The
    /// default makes the runner and says only that it was made: override it to look at
    /// what a run needs (see `examples/script-agent`).
    fn check(&self, with: &RunnerMake<'_>) -> Result<String, String> {
        self.make(with)
            .map(|_| "made (this runner checks nothing more)".to_owned())
    }
}

impl<F> RunnerAdapter for F
where
    F: Fn(&RunnerMake<'_>) -> Result<Arc<dyn Runner>, String> + Send + Sync,
{
    fn make(&self, with: &RunnerMake<'_>) -> Result<Arc<dyn Runner>, String> {
        self(with)
    }
}

/// The names the built-in stores answer to.
pub const BUILT_IN_STORES: [&str; 3] = ["json", "postgres", "postgresql"];
/// The names the built-in runners answer to.
pub const BUILT_IN_RUNNERS: [&str; 3] = ["claude", "codex", "webhook"];

/// The adapters this build of the app adds to the built-in ones, by name.
#[derive(Default, Clone)]
pub struct Adapters {
    stores: BTreeMap<String, Arc<dyn StoreAdapter>>,
    runners: BTreeMap<String, Arc<dyn RunnerAdapter>>,
}

static REGISTERED: OnceLock<Adapters> = OnceLock::new();

fn check_name(kind: &str, name: &str, taken: &[&str]) {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !taken.contains(&name);
    // A mistake of the program that composes the app, not of its user.
    assert!(
        ok,
        "{kind} adapter name {name:?}: must be 1 to 32 of a-z, 0-9 and -, and not {}",
        taken.join(", ")
    );
}

impl Adapters {
    /// None besides the built-in ones.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a store named `name`, chosen by `--store name:ARG`.
    ///
    /// # Panics
    /// When `name` is not 1 to 32 of `a-z`, `0-9` and `-`, or is a built-in store's.
    pub fn store(mut self, name: &str, adapter: impl StoreAdapter + 'static) -> Self {
        check_name("store", name, &BUILT_IN_STORES);
        self.stores.insert(name.to_owned(), Arc::new(adapter));
        self
    }

    /// Adds a runner named `name`, chosen by `--runner name` (`HOOKS_RUNNER=name`).
    ///
    /// # Panics
    /// When `name` is not 1 to 32 of `a-z`, `0-9` and `-`, or is a built-in runner's.
    pub fn runner(mut self, name: &str, adapter: impl RunnerAdapter + 'static) -> Self {
        check_name("runner", name, &BUILT_IN_RUNNERS);
        self.runners.insert(name.to_owned(), Arc::new(adapter));
        self
    }

    /// Makes these the adapters of this process, besides the built-in ones, for every
    /// `Context` made from now on (`hooks_app::Adapters::run` does it, then runs the
    /// command line). A second call keeps the first set: one process, one composition.
    pub fn register(self) {
        let _ = REGISTERED.set(self);
    }

    /// The adapters this process was composed with (none for plain `hooks-app`).
    pub(crate) fn registered() -> &'static Adapters {
        REGISTERED.get_or_init(Adapters::default)
    }

    pub(crate) fn find_store(&self, name: &str) -> Option<&Arc<dyn StoreAdapter>> {
        self.stores.get(name)
    }

    pub(crate) fn find_runner(&self, name: &str) -> Option<&Arc<dyn RunnerAdapter>> {
        self.runners.get(name)
    }

    /// The runner names a person may give, for an error message.
    pub(crate) fn runner_names(&self) -> Vec<&str> {
        BUILT_IN_RUNNERS
            .iter()
            .copied()
            .chain(self.runners.keys().map(String::as_str))
            .collect()
    }

    /// The store forms a person may give, for an error message.
    pub(crate) fn store_names(&self) -> Vec<String> {
        self.stores.keys().map(|k| format!("{k}:…")).collect()
    }
}
