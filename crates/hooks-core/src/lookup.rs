//! One conversation as a person asks about it (`session`, `hooks run`, the API and the
//! page): the id or prefix they gave resolved to one conversation, and what is known of it.

use crate::cost::{CostView, over_cap};
use crate::model::*;
use crate::service::{Service, ServiceError};
use crate::stamp::Timestamp;
use crate::{SessionId, ValidationError};

/// The shortest prefix of a session id accepted in its place.
pub const SESSION_PREFIX_MIN: usize = 8;

/// Why text a person gave names no one conversation.
#[derive(Debug)]
pub enum SessionLookup {
    /// Not a session id at all.
    Invalid(ValidationError),
    /// A prefix several conversations share: the message names some of them.
    Ambiguous(String),
    /// Nothing known by that id or prefix.
    Unknown(String),
    /// The store or the session state could not be read.
    Failed(ServiceError),
}

/// What a follow-up of one enabled hook would cost now, and whether its cap allows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEstimate {
    /// The hook.
    pub hook_id: HookId,
    /// The estimate in US dollars, when one could be made.
    pub usd: Option<f64>,
    /// The model it is made for.
    pub model: Option<String>,
    /// The hook's cap, if it has one.
    pub max_cost_usd: Option<f64>,
    /// The estimate, or why there is none, as a sentence.
    pub text: String,
    /// Why the cap would skip it, when it would.
    pub skipped_because: Option<String>,
}

/// What is known about one conversation.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// The conversation.
    pub session: SessionId,
    /// What is known of it now.
    pub facts: SessionFacts,
    /// Its queued entries.
    pub pending: Vec<PendingEntry>,
    /// What each enabled hook would cost on it.
    pub estimates: Vec<HookEstimate>,
    /// Its runs, oldest first.
    pub runs: Vec<RunRecord>,
    /// When the report was made.
    pub now: Timestamp,
}

impl Service {
    /// The conversation `text` names: its whole id, or a prefix of
    /// [`SESSION_PREFIX_MIN`] or more characters only one known conversation starts with.
    /// Known means remembered, with a transcript, queued, or in the run log.
    pub async fn find_session(&self, text: &str) -> Result<SessionId, SessionLookup> {
        let text = text.trim();
        let asked = SessionId::parse(text).map_err(SessionLookup::Invalid)?;
        let failed = |e: ServiceError| SessionLookup::Failed(e);
        let (mut known, searched) = self
            .meta()
            .sessions_starting(text)
            .await
            .map_err(|e| failed(e.into()))?;
        let pending = self
            .store()
            .snapshot()
            .await
            .map_err(|e| failed(e.into()))?
            .pending;
        // A prefix is looked for among the recent conversations (30 days of runs): the run
        // log grows without end.
        let runs = self
            .store()
            .runs(&RunFilter {
                since: Some(self.now() - time::Duration::days(30)),
                ..RunFilter::default()
            })
            .await
            .map_err(|e| failed(e.into()))?;
        known.extend(
            pending
                .iter()
                .map(|p| &p.session_id)
                .chain(runs.iter().map(|r| &r.session_id))
                .filter(|s| s.as_str().starts_with(text))
                .cloned(),
        );
        known.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        known.dedup();
        if known.contains(&asked) {
            return Ok(asked);
        }
        let short = text.chars().count() < SESSION_PREFIX_MIN;
        match known.as_slice() {
            [one] if !short => Ok(one.clone()),
            _ if short => Err(SessionLookup::Unknown(format!(
                "no conversation {text}: not found in {searched}, the queue or the run log \
                 (a prefix needs {SESSION_PREFIX_MIN} characters or more)"
            ))),
            [] | [_] => Err(SessionLookup::Unknown(format!(
                "no conversation {text}: not found in {searched}, the queue or the run log"
            ))),
            many => Err(SessionLookup::Ambiguous(format!(
                "session: {text} starts {} conversations ({}); give more of the id",
                many.len(),
                many.iter()
                    .take(5)
                    .map(SessionId::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// What is known about a conversation: its facts, its queued entries, what a follow-up
    /// of each enabled hook would cost now, and its runs.
    pub async fn session_report(&self, sid: &SessionId) -> Result<SessionReport, ServiceError> {
        let facts = self.meta().facts(sid).await?;
        let pending: Vec<PendingEntry> = self
            .store()
            .snapshot()
            .await?
            .pending
            .into_iter()
            .filter(|p| p.session_id == *sid)
            .collect();
        let mut estimates = Vec::new();
        for h in self.list_hooks().await?.iter().filter(|h| h.enabled) {
            let view = self.estimate(h, &facts).await;
            let (text, usd, model, over) = match &view {
                Ok(v @ CostView::Estimated(e)) => (
                    format!("a follow-up now would cost {e}"),
                    Some(e.usd),
                    Some(e.model.clone()),
                    over_cap(h.max_cost, v),
                ),
                Ok(v) => (
                    v.no_estimate().unwrap_or_default(),
                    None,
                    None,
                    over_cap(h.max_cost, v),
                ),
                Err(e) => (format!("no estimate: {e}"), None, None, None),
            };
            estimates.push(HookEstimate {
                hook_id: h.id.clone(),
                usd,
                model,
                max_cost_usd: h.max_cost.usd(),
                text,
                skipped_because: over,
            });
        }
        let runs = self
            .store()
            .runs(&RunFilter {
                session_id: Some(sid.clone()),
                ..RunFilter::default()
            })
            .await?;
        Ok(SessionReport {
            session: sid.clone(),
            facts,
            pending,
            estimates,
            runs,
            now: self.now(),
        })
    }
}
