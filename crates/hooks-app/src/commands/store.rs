//! `store migrate` and `store copy`: moving between stores through the ports alone.

use std::collections::{HashMap, HashSet};

use hooks_core::ports::MetaError;
use hooks_core::*;

use crate::cli::StoreCmd;
use crate::compose::block_on;
use crate::compose::{Store, StoreChoice};
use crate::{AppError, AppResult, Context};

pub fn run(ctx: &Context, cmd: StoreCmd) -> AppResult {
    match cmd {
        StoreCmd::Migrate => migrate(ctx),
        StoreCmd::Copy { from, to, merge } => copy(ctx, &from, &to, merge),
    }
}

fn migrate(ctx: &Context) -> AppResult {
    match &ctx.store {
        StoreChoice::Json { dir, .. } => {
            // The JSON file migrates itself: older fields are rewritten on the next write.
            let store = ctx.open_store()?;
            block_on(store.snapshot())??;
            crate::say!(
                "json:{}: the file's format is brought up to date as it is written; nothing to do",
                dir.display()
            );
        }
        StoreChoice::Custom { .. } => {
            let at = ctx.store.describe();
            match ctx.migrate_custom()? {
                Some(did) => crate::say!("{at}: {did}"),
                None => crate::say!("{at}: nothing to do (its adapter has no migrations to apply)"),
            }
            // Then it opens as any command would find it.
            let store = ctx.open_store()?;
            block_on(store.snapshot())??;
        }
        StoreChoice::Postgres { .. } => {
            let (applied, have) = ctx.migrate_store()?;
            let at = ctx.store.describe();
            if applied.is_empty() {
                crate::say!("{at}: the schema is up to date (version {have})");
            } else {
                let list: Vec<String> = applied.iter().map(i32::to_string).collect();
                crate::say!(
                    "{at}: applied migration{} {}; the schema is at version {have}",
                    if applied.len() == 1 { "" } else { "s" },
                    list.join(", ")
                );
            }
        }
    }
    Ok(())
}

fn meta(e: MetaError) -> AppError {
    AppError::runtime(e.to_string())
}

/// A hook a new store is seeded with, untouched: a target holding only those is empty.
fn is_seed(h: &Hook) -> bool {
    seed_hooks(h.created_at.unwrap_or(time::OffsetDateTime::UNIX_EPOCH)).contains(h)
}

/// Everything a store holds, read through its ports.
struct Contents {
    hooks: Vec<Hook>,
    pending: Vec<PendingEntry>,
    sessions: Vec<hooks_core::ports::SessionRecord>,
    runs: Vec<RunRecord>,
    budget: Option<cost::Budget>,
}

async fn read(store: &Store) -> AppResult<Contents> {
    let snap = store.snapshot().await?;
    Ok(Contents {
        hooks: snap.hooks,
        pending: snap.pending,
        sessions: store.sessions.sessions().await.map_err(meta)?,
        runs: store.runs(&RunFilter::default()).await?,
        budget: store.budget().await?,
    })
}

fn run_key(r: &RunRecord) -> String {
    match &r.run_id {
        Some(id) => id.clone(),
        None => format!(
            "{}/{}/{}",
            r.hook_id,
            r.session_id,
            hooks_core::stamp::format_micros(r.started_at)
        ),
    }
}

/// What the target holds that a copy of `src` would not put there.
fn foreign(src: &Contents, dst: &Contents) -> Vec<String> {
    let mut out = Vec::new();
    let hooks: HashMap<&HookId, &Hook> = src.hooks.iter().map(|h| (&h.id, h)).collect();
    let other: Vec<&str> = dst
        .hooks
        .iter()
        .filter(|h| hooks.get(&h.id).is_none_or(|s| *s != *h) && !is_seed(h))
        .map(|h| h.id.as_str())
        .collect();
    if !other.is_empty() {
        out.push(format!("hooks {}", other.join(", ")));
    }
    let keys: HashSet<EntryKey> = src.pending.iter().map(PendingEntry::key).collect();
    let n = dst
        .pending
        .iter()
        .filter(|p| !keys.contains(&p.key()))
        .count();
    if n > 0 {
        out.push(format!(
            "{n} queued entr{}",
            if n == 1 { "y" } else { "ies" }
        ));
    }
    let sessions: HashSet<&SessionId> = src.sessions.iter().map(|s| &s.session).collect();
    let n = dst
        .sessions
        .iter()
        .filter(|s| !sessions.contains(&s.session))
        .count();
    if n > 0 {
        out.push(format!("{n} session{}", if n == 1 { "" } else { "s" }));
    }
    let runs: HashSet<String> = src.runs.iter().map(run_key).collect();
    let n = dst
        .runs
        .iter()
        .filter(|r| !runs.contains(&run_key(r)))
        .count();
    if n > 0 {
        out.push(format!("{n} run{}", if n == 1 { "" } else { "s" }));
    }
    if dst.budget.is_some() && dst.budget != src.budget {
        out.push("another daily budget".into());
    }
    out
}

