//! The on-disk schema of `hooks.json` and `runs.jsonl`, and its translation to and from
//! the core's types. Only this module knows the field names.
//!
//! Reading is lenient where the original module was (missing fields, `delayMinutes`,
//! unparseable `dueAt`); unknown fields of a hook and of the file survive a rewrite.

use std::collections::BTreeMap;

use hooks_core::stamp;
use hooks_core::*;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The whole store file. Every hook and pending entry is kept as its stored bytes until an
/// operation needs it, and fields this project does not know are kept as they are: reading
/// a large store is a scan, and writing it back copies what did not change.
///
/// `V` is how a stored piece is held: owned (`Box<RawValue>`, the default), or borrowed from
/// the bytes read (`&RawValue`) where an operation only adds to the file.
#[derive(Debug)]
pub struct FileDto<V = Box<RawValue>> {
    pub hooks: BTreeMap<String, V>,
    pub pending: Vec<V>,
    pub extra: Vec<(String, V)>,
}

impl<V> Default for FileDto<V> {
    fn default() -> Self {
        Self {
            hooks: BTreeMap::new(),
            pending: Vec::new(),
            extra: Vec::new(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FileDto<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = FileDto<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object with \"hooks\" and \"pending\"")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<FileDto<T>, A::Error> {
                let mut out = FileDto::default();
                while let Some(k) = m.next_key::<String>()? {
                    match k.as_str() {
                        "hooks" => {
                            out.hooks = m
                                .next_value::<Option<BTreeMap<String, T>>>()?
                                .unwrap_or_default()
                        }
                        "pending" => {
                            out.pending = m.next_value::<Option<Vec<T>>>()?.unwrap_or_default()
                        }
                        _ => {
                            let v = m.next_value::<T>()?;
                            out.extra.push((k, v));
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

impl<V: Serialize> Serialize for FileDto<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2 + self.extra.len()))?;
        m.serialize_entry("hooks", &self.hooks)?;
        m.serialize_entry("pending", &self.pending)?;
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDto {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_seconds: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_minutes: Option<Value>,
    #[serde(default)]
    pub prompt_file: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub skip_cron: Option<bool>,
    #[serde(default)]
    pub skip_subagents: Option<bool>,
    #[serde(default)]
    pub max_context_k: Option<Value>,
    /// This project's: the cost cap in US dollars (0 or absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<Value>,
    /// This project's: how late an entry may still fire, in seconds (0 or absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lateness_seconds: Option<Value>,
    /// This project's: the failures a `conversation-failed` hook follows up (absent: the
    /// default three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Value>,
    /// This project's: `closed` keeps a hook's follow-ups out of an open conversation
    /// (absent: `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver: Option<String>,
    /// This project's: the one agent whose conversations it follows up (absent: `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// This project's: `each-task` follows up every task of a conversation (absent: `once`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub last_status: Option<String>,
    /// Kept raw until a caller needs the hook's history: most operations never do.
    #[serde(default)]
    pub history: Option<Box<RawValue>>,
    /// Fields this project does not know: not read with the hook (a flattened map makes
    /// serde buffer the whole object); recovered from the stored bytes when it is rewritten.
    #[serde(skip_deserializing, flatten)]
    pub extra: Map<String, Value>,
}

/// The fields of a stored object that are not in `known`.
pub fn unknown_fields(raw: &RawValue, known: &[&str]) -> Map<String, Value> {
    let mut m: Map<String, Value> = serde_json::from_str(raw.get()).unwrap_or_default();
    m.retain(|k, _| !known.contains(&k.as_str()));
    m
}

/// The fields of a hook this project knows.
pub const HOOK_FIELDS: [&str; 20] = [
    "id",
    "name",
    "event",
    "delaySeconds",
    "delayMinutes",
    "promptFile",
    "enabled",
    "skipCron",
    "skipSubagents",
    "maxContextK",
    "maxCostUsd",
    "maxLatenessSeconds",
    "errors",
    "deliver",
    "agent",
    "repeat",
    "createdAt",
    "lastStatus",
    "history",
    "extra",
];

fn whole(field: &'static str, v: &Value) -> Result<i64, ValidationError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| {
                ValidationError::new(field, format!("must be a whole number (got {n})"))
            }),
        Value::String(s) => s.trim().parse().map_err(|_| {
            ValidationError::new(field, format!("must be a whole number (got {s:?})"))
        }),
        Value::Null => Ok(0),
        other => Err(ValidationError::new(
            field,
            format!("must be a whole number (got {other})"),
        )),
    }
}

/// A stored `errors`: a list of names, or one comma-separated string; absent or null, the
/// default.
fn failure_kinds(v: Option<&Value>) -> Result<FailureKinds, ValidationError> {
    match v {
        None | Some(Value::Null) => Ok(FailureKinds::default()),
        Some(Value::String(s)) => FailureKinds::parse(s),
        Some(Value::Array(items)) => {
            let names = items
                .iter()
                .map(|i| {
                    i.as_str().ok_or_else(|| {
                        ValidationError::new("errors", format!("each must be a name (got {i})"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            FailureKinds::new(&names)
        }
        Some(other) => Err(ValidationError::new(
            "errors",
            format!("must be a list of failure names (got {other})"),
        )),
    }
}

impl HookDto {
    /// Reads a stored hook, migrated.
    pub fn from_raw(key: &str, raw: &RawValue) -> Result<Self, ValidationError> {
        let mut d: HookDto = serde_json::from_str(raw.get()).map_err(|e| {
            ValidationError::new("hook", format!("must be an object of hook fields ({e})"))
        })?;
        let _ = key;
        d.migrate()?;
        Ok(d)
    }

    /// The hook's stored bytes after writing `hook` over `raw` (unknown fields kept).
    pub fn rewrite(raw: Option<&RawValue>, hook: &Hook) -> Option<Box<RawValue>> {
        let mut d = match raw {
            Some(r) => {
                let mut d: HookDto = serde_json::from_str(r.get()).unwrap_or_default();
                d.extra = unknown_fields(r, &HOOK_FIELDS);
                d
            }
            None => HookDto::default(),
        };
        d.update_from(hook);
        serde_json::value::to_raw_value(&d).ok()
    }

    /// The original's migration: `delayMinutes` becomes `delaySeconds` when the latter is
    /// missing. Returns whether anything changed.
    pub fn migrate(&mut self) -> Result<bool, ValidationError> {
        if self.delay_seconds.is_none()
            && let Some(m) = self.delay_minutes.take()
        {
            let secs = whole("delayMinutes", &m)?.saturating_mul(60);
            self.delay_seconds = Some(Value::from(secs));
            return Ok(true);
        }
        Ok(false)
    }

    pub fn to_hook(&self, key: &str) -> Result<Hook, ValidationError> {
        let id = HookId::parse(key)?;
        let name = match self.name.as_deref().map(str::trim) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => key.to_owned(),
        };
        let delay = match &self.delay_seconds {
            Some(v) => Delay::from_seconds(whole("delaySeconds", v)?)?,
            None => Delay::from_seconds(0)?,
        };
        let prompt_file = PromptFile::parse(self.prompt_file.as_deref().unwrap_or(""))?;
        let max_context = match &self.max_context_k {
            Some(v) => ContextCap::from_k(whole("maxContextK", v)?)?,
            None => ContextCap::NONE,
        };
        let max_cost = match &self.max_cost_usd {
            None | Some(Value::Null) => CostCap::NONE,
            Some(Value::Number(n)) => CostCap::from_usd(n.as_f64().unwrap_or(f64::NAN))?,
            Some(Value::String(s)) => CostCap::parse(s)?,
            Some(other) => CostCap::parse(&other.to_string())?,
        };
        let max_lateness = match &self.max_lateness_seconds {
            None | Some(Value::Null) => MaxLateness::NONE,
            Some(v) => MaxLateness::from_seconds(whole("maxLatenessSeconds", v)?)?,
        };
        let stored: BTreeMap<String, Value> = match &self.history {
            Some(raw) => serde_json::from_str::<Option<BTreeMap<String, Value>>>(raw.get())
                .map_err(|e| {
                    ValidationError::new(
                        "history",
                        format!("must be an object of time → session id ({e})"),
                    )
                })?
                .unwrap_or_default(),
            None => BTreeMap::new(),
        };
        let history = History::from_entries(
            stored
                .into_iter()
                .map(|(key, v)| HistoryEntry {
                    key,
                    session: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                })
                .collect(),
        );
        Ok({
            let mut o = Hook::new(id, name, prompt_file);
            o.errors = failure_kinds(self.errors.as_ref())?;
            o.event = Event::parse(self.event.as_deref().unwrap_or(""))?;
            o.delay = delay;
            o.enabled = self.enabled.unwrap_or(false);
            o.skip_cron = self.skip_cron.unwrap_or(false);
            o.skip_subagents = self.skip_subagents.unwrap_or(false);
            o.max_context = max_context;
            o.max_cost = max_cost;
            o.max_lateness = max_lateness;
            o.deliver = Delivery::parse(self.deliver.as_deref().unwrap_or(""))?;
            o.agent = AgentScope::parse(self.agent.as_deref().unwrap_or(""))?;
            o.repeat = Repeat::parse(self.repeat.as_deref().unwrap_or(""))?;
            o.created_at = self.created_at.as_deref().and_then(stamp::parse);
            o.last_status = self.last_status.as_deref().map(Status::parse);
            o.history = history;
            o
        })
    }

    /// Writes `hook` over this record, keeping its unknown fields and the stored form of
    /// values that did not change.
    pub fn update_from(&mut self, hook: &Hook) {
        self.id = Some(hook.id.to_string());
        self.name = Some(hook.name.clone());
        self.event = Some(hook.event.as_str().to_owned());
        self.delay_seconds = Some(Value::from(hook.delay.seconds()));
        self.delay_minutes = None;
        self.prompt_file = Some(hook.prompt_file.to_string());
        self.enabled = Some(hook.enabled);
        self.skip_cron = Some(hook.skip_cron);
        self.skip_subagents = Some(hook.skip_subagents);
        self.max_context_k = Some(Value::from(hook.max_context.k()));
        // A file that never had a cap does not get the field.
        self.max_cost_usd = match hook.max_cost.usd() {
            Some(usd) => Some(Value::from(usd)),
            None => self.max_cost_usd.take().map(|_| Value::from(0)),
        };
        self.max_lateness_seconds = match hook.max_lateness.seconds() {
            0 => self.max_lateness_seconds.take().map(|_| Value::from(0)),
            n => Some(Value::from(n)),
        };
        // Written when it is not the default, or where a file has it already.
        self.deliver = (hook.deliver != Delivery::Auto || self.deliver.is_some())
            .then(|| hook.deliver.as_str().to_owned());
        self.agent = (hook.agent != AgentScope::All || self.agent.is_some())
            .then(|| hook.agent.as_str().to_owned());
        self.repeat = (hook.repeat != Repeat::Once || self.repeat.is_some())
            .then(|| hook.repeat.as_str().to_owned());
        // Written for the hooks it matters to, and where a file has it already.
        self.errors = (hook.event == Event::ConversationFailed || self.errors.is_some())
            .then(|| Value::from(hook.errors.names()));
        if self.created_at.as_deref().and_then(stamp::parse) != hook.created_at {
            self.created_at = hook.created_at.map(stamp::format);
        }
        self.last_status = hook.last_status.as_ref().map(ToString::to_string);
        let map: BTreeMap<&str, &str> = hook
            .history
            .entries()
            .iter()
            .map(|e| (e.key.as_str(), e.session.as_str()))
            .collect();
        self.history = serde_json::value::to_raw_value(&map).ok();
    }
}

/// Only a hook's rules, for the enqueue path: its history and the rest are skipped while
/// parsing, never copied.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesDto {
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    delay_seconds: Option<Value>,
    #[serde(default)]
    delay_minutes: Option<Value>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    skip_cron: Option<bool>,
    #[serde(default)]
    skip_subagents: Option<bool>,
    #[serde(default)]
    errors: Option<Value>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    repeat: Option<String>,
}

impl RulesDto {
    /// The rules of the stored hook `key`, with the same defaults and migration as
    /// [`HookDto::to_hook`].
    pub fn read(key: &str, raw: &RawValue) -> Result<HookRules, ValidationError> {
        let d: RulesDto = serde_json::from_str(raw.get()).map_err(|e| {
            ValidationError::new("hook", format!("must be an object of hook fields ({e})"))
        })?;
        d.rules(key)
    }

    /// The rules of the stored hook `key` from its fields as found by the scan: each quoted
    /// key as written and its value's JSON text (its history left out).
    pub fn from_fields(key: &str, fields: &[(&str, &str)]) -> Result<HookRules, ValidationError> {
        let mut text = String::with_capacity(
            2 + fields
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>(),
        );
        text.push('{');
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(k);
            text.push(':');
            text.push_str(v);
        }
        text.push('}');
        let d: RulesDto = serde_json::from_str(&text).map_err(|e| {
            ValidationError::new("hook", format!("must be an object of hook fields ({e})"))
        })?;
        d.rules(key)
    }

    /// The rules these fields give the stored hook `key`.
    pub fn rules(self, key: &str) -> Result<HookRules, ValidationError> {
        let d = self;
        let delay = match (&d.delay_seconds, &d.delay_minutes) {
            (Some(s), _) => whole("delaySeconds", s)?,
            (None, Some(m)) => whole("delayMinutes", m)?.saturating_mul(60),
            (None, None) => 0,
        };
        Ok({
            let mut o = HookRules::new(
                HookId::parse(key)?,
                Event::parse(d.event.as_deref().unwrap_or(""))?,
            );
            o.errors = failure_kinds(d.errors.as_ref())?;
            o.delay = Delay::from_seconds(delay)?;
            o.enabled = d.enabled.unwrap_or(false);
            o.skip_cron = d.skip_cron.unwrap_or(false);
            o.skip_subagents = d.skip_subagents.unwrap_or(false);
            o.agent = AgentScope::parse(d.agent.as_deref().unwrap_or(""))?;
            o.repeat = Repeat::parse(d.repeat.as_deref().unwrap_or(""))?;
            o
        })
    }
}

/// The session of a stored pending entry, borrowed from the file's bytes where it can be.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyDto<'a> {
    #[serde(borrow)]
    pub session_id: std::borrow::Cow<'a, str>,
}

/// A pending entry as stored. The claim fields are this project's; the original ignores them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingDto {
    pub hook_id: String,
    pub session_id: String,
    #[serde(default)]
    pub due_at: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_at: Option<String>,
    #[serde(default)]
    pub retries: Option<Value>,
    /// Its runs that ended on a limit; absent in files from before it was kept apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Value>,
    /// Its deliveries into the open conversation never taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_taken: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_expires_at: Option<String>,
    /// Why the entry waits, while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitingDto>,
    /// The failure it follows up (`rate_limit`, …), for a `conversation-failed` hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields this project does not know. Not read with the entry (a flattened map makes
    /// every entry slow to parse); recovered from the stored bytes when an entry changes.
    #[serde(skip_deserializing, flatten)]
    pub extra: Map<String, Value>,
}

/// The fields of a pending entry this project knows.
pub const PENDING_FIELDS: [&str; 11] = [
    "hookId",
    "sessionId",
    "dueAt",
    "queuedAt",
    "retries",
    "attempts",
    "notTaken",
    "claimedBy",
    "claimExpiresAt",
    "waiting",
    "error",
];

/// Why a pending entry waits: `{"kind", "reason", "since", "open"}`. `kind` is what is
/// decided by; files from before it have none, and their wait's kind is read from its
/// words once ([`WaitKind::of_legacy`]). `open` is still written, for older versions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub reason: String,
    pub since: String,
    #[serde(default)]
    pub open: bool,
}

impl WaitingDto {
    /// Its kind: as stored, or read from an older file's words. A kind this version does
    /// not know waits as not ready (looked at again, the next fire decides afresh).
    fn kind(&self) -> WaitKind {
        match &self.kind {
            Some(k) => WaitKind::parse(k).unwrap_or(WaitKind::NotReady),
            None => WaitKind::of_legacy(&self.reason, self.open),
        }
    }
}

fn count(field: &'static str, v: &Option<Value>) -> Result<u32, ValidationError> {
    Ok(match v {
        Some(v) => u32::try_from(whole(field, v)?.max(0)).unwrap_or(u32::MAX),
        None => 0,
    })
}

impl PendingDto {
    pub fn to_entry(&self) -> Result<PendingEntry, ValidationError> {
        let due_at = match &self.due_at {
            Some(Value::String(s)) => DueAt::from_stored(s),
            Some(other) => DueAt::Unparseable(other.to_string()),
            None => DueAt::Unparseable(String::new()),
        };
        let mut retries = count("retries", &self.retries)?;
        let mut attempts = count("attempts", &self.attempts)?;
        let not_taken = count("notTaken", &self.not_taken)?;
        // A wait that cannot be read is dropped: the next fire decides afresh.
        let waiting = self.waiting.as_ref().and_then(|w| {
            Some(Waiting {
                kind: w.kind(),
                reason: w.reason.clone(),
                since: stamp::parse(&w.since)?,
            })
        });
        // Before attempts were kept apart, an entry a limit put back counted them in
        // `retries`.
        if self.attempts.is_none() && waiting.as_ref().is_some_and(|w| w.kind == WaitKind::Limit) {
            (attempts, retries) = (retries, 0);
        }
        let not_taken = match (&self.not_taken, &waiting) {
            (None, Some(w)) if w.kind == WaitKind::NotTaken => 1,
            _ => not_taken,
        };
        let claim = match (
            &self.claimed_by,
            self.claim_expires_at.as_deref().and_then(stamp::parse),
        ) {
            (Some(owner), Some(expires_at)) => Some(Claim {
                owner: owner.clone(),
                expires_at,
            }),
            _ => None,
        };
        Ok(PendingEntry {
            hook_id: HookId::parse(&self.hook_id)?,
            session_id: SessionId::parse(&self.session_id)?,
            due_at,
            queued_at: self.queued_at.as_deref().and_then(stamp::parse),
            retries,
            attempts,
            not_taken,
            claim,
            waiting,
            // A name this version does not know still follows a failure up.
            error: self.error.as_deref().map(FailureKind::from_claude),
        })
    }

    pub fn from_entry(e: &PendingEntry, extra: Map<String, Value>) -> Self {
        Self {
            hook_id: e.hook_id.to_string(),
            session_id: e.session_id.to_string(),
            due_at: Some(Value::from(e.due_at.to_string())),
            queued_at: e.queued_at.map(stamp::format),
            retries: Some(Value::from(e.retries)),
            // Kept with a limit's wait even at 0: its absence there marks an older file.
            attempts: (e.attempts > 0
                || e.waiting
                    .as_ref()
                    .is_some_and(|w| w.kind == WaitKind::Limit))
            .then(|| Value::from(e.attempts)),
            not_taken: (e.not_taken > 0).then(|| Value::from(e.not_taken)),
            claimed_by: e.claim.as_ref().map(|c| c.owner.clone()),
            claim_expires_at: e.claim.as_ref().map(|c| stamp::format(c.expires_at)),
            waiting: e.waiting.as_ref().map(|w| WaitingDto {
                kind: Some(w.kind.as_str().to_owned()),
                reason: w.reason.clone(),
                since: stamp::format(w.since),
                open: w.waits_for_close(),
            }),
            error: e.error.map(|k| k.as_str().to_owned()),
            extra,
        }
    }
}

/// One line of `runs.jsonl`. A run writes a line as it starts (no `finishedAt`, no
/// `status`), one when its process is known (`pid`, `procStart`), and one when it ends; the
/// lines share a `runId`. Lines of older logs have no `runId` and are whole in themselves.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub hook_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The follow-up's process: the leader of its process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_start: Option<u64>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub status: Option<String>,
    pub exit_code: Option<i32>,
    pub completed: Option<bool>,
    pub num_turns: Option<u64>,
    pub cost_usd: Option<f64>,
    /// What the run was estimated to cost before it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_cost_usd: Option<f64>,
    /// The model the run was priced as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub usage: Option<UsageDto>,
    pub duration_ms: Option<u64>,
    /// The follow-up's last reply, bounded (`hooks_core::keep_reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Delivered into the conversation open in the TUI, not resumed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delivered: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageDto {
    pub input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

impl RunDto {
    pub fn from_record(r: &RunRecord) -> Self {
        let o = &r.outcome;
        let done = r.finished_at.is_some() || o.status.is_some();
        Self {
            run_id: r.run_id.clone(),
            hook_id: r.hook_id.to_string(),
            session_id: r.session_id.to_string(),
            owner: r.owner.clone(),
            pid: r.process.map(|p| p.pid),
            proc_start: r.process.map(|p| p.start),
            // To the microsecond: a run's wall time is read back from these two.
            started_at: stamp::format_exact(r.started_at),
            finished_at: r.finished_at.map(stamp::format_exact),
            status: done.then(|| o.status().to_string()),
            exit_code: o.exit_code,
            completed: o.completed,
            num_turns: o.num_turns,
            cost_usd: o.cost_usd,
            estimated_cost_usd: r.estimated_cost_usd,
            model: r.model.clone(),
            usage: o.usage.map(|u| UsageDto {
                input_tokens: u.input_tokens,
                cache_creation_input_tokens: u.cache_creation_input_tokens,
                cache_read_input_tokens: u.cache_read_input_tokens,
                output_tokens: u.output_tokens,
            }),
            duration_ms: o.duration_ms,
            reply: o.result_text.clone(),
            delivered: r.delivered,
        }
    }

    pub fn to_record(&self) -> Option<RunRecord> {
        let finished_at = match &self.finished_at {
            Some(f) => Some(stamp::parse(f)?),
            None => None,
        };
        Some({
            let mut o = RunRecord::new(
                HookId::parse(&self.hook_id).ok()?,
                SessionId::parse(&self.session_id).ok()?,
                stamp::parse(&self.started_at)?,
            );
            o.run_id = self.run_id.clone();
            o.owner = self.owner.clone();
            o.process = match (self.pid, self.proc_start) {
                (Some(pid), Some(start)) => Some(ProcessRef { pid, start }),
                _ => None,
            };
            o.finished_at = finished_at;
            o.outcome = {
                let mut o = RunOutcome::default();
                o.api_error_status = None;
                o.status = self.status.as_deref().map(Status::parse);
                o.exit_code = self.exit_code;
                o.completed = self.completed;
                o.num_turns = self.num_turns;
                o.cost_usd = self.cost_usd;
                o.usage = self.usage.map(|u| {
                    let mut o = Usage::default();
                    o.input_tokens = u.input_tokens;
                    o.cache_creation_input_tokens = u.cache_creation_input_tokens;
                    o.cache_read_input_tokens = u.cache_read_input_tokens;
                    o.output_tokens = u.output_tokens;
                    o
                });
                o.duration_ms = self.duration_ms;
                o.session_id = None;
                o.result_text = self.reply.clone();
                o
            };
            o.estimated_cost_usd = self.estimated_cost_usd;
            o.model = self.model.clone();
            o.delivered = self.delivered;
            o
        })
    }
}

/// The top-level key of the daily budget, this project's (the original keeps it as an
/// unknown field).
pub const BUDGET_KEY: &str = "budget";

/// The daily budget as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetDto {
    pub daily_usd: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    #[serde(default)]
    pub when_reached: Option<String>,
}

impl BudgetDto {
    pub fn read(raw: &RawValue) -> Result<hooks_core::cost::Budget, ValidationError> {
        let d: BudgetDto = serde_json::from_str(raw.get()).map_err(|e| {
            ValidationError::new("budget", format!("must be an object with dailyUsd ({e})"))
        })?;
        Ok(hooks_core::cost::Budget {
            daily: CostCap::from_usd(d.daily_usd)?,
            time_zone: d
                .time_zone
                .as_deref()
                .map(hooks_core::cost::Budget::validate_zone)
                .transpose()?,
            when_reached: match d.when_reached.as_deref() {
                None => hooks_core::cost::WhenReached::default(),
                Some(w) => hooks_core::cost::WhenReached::parse(w)?,
            },
        })
    }

