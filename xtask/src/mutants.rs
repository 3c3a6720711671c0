//! `cargo xtask mutants`: proves the contracts catch the mistakes stores and runners make.
//!
//! Each mutant plants one typical mistake in the in-memory store (through the queue helpers
//! it shares with the JSON store), in the JSON store or in the example's runner, runs that
//! adapter's contract tests, and expects them to fail; the file is then put back byte for
//! byte, its modification time too, so no other build notices. A mutant the contract misses, or one
//! that no longer applies (the code it mutates changed), fails the step: keep this list with
//! the code. The builds go to `target/mutants`, apart from the everyday ones.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::{cargo, root};

/// Where a mutant is tested: the crate and the test filter that run its contract.
#[derive(Clone, Copy)]
enum Suite {
    InMemory,
    Json,
    ExampleRunner,
}

impl Suite {
    fn command(self) -> Command {
        let mut c = cargo();
        c.env("CARGO_TARGET_DIR", root().join("target/mutants"));
        match self {
            Suite::InMemory => c.args([
                "test",
                "-q",
                "-p",
                "hooks-app-core",
                "--lib",
                "contract_on_the_in_memory_store",
            ]),
            Suite::Json => c.args([
                "test",
                "-q",
                "-p",
                "hooks-app-store-json",
                "--test",
                "it",
                "contract_on_the_json_store",
            ]),
            Suite::ExampleRunner => c.args([
                "test",
                "-q",
                "-p",
                "hooks-example-script-agent",
                "--test",
                "runner_contract",
                "runner_ends_a_run_at_its_timeout",
            ]),
        };
        c
    }
}

/// One planted mistake: in `file`, `from` (found exactly once) becomes `to`.
struct Mutant {
    what: &'static str,
    suite: Suite,
    file: &'static str,
    from: &'static str,
    to: &'static str,
}

const QUEUE: &str = "crates/hooks-core/src/queue.rs";
const MODEL_QUEUE: &str = "crates/hooks-core/src/model/queue.rs";
const MODEL_HOOK: &str = "crates/hooks-core/src/model/hook.rs";
const MEMORY: &str = "crates/hooks-core/src/testing.rs";
const JSON: &str = "crates/hooks-store-json/src/lib.rs";
const JSON_DTO: &str = "crates/hooks-store-json/src/dto.rs";
const PORTS: &str = "crates/hooks-core/src/ports.rs";
const EXAMPLE: &str = "examples/script-agent/src/lib.rs";

