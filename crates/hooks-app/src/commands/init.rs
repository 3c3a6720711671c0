//! `init`: the data folder, the store and its seeds, and the seeded hooks' prompts.

use hooks_core::*;

use crate::compose::block_on;
use crate::{AppError, AppResult, Context};
use hooks_prompts as prompts;

pub fn init(ctx: &Context) -> AppResult {
    // Before the store opens: a JSON store in the data folder makes its own folder private
    // too, without a word.
    for said in crate::fsutil::tighten_data_dir(&ctx.data_dir) {
        crate::say!("{said}");
    }
    let existed = ctx.existing_store().is_ok();
    let store = ctx.open_store()?;
    block_on(store.snapshot())??;
    hooks_http::token(&ctx.data_dir).map_err(AppError::runtime)?;
    let removed = store.signals.housekeep()?;
    if removed > 0 {
        crate::say!("removed {removed} temp file(s) left by writers that died");
    }
    crate::say!(
        "{} {}",
        if existed {
            "store already there:"
        } else {
            "created the store, seeded with post-task and continue-after-limit (off):"
        },
        store.signals.location()
    );
    // A store from before the failure event gets the second seed, off.
    let (svc, _) = crate::compose::service(ctx)?;
    let id = continue_after_limit_id();
    if existed && !block_on(svc.list_hooks())??.iter().any(|h| h.id == id) {
        let h = block_on(svc.create_hook(HookSpec::continue_after_limit()))??;
        crate::say!(
            "added the {} hook (off: `hooks-app hooks enable {}`)",
            h.id,
            h.id
        );
    }
    let written = prompts::write_default_prompts(&ctx.workspace).map_err(|e| {
        AppError::runtime(format!(
            "could not write the default prompts in {}: {e}",
            ctx.workspace.display()
        ))
    })?;
    for (path, wrote) in &written {
        if *wrote {
            crate::say!("wrote the default prompt: {}", path.display());
        } else {
            crate::say!("prompt already there: {}", path.display());
        }
    }
    // So `uninstall` can say what it leaves in each folder `init` ran in.
    let wrote: Vec<_> = written
        .into_iter()
        .filter(|(_, w)| *w)
        .map(|(p, _)| p)
        .collect();
    crate::install::record_written_prompts(&ctx.data_dir, &wrote)?;
    crate::say!(
        "next: `hooks-app install` to add the Claude Code hook (a daemon then starts when something is queued), and `hooks-app doctor`"
    );
    Ok(())
}