    pub fn from_budget(b: &hooks_core::cost::Budget) -> Self {
        Self {
            daily_usd: b.daily.usd().unwrap_or(0.0),
            time_zone: b.time_zone.clone(),
            when_reached: Some(b.when_reached.as_str().to_owned()),
        }
    }
}

/// The top-level key of a pause, this project's (the original keeps it as an unknown
/// field).
pub const PAUSE_KEY: &str = "paused";

/// A pause as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseDto {
    pub since: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    pub by: String,
}

impl PauseDto {
    pub fn read(raw: &RawValue) -> Result<hooks_core::Pause, ValidationError> {
        let bad = |why: String| ValidationError::new("paused", why);
        let d: PauseDto = serde_json::from_str(raw.get())
            .map_err(|e| bad(format!("must be an object with since and by ({e})")))?;
        let at = |s: &str| stamp::parse(s).ok_or_else(|| bad(format!("{s:?} is not a time")));
        Ok(hooks_core::Pause {
            since: at(&d.since)?,
            until: d.until.as_deref().map(at).transpose()?,
            by: d.by,
        })
    }

    pub fn from_pause(p: &hooks_core::Pause) -> Self {
        Self {
            since: stamp::format(p.since),
            until: p.until.map(stamp::format),
            by: p.by.clone(),
        }
    }
}
