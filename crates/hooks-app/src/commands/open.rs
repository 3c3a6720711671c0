//! `open`: the web page's address with a one-time login, a daemon serving it if need be.

use std::time::Duration;

use crate::{AppError, AppResult, Context};

/// Starts the on-demand daemon where `install --http` asked it to serve HTTP, and waits
/// for it to listen; else says how to get a daemon that serves HTTP.
fn start_http_daemon(ctx: &Context) -> AppResult<String> {
    let cfg = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir);
    let how = "`hooks-app install --http 127.0.0.1:PORT` makes the on-demand daemon serve the \
               page, or run `hooks-app serve --http 127.0.0.1:PORT`";
    let Some(addr) = cfg.http else {
        return Err(AppError::runtime(format!(
            "no daemon serves HTTP for this data folder: {how}"
        )));
    };
    if cfg.mode == crate::options::DaemonMode::OnDemand
        && crate::daemon::ondemand::ensure_running(ctx, false)?
    {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(15) {
            if let Some(url) = crate::daemon::ondemand::http_url(&ctx.data_dir) {
                return Ok(url);
            }
            // Polling a file the new daemon writes once it listens; nothing to wait on.
            std::thread::sleep(Duration::from_millis(50));
        }
        return Err(AppError::runtime(format!(
            "started the daemon to serve http://{addr}, but it is not listening after 15 s: see {}",
            ctx.data_dir
                .join(crate::daemon::ondemand::LOG_FILE)
                .display()
        )));
    }
    Err(AppError::runtime(format!(
        "no daemon serves HTTP for this data folder: a daemon runs that was started without \
         it (it serves http://{addr} from its next start; `hooks-app status` shows it), or the \
         daemon mode is not on demand; {how}"
    )))
}

/// `open`: the page's address with a one-time login token.
pub fn open(ctx: &Context, no_browser: bool) -> AppResult {
    let url = match crate::daemon::ondemand::http_url(&ctx.data_dir) {
        Some(url) => url,
        None => start_http_daemon(ctx)?,
    };
    let login = format!(
        "{url}/login?token={}",
        hooks_http::one_time_login(&ctx.data_dir).map_err(AppError::runtime)?
    );
    crate::say!("{login}");
    eprintln!(
        "(the link works once, within {} minutes)",
        hooks_http::LOGIN_TTL_SECS / 60
    );
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !no_browser && (graphical || cfg!(target_os = "macos")) {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        // The browser gets a file only this user can read, which sends it on: a token on
        // the opener's command line would be in /proc/*/cmdline for every local user.
        let page = ctx.data_dir.join("open.html");
        let url_attr = login.replace('&', "&amp;").replace('"', "&quot;");
        crate::fsutil::write_private(
            &page,
            &format!(
                "<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>\
                 <meta http-equiv=refresh content=\"0;url={url_attr}\">\
                 <title>hooks-app</title><p><a href=\"{url_attr}\">Open hooks-app</a></p>\n"
            ),
        )?;
        let _ = std::process::Command::new(opener)
            .arg(format!("file://{}", page.display()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    Ok(())
}