const MUTANTS: &[Mutant] = &[
    Mutant {
        what: "release without an owner check",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "if let Ok((_, p)) = find_owned(pending, k, owner) {\n            p.claim = None;\n            n += 1;",
        to: "if let Some(p) = pending.iter_mut().find(|p| p.key() == *k) {\n            p.claim = None;\n            n += 1;",
    },
    Mutant {
        what: "requeue without an owner check",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "let (_, p) = find_owned(pending, key, owner)?;\n    p.claim = None;",
        to: "let _ = owner;\n    let p = pending.iter_mut().find(|p| p.key() == *key).ok_or_else(|| StoreError::EntryNotFound(key.clone()))?;\n    p.claim = None;",
    },
    Mutant {
        what: "claims not taking the earliest due first",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "order.sort_by_key(|&i| pending[i].due_at.time());",
        to: "order.reverse();",
    },
    Mutant {
        what: "a second claim on a session",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "if !held.insert(p.session_id.clone()) {\n            continue;\n        }",
        to: "held.insert(p.session_id.clone());",
    },
    Mutant {
        what: "a (hook, session) pair queued twice",
        suite: Suite::InMemory,
        file: QUEUE,
        from: ".any(|p| p.hook_id == e.hook_id && p.session_id == e.session_id)",
        to: ".any(|_| false)",
    },
    Mutant {
        what: "a rate-limit wait woken by another run's end",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "w.waits_for_close() || (!open_only && w.kind != WaitKind::Limit)",
        to: "w.waits_for_close() || !open_only",
    },
    Mutant {
        what: "a wake that puts an entry off",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "if p.due_at.time().is_none_or(|t| t > due_at) {",
        to: "if p.due_at.time().is_some() || true {",
    },
    Mutant {
        what: "dropping an entry someone is firing",
        suite: Suite::InMemory,
        file: QUEUE,
        from: ".partition(|p| !p.is_claimed(now) && keys.contains(&p.key()));",
        to: ".partition(|p| now == now && keys.contains(&p.key()));",
    },
    Mutant {
        what: "history recorded without its start time",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "hook.history.push(at, session.as_str());",
        to: "hook.history.push(at.replace_second(0).unwrap_or(at), session.as_str());",
    },
    Mutant {
        what: "set_pause doing nothing",
        suite: Suite::InMemory,
        file: MEMORY,
        from: "lock(&self.0).pause = pause;",
        to: "let _ = pause;",
    },
    Mutant {
        what: "import_hook doing nothing",
        suite: Suite::InMemory,
        file: MEMORY,
        from: "lock(&self.0).hooks.insert(hook.id.clone(), hook.clone());",
        to: "let _ = hook;",
    },
    Mutant {
        what: "renew by another owner extends the claim",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "if let Ok((_, p)) = find_owned(pending, k, owner)\n            && let Some(c) = p.claim.as_mut()",
        to: "if let Some(p) = pending.iter_mut().find(|p| p.key() == *k)\n            && let Some(c) = p.claim.as_mut()",
    },
    Mutant {
        what: "complete without an owner check",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "let (i, _) = find_owned(pending, key, owner)?;\n    Ok(pending.remove(i))",
        to: "let _ = owner;\n    let i = pending.iter().position(|p| p.key() == *key).ok_or_else(|| StoreError::EntryNotFound(key.clone()))?;\n    Ok(pending.remove(i))",
    },
    Mutant {
        what: "a claim that never lapses",
        suite: Suite::InMemory,
        file: MODEL_QUEUE,
        from: "self.claim.as_ref().is_some_and(|c| c.expires_at > now)",
        to: "self.claim.as_ref().is_some_and(|c| c.expires_at > now || true)",
    },
    Mutant {
        what: "an open-only wake that wakes other waits too",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "w.waits_for_close() || (!open_only && w.kind != WaitKind::Limit)",
        to: "w.waits_for_close() || w.kind != WaitKind::Limit",
    },
    Mutant {
        what: "drop_unclaimed taking keys it was not given",
        suite: Suite::InMemory,
        file: QUEUE,
        from: ".partition(|p| !p.is_claimed(now) && keys.contains(&p.key()));",
        to: ".partition(|p| !p.is_claimed(now) && !keys.is_empty());",
    },
    Mutant {
        what: "enqueue_event queueing for a disabled hook",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "let d = decide::decide_enqueue(EnqueueInput {\n            hook,",
        to: "let on = HookRules { enabled: true, ..hook.clone() };\n        let d = decide::decide_enqueue(EnqueueInput {\n            hook: &on,",
    },
    Mutant {
        what: "set_budget doing nothing",
        suite: Suite::InMemory,
        file: MEMORY,
        from: "lock(&self.0).budget = budget;",
        to: "let _ = budget;",
    },
    Mutant {
        what: "a stamp that is not test-and-set",
        suite: Suite::InMemory,
        file: MEMORY,
        from: "if let Some(prev) = st.stamps.get(hook) {\n            return Ok(StampResult::Lost { at: *prev });\n        }",
        to: "let _ = st.stamps.get(hook);",
    },
    Mutant {
        what: "a run lease taken over a live one",
        suite: Suite::InMemory,
        file: MEMORY,
        from: "if let Some(l) = held {\n            return Ok(Begin::Held(l.clone()));\n        }",
        to: "let _ = &held;",
    },
    Mutant {
        what: "a hook for one agent queued for every agent's conversations",
        suite: Suite::InMemory,
        file: QUEUE,
        from: ".filter(|h| h.event == r.event && h.agent.covers(r.agent.as_deref()))",
        to: ".filter(|h| h.event == r.event)",
    },
    Mutant {
        what: "a hook's agent not read by the quick enqueue path (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.agent = AgentScope::parse(d.agent.as_deref().unwrap_or(\"\"))?;",
        to: "o.agent = AgentScope::parse(\"\")?;",
    },
    Mutant {
        what: "a hook's failure kinds not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.errors = failure_kinds(self.errors.as_ref())?;",
        to: "o.errors = failure_kinds(None)?;",
    },
    Mutant {
        what: "release by another owner clears the claim (JSON)",
        suite: Suite::Json,
        file: QUEUE,
        from: "if let Ok((_, p)) = find_owned(pending, k, owner) {\n            p.claim = None;\n            n += 1;",
        to: "if let Some(p) = pending.iter_mut().find(|p| p.key() == *k) {\n            p.claim = None;\n            n += 1;",
    },
    Mutant {
        what: "a release that changes nothing still writes (JSON)",
        suite: Suite::Json,
        file: JSON,
        from: "Ok(((), n > 0))",
        to: "Ok(((), n == n))",
    },
    Mutant {
        what: "a wake that finds nothing still writes (JSON)",
        suite: Suite::Json,
        file: JSON,
        from: "if !self.read_state()?.pending.iter().any(waits) {\n            return Ok(0);\n        }\n        self.change(|s| {\n            let n = queue::wake(&mut s.pending, session, due_at, open_only);\n            Ok((n, n > 0))",
        to: "let _ = waits;\n        self.change(|s| {\n            let n = queue::wake(&mut s.pending, session, due_at, open_only);\n            Ok((n, true))",
    },
    Mutant {
        what: "set_pause doing nothing (JSON)",
        suite: Suite::Json,
        file: JSON,
        from: "self.set_extra(dto::PAUSE_KEY, \"the pause\", dto.as_ref())",
        to: "{ let _ = dto; Ok(()) }",
    },
    Mutant {
        what: "import_hook doing nothing (JSON)",
        suite: Suite::Json,
        file: JSON,
        from: "s.put_hook(hook)?;\n            Ok(((), true))",
        to: "let _ = hook;\n            Ok(((), false))",
    },
    Mutant {
        what: "a hook's delivery choice not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.deliver = Delivery::parse(self.deliver.as_deref().unwrap_or(\"\"))?;",
        to: "o.deliver = Delivery::Auto;",
    },
    Mutant {
        what: "a hook's lateness limit not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "Some(v) => MaxLateness::from_seconds(whole(\"maxLatenessSeconds\", v)?)?,",
        to: "Some(_) => MaxLateness::NONE,",
    },
    Mutant {
        what: "a limit's attempts not kept by requeue",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "p.attempts = to.attempts;",
        to: "p.attempts = p.attempts.max(0);",
    },
    Mutant {
        what: "untaken deliveries not kept by requeue",
        suite: Suite::InMemory,
        file: QUEUE,
        from: "p.not_taken = to.not_taken;",
        to: "p.not_taken = p.not_taken.min(0);",
    },
    Mutant {
        what: "a summary that never sees the queue",
        suite: Suite::InMemory,
        file: PORTS,
        from: "Ok(QueueSummary::of(&self.snapshot().await?.pending, now))",
        to: "Ok(QueueSummary::of(&self.snapshot().await?.pending[..0], now))",
    },
    Mutant {
        what: "a wait's kind not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "                kind: w.kind(),",
        to: "                kind: WaitKind::NotReady,",
    },
    Mutant {
        what: "an entry's failure kind not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "error: self.error.as_deref().map(FailureKind::from_claude),",
        to: "error: None,",
    },
    Mutant {
        what: "an entry's time queued not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "queued_at: self.queued_at.as_deref().and_then(stamp::parse),\n            retries,",
        to: "queued_at: None,\n            retries,",
    },
    Mutant {
        what: "a hook's skip_cron not read back (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.skip_cron = self.skip_cron.unwrap_or(false);",
        to: "o.skip_cron = true;",
    },
    Mutant {
        what: "a hook's context cap not kept (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "self.max_context_k = Some(Value::from(hook.max_context.k()));",
        to: "self.max_context_k = Some(Value::from(0));",
    },
    Mutant {
        what: "a run's exit code lost (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.exit_code = self.exit_code;",
        to: "o.exit_code = None;",
    },
    Mutant {
        what: "a run's output tokens lost (JSON)",
        suite: Suite::Json,
        file: JSON_DTO,
        from: "o.output_tokens = u.output_tokens;",
        to: "o.output_tokens = None;",
    },
    Mutant {
        what: "a patch's skipSubagents not applied",
        suite: Suite::InMemory,
        file: MODEL_HOOK,
        from: "hook.skip_subagents = v;",
        to: "let _ = v;",
    },
    Mutant {
        what: "a change made without the store's lock (JSON)",
        suite: Suite::Json,
        file: JSON,
        from: "let _lock = self.lock()?;\n        let mut state = self.read_state()?;\n        let (out, changed) = f(&mut state)?;",
        to: "let mut state = self.read_state()?;\n        let (out, changed) = f(&mut state)?;",
    },
    Mutant {
        what: "a timeout that ends only the agent's leader (example runner)",
        suite: Suite::ExampleRunner,
        file: EXAMPLE,
        from: "libc::killpg(pid, libc::SIGKILL);",
        to: "libc::kill(pid, libc::SIGKILL);",
    },
];

/// Puts a file back, content and modification time, when dropped.
struct Restore<'a> {
    path: &'a Path,
    text: String,
    modified: std::time::SystemTime,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let back = std::fs::write(self.path, &self.text).and_then(|()| {
            std::fs::File::options()
                .write(true)
                .open(self.path)?
                .set_modified(self.modified)
        });
        if let Err(e) = back {
            eprintln!(
                "xtask: could not put {} back: {e}; `git checkout` it",
                self.path.display()
            );
        }
    }
}

