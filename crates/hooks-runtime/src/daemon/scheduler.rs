//! The scheduling loop of `serve` and `tick`: claims what is due, runs it within the
//! concurrency, renews claims and leases, wakes on the store's changes, backs off when the
//! store fails, goes idle on demand, and shuts down within the grace.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::PoisonError;
use std::time::Duration;

use hooks_core::service::{FireReport, Service, ServiceError};
use hooks_core::stamp::Timestamp;
use hooks_core::*;
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};
use tracing::{error, info, warn};

use super::ondemand::DaemonMark;
use super::ondemand::mark_running;
use super::options::RunOptions;
use super::report::log_report;
use crate::compose::Store;
use crate::{AppError, AppResult};

/// Accounts for the runs of daemons on this host that died mid-run: ends what they left
/// running and records each as interrupted.
pub async fn recover_dead_runs(svc: &Service) {
    match svc.recover_dead_runs().await {
        Ok(found) => {
            for (session, lease, status) in found {
                let (hook, session) = (lease.hook_id.as_str(), session.as_str());
                match status {
                    Some(status) => {
                        warn!(hook, session, run = %lease.run_id, owner = %lease.owner, status = %status, "a run whose daemon died was accounted for")
                    }
                    None => {
                        warn!(hook, session, run = %lease.run_id, owner = %lease.owner, "a run whose daemon died: what it left running was ended; its entry records it")
                    }
                }
            }
        }
        Err(e) => error!(error = %e, "looking for runs of dead daemons failed"),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
pub enum Mode {
    Serve,
    Tick,
}

pub struct Running {
    pub entry: PendingEntry,
}

pub struct Loop {
    pub svc: Arc<Service>,
    pub store: Store,
    pub concurrency: usize,
    pub renew_every: Duration,
    pub mode: Mode,
    pub tasks: JoinSet<Result<FireReport, ServiceError>>,
    pub running: HashMap<tokio::task::Id, Running>,
    pub waiting: VecDeque<PendingEntry>,
    /// Some entry waits for a conversation to be closed: check every [`OPEN_CHECK`].
    pub open_waits: bool,
    /// Entries in the store at the last look, claimed or not.
    pub pending: usize,
    /// Exit once idle for a while (`serve --idle-exit`, `--on-demand`).
    pub idle: Option<Idle>,
    pub idle_since: Option<Instant>,
    /// What `/metrics` shows of this daemon's firings, when it serves HTTP.
    pub metrics: Option<Arc<hooks_http::Metrics>>,
    /// After a failed look at the store: how long until the next try (1 s, doubling to
    /// 60 s), so a passing fault never leaves the daemon without a timer.
    pub store_backoff: Option<Duration>,
    /// The data folder, where the alert settings are.
    pub alerts_dir: Option<std::path::PathBuf>,
    /// Alerts being sent: waited for (a while) before the loop ends.
    pub alerts: JoinSet<()>,
}

/// The first wait after a failed look at the store, and the longest.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);

const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// What an idle exit needs: how long, and the locks to let go of before the last look.
pub struct Idle {
    pub after: Duration,
    pub dir: std::path::PathBuf,
    pub mark: Option<DaemonMark>,
    pub singleton: Option<std::fs::File>,
}

/// How often `serve` looks whether conversations that entries wait for are still open.
const OPEN_CHECK: Duration = Duration::from_secs(2);

impl Loop {
    pub fn new(svc: Arc<Service>, store: Store, a: &RunOptions, mode: Mode) -> Self {
        Self {
            svc,
            store,
            concurrency: usize::from(a.concurrency),
            renew_every: Duration::from_secs((a.claim_ttl / 3).max(1)),
            mode,
            tasks: JoinSet::new(),
            running: HashMap::new(),
            waiting: VecDeque::new(),
            open_waits: false,
            pending: 0,
            idle: None,
            idle_since: None,
            metrics: None,
            store_backoff: None,
            alerts_dir: None,
            alerts: JoinSet::new(),
        }
    }

    /// A look at the store failed: logged when it starts failing (not at every retry), and
    /// tried again after the current backoff.
    pub fn store_failed(&mut self, what: &str, e: &dyn std::fmt::Display) -> Duration {
        let wait = match self.store_backoff {
            None => {
                error!(error = %e, retry_in_s = BACKOFF_FIRST.as_secs(), "{what} failed; trying again with a backoff");
                BACKOFF_FIRST
            }
            Some(w) => (w * 2).min(BACKOFF_MAX),
        };
        self.store_backoff = Some(wait);
        wait
    }

    pub fn store_ok(&mut self) {
        if self.store_backoff.take().is_some() {
            info!("the store answers again");
        }
    }

    /// Whether to exit after being idle. The locks go first (a hook queuing from now on
    /// starts a new daemon), then the store is read once more: what a hook queued before
    /// that is seen here, and this daemon goes on instead.
    pub async fn idle_exit(&mut self) -> bool {
        let Some(idle) = self.idle.as_mut() else {
            return false;
        };
        // Someone using the page or the API keeps the daemon: idle counts from then.
        let used = self.metrics.as_ref().and_then(|m| {
            *m.last_request
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        });
        if let Some(at) = used.filter(|at| at.elapsed() < idle.after) {
            self.idle_since = Some(at.into());
            return false;
        }
        let on_demand = idle.singleton.is_some();
        idle.singleton = None;
        idle.mark = None;
        let pending = self.store.snapshot().await.map_or(1, |s| s.pending.len());
        if pending == 0 {
            info!(
                idle_s = idle.after.as_secs(),
                "idle with nothing pending; exiting"
            );
            return true;
        }
        if on_demand {
            match super::ondemand::take_singleton(&idle.dir) {
                Some(l) => idle.singleton = Some(l),
                None => {
                    info!("another on-demand daemon took over; exiting");
                    return true;
                }
            }
        }
        idle.mark = mark_running(&idle.dir);
        self.idle_since = None;
        false
    }

    pub fn start(&mut self, entry: PendingEntry) {
        info!(
            hook = entry.hook_id.as_str(),
            session = entry.session_id.as_str(),
            "firing"
        );
        if let (Some(m), Some(due)) = (&self.metrics, entry.due_at.time()) {
            m.started((self.svc.now() - due).as_seconds_f64());
        }
        let svc = self.svc.clone();
        let e = entry.clone();
        let handle = self.tasks.spawn(async move { svc.fire(&e).await });
        self.running.insert(handle.id(), Running { entry });
    }

    /// Sends the alerts `alerts set` asked for about an ended follow-up, on a thread of its
    /// own: a slow or unreachable URL never holds up the daemon or fails a follow-up.
    pub fn alert(&mut self, report: FireReport) {
        let Some(dir) = self.alerts_dir.clone() else {
            return;
        };
        let alerts = match hooks_alerts::Alerts::read(&dir) {
            Ok(Some(a)) => a,
            Ok(None) => return,
            Err(e) => {
                warn!(error = %e, "the alert settings cannot be read; no alert sent");
                return;
            }
        };
        if hooks_alerts::kind_of(&report).is_none() {
            return;
        }
        // Those sent already are let go of, so a daemon that runs for months holds none.
        while self.alerts.try_join_next().is_some() {}
        let svc = self.svc.clone();
        self.alerts.spawn(async move {
            let cwd = svc.session_cwd(&report.key.session_id).await.ok().flatten();
            let page = super::ondemand::http_url(&dir);
            let problems = tokio::task::spawn_blocking(move || {
                hooks_alerts::send(&alerts, &report, cwd.as_deref(), page.as_deref())
            })
            .await
            .unwrap_or_else(|e| vec![format!("alert not sent: {e}")]);
            for p in problems {
                warn!("{p}");
            }
        });
    }

    pub fn held_keys(&self) -> Vec<EntryKey> {
        self.running
            .values()
            .map(|r| r.entry.key())
            .chain(self.waiting.iter().map(PendingEntry::key))
            .collect()
    }

    /// Claims up to `limit` entries; `Err` carries how long to wait before trying again.
    pub async fn claim(&mut self, limit: usize) -> Result<bool, Duration> {
        match self.svc.claim(limit).await {
            Ok(c) => {
                let got = !c.is_empty();
                self.waiting.extend(c);
                Ok(got)
            }
            Err(e) => Err(self.store_failed("claiming", &e)),
        }
    }

    /// When the next entry may become claimable, asked of the store; notes whether any
    /// entry waits for an open conversation.
    /// `Err` carries how long to wait before looking again.
    pub async fn next_wake(&mut self) -> Result<Option<Timestamp>, Duration> {
        match self.store.summary(self.svc.now()).await {
            Ok(s) => {
                self.open_waits = s.open_waits;
                self.pending = usize::from(s.any_pending);
                Ok(s.next_wake)
            }
            Err(e) => Err(self.store_failed("reading the store", &e)),
        }
    }

    pub async fn run(mut self, grace: Duration) -> AppResult {
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| AppError::runtime(e.to_string()))?;
        let mut int =
            signal(SignalKind::interrupt()).map_err(|e| AppError::runtime(e.to_string()))?;
        let mut renew = tokio::time::interval(self.renew_every);
        renew.reset();
        // Another process's change wakes the daemon through a file watch; a `stat` of the
        // store file is the safety net (and the only means where folders cannot be watched).
        let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
        let watching = self.mode == Mode::Serve
            && match self.store.signals.watch(Box::new(move || {
                let _ = tx.send(());
            })) {
                Ok(()) => true,
                Err(e) => {
                    warn!(error = %e, "checking the store every 250 ms instead");
                    false
                }
            };
        let mut poll =
            tokio::time::interval(Duration::from_millis(if watching { 5000 } else { 250 }));
        let mut sig = self.store.signals.fingerprint();
        let mut open_check = tokio::time::interval(OPEN_CHECK);
        let mut deadline: Option<Instant> = None;
        recover_dead_runs(&self.svc).await;
        if self.mode == Mode::Tick {
            if let Ok(snap) = self.store.snapshot().await
                && let Err(e) = self.svc.wake_closed(&snap.pending).await
            {
                error!(error = %e, "checking open conversations failed");
            }
            if self.claim(usize::MAX).await.is_err() {
                return Err(AppError::runtime(
                    "could not claim what is due: the store did not answer (see the log)",
                ));
            }
        }
        let mut recheck = true;
        let mut wake: Option<Instant> = None;
        loop {
            if deadline.is_none() {
                if self.mode == Mode::Serve && recheck {
                    let free = self
                        .concurrency
                        .saturating_sub(self.running.len() + self.waiting.len());
                    let claimed = if free > 0 {
                        self.claim(free).await
                    } else {
                        Ok(false)
                    };
                    let now = self.svc.now();
                    let next = match claimed {
                        Ok(claimed) => self.next_wake().await.map(|t| (t, claimed)),
                        Err(wait) => Err(wait),
                    };
                    wake = match next {
                        Ok((t, claimed)) => {
                            self.store_ok();
                            t.map(|t| {
                                let secs = (t - now).as_seconds_f64().max(0.0);
                                let at = Instant::now() + Duration::from_secs_f64(secs);
                                // Due but not claimable now (its session is busy elsewhere,
                                // or no slot is free): look again in a second, not in a busy
                                // loop.
                                if secs == 0.0 && !claimed {
                                    at + Duration::from_secs(1)
                                } else {
                                    at
                                }
                            })
                        }
                        // The store did not answer: a timer all the same.
                        Err(wait) => Some(Instant::now() + wait),
                    };
                    recheck = false;
                    // Its folder deleted (a user's clean-up, a temporary folder gone), a
                    // daemon has nothing left to serve and would otherwise stay forever.
                    if self.running.is_empty() && !self.store.signals.exists() {
                        warn!(store = %self.store.signals.location(), "the store is gone; exiting");
                        break;
                    }
                }
                while self.running.len() < self.concurrency {
                    let Some(e) = self.waiting.pop_front() else {
                        break;
                    };
                    self.start(e);
                }
            }
            if self.running.is_empty()
                && (deadline.is_some() || (self.mode == Mode::Tick && self.waiting.is_empty()))
            {
                break;
            }
            if self.idle.is_some() {
                if self.running.is_empty() && self.waiting.is_empty() && self.pending == 0 {
                    self.idle_since.get_or_insert_with(Instant::now);
                } else {
                    self.idle_since = None;
                }
            }
            let idle_at = match (&self.idle, self.idle_since) {
                (Some(i), Some(since)) if deadline.is_none() => Some(since + i.after),
                _ => None,
            };
            tokio::select! {
                Some(done) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    recheck = true;
                    match done {
                        Ok((id, Ok(report))) => {
                            self.running.remove(&id);
                            log_report(&report);
                            self.alert(report);
                        }
                        Ok((id, Err(e))) => {
                            let r = self.running.remove(&id);
                            error!(error = %e, hook = ?r.as_ref().map(|r| r.entry.hook_id.to_string()), session = ?r.as_ref().map(|r| r.entry.session_id.to_string()), "firing failed; the entry stays claimed until its claim expires");
                        }
                        Err(e) => {
                            self.running.remove(&e.id());
                            error!(error = %e, "a firing task ended abnormally");
                        }
                    }
                }
                _ = async { sleep_until(wake.unwrap_or_else(Instant::now)).await }, if wake.is_some() && deadline.is_none() => {
                    recheck = true;
                    wake = None;
                }
                Some(()) = changed.recv(), if watching && deadline.is_none() => {
                    recheck = true;
                }
                _ = poll.tick(), if self.mode == Mode::Serve && deadline.is_none() => {
                    // A store that cannot say cheaply whether it changed is looked at anew.
                    let now_sig = self.store.signals.fingerprint();
                    if now_sig.is_none() || now_sig != sig {
                        sig = now_sig;
                        recheck = true;
                    }
                }
                _ = renew.tick() => {
                    let keys = self.held_keys();
                    if !keys.is_empty() || self.svc.has_runs() {
                        match self.svc.renew(&keys).await {
                            Ok(r) => for w in r.warnings { warn!("{w}") },
                            Err(e) => error!(error = %e, "renewing claims failed"),
                        }
                    }
                }
                _ = open_check.tick(), if self.mode == Mode::Serve && deadline.is_none() && self.open_waits => {
                    // Conversations closed without a SessionEnd (a killed process) are
                    // noticed here: Claude Code's session files are read, the store is
                    // written only for what wakes.
                    if let Ok(snap) = self.store.snapshot().await {
                        match self.svc.wake_closed(&snap.pending).await {
                            Ok(0) => {}
                            Ok(n) => { info!(woken = n, "conversations were closed"); recheck = true; }
                            Err(e) => error!(error = %e, "checking open conversations failed"),
                        }
                    }
                }
                _ = async { sleep_until(idle_at.unwrap_or_else(Instant::now)).await }, if idle_at.is_some() => {
                    if self.idle_exit().await {
                        break;
                    }
                    recheck = true;
                }
                _ = term.recv(), if deadline.is_none() => deadline = Some(self.begin_shutdown("SIGTERM", grace).await),
                _ = int.recv(), if deadline.is_none() => deadline = Some(self.begin_shutdown("SIGINT", grace).await),
                _ = async { sleep_until(deadline.unwrap_or_else(Instant::now)).await }, if deadline.is_some() => {
                    self.stop_running().await;
                    break;
                }
            }
        }
        // Alerts still being sent get a little longer (each POST has its own timeout).
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while self.alerts.join_next().await.is_some() {}
        })
        .await;
        Ok(())
    }

    pub async fn begin_shutdown(&mut self, signal: &str, grace: Duration) -> Instant {
        let unstarted: Vec<EntryKey> = self.waiting.drain(..).map(|e| e.key()).collect();
        info!(
            signal,
            running = self.running.len(),
            released = unstarted.len(),
            grace_s = grace.as_secs(),
            "shutting down"
        );
        if let Err(e) = self.svc.release(&unstarted).await {
            error!(error = %e, "releasing claims failed; they come back when they expire");
        }
        Instant::now() + grace
    }

    /// The grace period is over: stop what still runs and record it. A task that had not
    /// started its run yet (no lease) has its entry released instead.
    pub async fn stop_running(&mut self) {
        let leases = self.svc.running_leases();
        let unstarted: Vec<EntryKey> = self
            .running
            .values()
            .filter(|r| !leases.iter().any(|(s, _)| *s == r.entry.session_id))
            .map(|r| r.entry.key())
            .collect();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.running.clear();
        for (session, lease) in leases {
            warn!(
                hook = lease.hook_id.as_str(),
                session = session.as_str(),
                "stopped: interrupted by shutdown"
            );
            if let Err(e) = self.svc.record_interrupted(&session, &lease).await {
                error!(error = %e, "recording the interruption failed");
            }
        }
        if let Err(e) = self.svc.release(&unstarted).await {
            error!(error = %e, "releasing claims failed");
        }
    }
}
