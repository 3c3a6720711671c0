//! `serve` and `tick`: claim due entries, fire them with bounded concurrency, log each
//! decision.
//!
//! `serve` sleeps until the next due time, and notices another process's changes to the
//! store through a watch on the data folder (inotify, FSEvents), with a `stat` of the store file every
//! 5 s as a safety net (every 250 ms where the folder cannot be watched; its inode, size and
//! modification time change with every rename). It claims only as many entries as it has free slots, in
//! one store write per pass, and renews its claims while runs go on. On SIGTERM or SIGINT it
//! stops claiming, gives back what it has not started, waits up to the grace period for
//! running follow-ups, then stops them and records `error: interrupted by shutdown`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hooks_core::decide::Policy;
use hooks_core::service::{Config, Service};
use tracing::{info, warn};

use self::ondemand::mark_running;
use crate::compose::Store;
use crate::options::LogFormat;
use crate::{AppError, AppResult, Context, compose};

mod options;
pub use options::{RunOptions, ServeOptions};

pub mod environment;
pub mod ondemand;
mod report;
mod scheduler;
mod web;

use scheduler::*;

fn init_logging(format: LogFormat) {
    let b = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => b.try_init(),
        LogFormat::Json => b.json().flatten_event(true).try_init(),
    };
}

fn build(ctx: &Context, a: &RunOptions) -> AppResult<(Arc<Service>, Store)> {
    let config = Config {
        policy: Policy {
            quiet_period: time::Duration::seconds(a.quiet_period as i64),
            open_wait: time::Duration::seconds(a.open_wait as i64),
            deliver_open: a.deliver == crate::options::Deliver::Auto,
            own_continue_wait: time::Duration::seconds(a.own_continue_wait as i64),
            ..Policy::default()
        },
        claim_ttl: time::Duration::seconds(a.claim_ttl as i64),
        owner: compose::owner_id(),
        host: compose::host_name(),
        process: hooks_meta::live::this_process(),
        prices: crate::prices::load(&ctx.data_dir)?,
    };
    let (svc, store) = ctx.service(ctx.runner(Duration::from_secs(a.run_timeout))?, config)?;
    match store.signals.housekeep() {
        Ok(0) => {}
        Ok(n) => info!(removed = n, "removed temp files left by writers that died"),
        Err(e) => warn!(error = %e, "could not look for stray temp files"),
    }
    Ok((Arc::new(svc), store))
}

fn runtime() -> AppResult<tokio::runtime::Runtime> {
    // One thread: the runs are child processes, and the store's work is short. It also
    // keeps the parent-death signal of children tied to a thread that lives as long as
    // the daemon.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::runtime(format!("could not start the runtime: {e}")))
}

pub fn serve(ctx: &Context, a: &ServeOptions) -> AppResult<ExitCode> {
    init_logging(a.run.log_format);
    for said in crate::fsutil::tighten_data_dir(&ctx.data_dir) {
        warn!("{said}");
    }
    let (svc, store) = build(ctx, &a.run)?;
    let singleton = if a.on_demand {
        match self::ondemand::take_singleton(&ctx.data_dir) {
            Some(l) => Some(l),
            None => {
                info!("another on-demand daemon serves this data folder; exiting");
                return Ok(ExitCode::SUCCESS);
            }
        }
    } else {
        None
    };
    // Held for the daemon's whole life (an idle exit lets go of it just before its last
    // look): `status`, `doctor` and an on-demand start see that a daemon runs.
    let mut mark = mark_running(&ctx.data_dir);
    let grace = Duration::from_secs(a.run.shutdown_grace);
    let rt = runtime()?;
    let metrics = Arc::new(hooks_http::Metrics::default());
    // Bound before `serving` is said: a port that is taken ends the start with an error.
    let mut http_url = None;
    if let Some(addr) = a.http {
        let opts = hooks_http::HttpOptions {
            addr,
            no_auth: a.http_no_auth,
            allow_insecure: a.http_allow_insecure,
        };
        hooks_http::check_options(&opts).map_err(AppError::invalid)?;
        let token = if opts.no_auth {
            warn!(%addr, "--http-no-auth: anyone on this machine can use the API and the page");
            None
        } else {
            Some(hooks_http::token(&ctx.data_dir).map_err(AppError::runtime)?)
        };
        let listener = rt.block_on(web::bind(&opts, &ctx.data_dir))?;
        let at = listener
            .local_addr()
            .map_err(|e| AppError::runtime(format!("http: {e}")))?;
        let backend = web::Web {
            ctx: ctx.clone(),
            svc: svc.clone(),
            store: store.clone(),
            catch_up: tokio::sync::Semaphore::new(web::CATCH_UP_AT_ONCE),
        };
        let hook_token = match &token {
            Some(_) => Some(hooks_http::hook_token(&ctx.data_dir).map_err(AppError::runtime)?),
            None => None,
        };
        let config = hooks_http::HttpConfig {
            addr: at,
            token,
            hook_token,
            data_dir: ctx.data_dir.clone(),
            metrics: metrics.clone(),
        };
        let state = Arc::new(hooks_http::HttpState::new(
            svc.clone(),
            store.data.clone(),
            Arc::new(backend),
            config,
        ));
        let _in_rt = rt.enter();
        hooks_http::spawn(listener, state);
        http_url = Some((format!("http://{at}"), !opts.no_auth));
    }
    let _registered = self::ondemand::register(
        &ctx.data_dir,
        a.on_demand,
        http_url.as_ref().map(|(u, _)| u.as_str()),
        svc.config().policy.deliver_open,
    );
    info!(data_dir = %ctx.data_dir.display(), concurrency = a.run.concurrency, owner = %svc.config().owner, on_demand = a.on_demand, "serving");
    if let Some((url, auth)) = &http_url {
        info!(url = %url, auth = *auth, "serving HTTP");
    }
    let mut lp = Loop::new(svc, store, &a.run, Mode::Serve);
    lp.metrics = Some(metrics);
    lp.alerts_dir = Some(ctx.data_dir.clone());
    let idle = a
        .idle_exit
        .or(a.on_demand.then_some(self::ondemand::DEFAULT_IDLE_EXIT));
    if let Some(secs) = idle {
        lp.idle = Some(Idle {
            after: Duration::from_secs(secs),
            dir: ctx.data_dir.clone(),
            mark: mark.take(),
            singleton,
        });
    }
    rt.block_on(lp.run(grace))?;
    drop(mark);
    info!("stopped");
    Ok(ExitCode::SUCCESS)
}

pub fn tick(ctx: &Context, a: &RunOptions) -> AppResult<ExitCode> {
    init_logging(a.log_format);
    let (svc, store) = build(ctx, a)?;
    runtime()?.block_on({
        let mut lp = Loop::new(svc, store, a, Mode::Tick);
        lp.alerts_dir = Some(ctx.data_dir.clone());
        lp.run(Duration::from_secs(a.shutdown_grace))
    })?;
    Ok(ExitCode::SUCCESS)
}