/// Plants each mutant in turn; `only` narrows them to those whose description contains it.
pub fn run(only: Option<&str>) -> Result<(), String> {
    let mut missed = Vec::new();
    let chosen: Vec<&Mutant> = MUTANTS
        .iter()
        .filter(|m| only.is_none_or(|o| m.what.contains(o)))
        .collect();
    for (i, m) in chosen.iter().enumerate() {
        let path = root().join(m.file);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", m.file))?;
        if text.matches(m.from).count() != 1 {
            return Err(format!(
                "mutant {:?}: its code is not found exactly once in {}; update the list",
                m.what, m.file
            ));
        }
        let modified = std::fs::metadata(&path)
            .and_then(|md| md.modified())
            .map_err(|e| format!("{}: {e}", m.file))?;
        let _restore = Restore {
            path: &path,
            text: text.clone(),
            modified,
        };
        std::fs::write(&path, text.replacen(m.from, m.to, 1))
            .map_err(|e| format!("{}: {e}", m.file))?;
        let out = m
            .suite
            .command()
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cargo: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let verdict = if out.status.success() {
            missed.push(m.what);
            "MISSED"
        } else if stderr.contains("could not compile") {
            return Err(format!(
                "mutant {:?} does not compile; fix the list:\n{stderr}",
                m.what
            ));
        } else {
            "caught"
        };
        eprintln!(
            "xtask: mutant {}/{}: {verdict}: {}",
            i + 1,
            chosen.len(),
            m.what
        );
    }
    if missed.is_empty() {
        eprintln!(
            "xtask: the contract caught all {} planted mistakes",
            chosen.len()
        );
        Ok(())
    } else {
        Err(format!("the contract missed: {}", missed.join("; ")))
    }
}