fn copy(ctx: &Context, from: &str, to: &str, merge: bool) -> AppResult {
    let (from, to) = (StoreChoice::parse(from)?, StoreChoice::parse(to)?);
    if from == to {
        return Err(AppError::invalid(
            "to: must be another store than --from (they are the same)",
        ));
    }
    let src = ctx.open(&from, false)?;
    let dst = ctx.open(&to, true)?;
    let report = block_on(async {
        let s = read(&src).await?;
        let d = read(&dst).await?;
        let foreign = foreign(&s, &d);
        if !merge && !foreign.is_empty() {
            return Err(AppError::invalid(format!(
                "to: must be a new store or a copy of the source, unless --merge; {} holds {}",
                to.describe(),
                foreign.join(", ")
            )));
        }
        // A new store's untouched seeds go first, so the hooks keep the source's order (a
        // target that is a copy already keeps its order as it is).
        let mut d = d;
        if !merge && d.hooks.iter().all(is_seed) {
            for h in d.hooks.iter().filter(|h| is_seed(h)) {
                if !d.pending.iter().any(|p| p.hook_id == h.id) {
                    dst.delete_hook(&h.id).await?;
                }
            }
            d.hooks
                .retain(|h| !is_seed(h) || d.pending.iter().any(|p| p.hook_id == h.id));
        }
        // Hooks: all of them, whole; with --merge only those the target lacks.
        let have: HashSet<&HookId> = d.hooks.iter().map(|h| &h.id).collect();
        let mut hooks = 0;
        for h in &s.hooks {
            if !merge || !have.contains(&h.id) {
                dst.import_hook(h).await?;
                hooks += 1;
            }
        }
        if !merge {
            // Only an untouched seed can be left: a copy has the source's hooks alone.
            for h in d
                .hooks
                .iter()
                .filter(|h| !s.hooks.iter().any(|x| x.id == h.id))
            {
                dst.delete_hook(&h.id).await?;
            }
        }
        // The queue, without claims: they belong to the source's processes.
        let entries: Vec<PendingEntry> = s
            .pending
            .iter()
            .map(|p| {
                let mut o = p.clone();
                o.claim = None;
                o
            })
            .collect();
        let queued = dst
            .enqueue(entries)
            .await?
            .iter()
            .filter(|r| **r == hooks_core::ports::EnqueueResult::Queued)
            .count();
        // Session state and stamps; a stamp already in the target is kept (never twice).
        let (mut sessions, mut stamps, mut leases) = (0, 0, 0);
        for r in &s.sessions {
            let update = SessionUpdate {
                cwd: r.state.cwd.clone(),
                transcript_path: r.state.transcript_path.clone(),
                origin: r.state.origin,
            };
            dst.sessions
                .remember(&r.session, &update)
                .await
                .map_err(meta)?;
            for (hook, at) in &r.state.stamps {
                if dst
                    .sessions
                    .stamp(&r.session, hook, *at)
                    .await
                    .map_err(meta)?
                    == hooks_core::ports::StampResult::Won
                {
                    stamps += 1;
                }
            }
            leases += usize::from(r.lease.is_some());
            sessions += 1;
        }
        let known: HashSet<String> = d.runs.iter().map(run_key).collect();
        let mut runs = 0;
        for r in s.runs.iter().filter(|r| !known.contains(&run_key(r))) {
            dst.append_run(r).await?;
            runs += 1;
        }
        let budget = match (&s.budget, &d.budget) {
            (Some(b), None) => {
                dst.set_budget(Some(b.clone())).await?;
                true
            }
            (Some(b), Some(_)) if !merge => {
                dst.set_budget(Some(b.clone())).await?;
                true
            }
            _ => false,
        };
        Ok::<_, AppError>(format!(
            "copied {hooks} hook{}, {queued} queued entr{}, {sessions} session{} ({stamps} new stamp{}), {runs} run{}{} from {} to {}{}",
            if hooks == 1 { "" } else { "s" },
            if queued == 1 { "y" } else { "ies" },
            if sessions == 1 { "" } else { "s" },
            if stamps == 1 { "" } else { "s" },
            if runs == 1 { "" } else { "s" },
            if budget { " and the daily budget" } else { "" },
            from.describe(),
            to.describe(),
            if leases > 0 {
                format!(
                    "; {leases} run lease(s) of running follow-ups were not copied: copy with no daemon running"
                )
            } else {
                String::new()
            }
        ))
    })??;
    crate::say!("{report}");
    Ok(())
}
