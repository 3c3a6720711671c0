//! The command line's values as the options of what the commands call: the clap types stay
//! in `cli`, which nothing below the commands names.

use crate::cli::{Global, InstallArgs, RunArgs, ServeArgs, UninstallArgs};
use crate::compose::Flags;
use crate::daemon::{RunOptions, ServeOptions};
use crate::install::{InstallOptions, UninstallOptions};

pub fn flags(g: &Global) -> Flags {
    Flags {
        data_dir: g.data_dir.clone(),
        workspace: g.workspace.clone(),
        claude_home: g.claude_home.clone(),
        claude_bin: g.claude_bin.clone(),
        codex_bin: g.codex_bin.clone(),
        done_marker: g.done_marker.clone(),
        runner: g.runner.clone(),
        runner_url: g.runner_url.clone(),
        runner_token_file: g.runner_token_file.clone(),
        store: g.store.clone(),
        host_id: g.host_id.clone(),
        any_host: g.any_host,
        store_poll: g.store_poll,
        from_hook: g.from_hook,
        program: crate::output::program().to_owned(),
    }
}

pub fn run(a: &RunArgs) -> RunOptions {
    RunOptions {
        concurrency: a.concurrency,
        run_timeout: a.run_timeout,
        claim_ttl: a.claim_ttl,
        quiet_period: a.quiet_period,
        open_wait: a.open_wait,
        deliver: a.deliver,
        own_continue_wait: a.own_continue_wait,
        log_format: a.log_format,
        shutdown_grace: a.shutdown_grace,
    }
}

pub fn serve(a: &ServeArgs) -> ServeOptions {
    ServeOptions {
        run: run(&a.run),
        on_demand: a.on_demand,
        idle_exit: a.idle_exit,
        http: a.http,
        http_no_auth: a.http_no_auth,
        http_allow_insecure: a.http_allow_insecure,
    }
}

pub fn install(a: &InstallArgs) -> InstallOptions {
    InstallOptions {
        agent: a.agent,
        scope: a.scope,
        trigger: a.trigger,
        daemon: a.daemon,
        idle_exit: a.idle_exit,
        dry_run: a.dry_run,
        http: match (a.http, a.no_http) {
            (_, true) => Some(None),
            (Some(h), false) => Some(Some(h)),
            (None, false) => None,
        },
        transport: a.transport,
        http_url: a.http_url.clone(),
        plugin: a.plugin,
        mcp: a.mcp,
    }
}

pub fn uninstall(a: &UninstallArgs) -> UninstallOptions {
    UninstallOptions {
        agent: a.agent,
        scope: a.scope,
        daemon: a.daemon,
        dry_run: a.dry_run,
        drop_queue: a.drop_queue,
        mcp: a.mcp,
    }
}
