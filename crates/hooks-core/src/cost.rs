//! What a follow-up costs: the price table, the estimate made before a run, and what the
//! fire decision looks at when a hook has a cost cap.
//!
//! A resume starts a new `claude` process whose preamble differs from the one that wrote
//! the conversation, so the prompt cache misses and the whole prior conversation is paid
//! again as cache writes. The estimate is therefore: the conversation's context at the
//! cache-write price, plus the prompt at the input price, plus the output the hook usually
//! writes at the output price.

use std::fmt;

use crate::model::{CostCap, Usage, ValidationError};

/// Prices of one model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// US dollars per million input tokens read anew.
    pub input: f64,
    /// Writing the prompt cache for 5 minutes (what Claude Code writes).
    pub cache_write_5m: f64,
    /// Writing it for an hour.
    pub cache_write_1h: f64,
    /// US dollars per million input tokens read from the prompt cache.
    pub cache_read: f64,
    /// US dollars per million output tokens.
    pub output: f64,
}

impl Price {
    /// A price with Anthropic's cache multipliers on the input price: writes 1.25× for
    /// 5 minutes and 2× for an hour, reads 0.1×.
    pub const fn standard(input: f64, output: f64) -> Self {
        Self {
            input,
            cache_write_5m: input * 1.25,
            cache_write_1h: input * 2.0,
            cache_read: input / 10.0,
            output,
        }
    }

    /// What `usage` costs at this price, cache writes at the 5-minute price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let n = |v: Option<u64>| v.unwrap_or(0) as f64;
        (n(usage.input_tokens) * self.input
            + n(usage.cache_creation_input_tokens) * self.cache_write_5m
            + n(usage.cache_read_input_tokens) * self.cache_read
            + n(usage.output_tokens) * self.output)
            / 1e6
    }

    /// Each price is a finite number ≥ 0.
    pub fn is_valid(&self) -> bool {
        [
            self.input,
            self.cache_write_5m,
            self.cache_write_1h,
            self.cache_read,
            self.output,
        ]
        .iter()
        .all(|p| p.is_finite() && *p >= 0.0)
    }
}

/// When the built-in table was taken, and from where.
pub const PRICES_TAKEN: &str = "2026-12-05";
/// Where the built-in table's figures come from, and when they were read.
pub const PRICES_SOURCE: &str = "the model catalogue of Claude Code 2.1.332 (its per-model \
     pricing tiers), checked against the total_cost_usd that Claude Code 2.1.332 computes for \
     each model; for OpenAI's models (Codex), the standard short-context prices OpenAI \
     publishes on its model pages for the models Codex 0.171.0's catalogue offers, read \
     2026-12-05";

/// The built-in prices, by model id without a date suffix: input, output, and the cache
/// read price where it is not the usual tenth of the input price.
const BUILTIN: &[(&str, f64, f64, Option<f64>)] = &[
    // Opus.
    ("claude-opus-5-5", 4.0, 20.0, Some(0.2)),
    ("claude-opus-5", 5.0, 25.0, None),
    ("claude-opus-4-8", 5.0, 25.0, None),
    ("claude-opus-4-7", 5.0, 25.0, None),
    ("claude-opus-4-6", 5.0, 25.0, None),
    ("claude-opus-4-5", 5.0, 25.0, None),
    ("claude-opus-4-1", 15.0, 75.0, None),
    ("claude-opus-4-0", 15.0, 75.0, None),
    ("claude-opus-4", 15.0, 75.0, None),
    // Sonnet. Claude Code 2.1.197 priced claude-sonnet-5 at 3/15; 2.1.332 at 2/10.
    ("claude-sonnet-5-5", 2.0, 10.0, Some(0.1)),
    ("claude-sonnet-5", 2.0, 10.0, None),
    ("claude-sonnet-4-6", 3.0, 15.0, None),
    ("claude-sonnet-4-5", 3.0, 15.0, None),
    ("claude-sonnet-4-0", 3.0, 15.0, None),
    ("claude-sonnet-4", 3.0, 15.0, None),
    ("claude-3-7-sonnet", 3.0, 15.0, None),
    ("claude-3-5-sonnet", 3.0, 15.0, None),
    // Haiku. Claude Code prices claude-haiku-5-5 five times higher for a prompt over 100k
    // tokens; this table has the price below that (see ARCHITECTURE's known limits).
    ("claude-haiku-5-5", 0.1, 0.5, None),
    ("claude-haiku-4-5", 1.0, 5.0, None),
    ("claude-3-5-haiku", 0.8, 4.0, None),
    // Fable and Mythos.
    ("claude-fable-5-2", 8.0, 40.0, Some(0.2)),
    ("claude-fable-5-1", 10.0, 50.0, Some(0.25)),
    ("claude-fable-5", 10.0, 50.0, None),
    ("claude-mythos-5-2", 8.0, 40.0, Some(0.2)),
    ("claude-mythos-5-1", 10.0, 50.0, Some(0.25)),
    ("claude-mythos-5", 10.0, 50.0, None),
    // OpenAI's, for Codex: standard prices for a request of up to 272K input tokens (a
    // longer one costs twice the input and 1.5 times the output; see ARCHITECTURE's known
    // limits). Cache writes are 1.25 times the input price, as Anthropic's.
    ("gpt-6.2-astra", 8.0, 40.0, None),
    ("gpt-6.2-sol", 2.0, 10.0, Some(0.1)),
    ("gpt-6.1-sol", 2.0, 10.0, Some(0.1)),
    ("gpt-6-astra", 10.0, 50.0, None),
    ("gpt-6-sol", 2.0, 10.0, None),
    ("gpt-6-luna", 0.1, 0.5, None),
    ("gpt-5.6-sol", 4.0, 20.0, None),
    ("gpt-5.6-terra", 2.0, 12.0, None),
    ("gpt-5.6-luna", 0.2, 1.2, None),
    ("gpt-5.5", 5.0, 30.0, None),
    ("gpt-5.4", 2.5, 15.0, None),
];

/// The families a model the table lacks is priced by (the dearest of its family): a word
/// of its id between dashes or dots.
const FAMILIES: &[&str] = &[
    "opus", "sonnet", "haiku", "fable", "mythos", "astra", "sol", "terra", "luna",
];

/// Whether `family` is one of the words of model id `id`.
fn in_family(id: &str, family: &str) -> bool {
    id.split(['-', '.']).any(|w| w == family)
}

/// The aliases Claude Code 2.1.332 resolves, and what to (2.1.197 resolved opus to
/// claude-opus-4-8, sonnet to claude-sonnet-5, haiku to claude-haiku-4-5 and fable to
/// claude-fable-5).
const ALIASES: &[(&str, &str)] = &[
    ("opus", "claude-opus-5-5"),
    ("sonnet", "claude-sonnet-5-5"),
    ("haiku", "claude-haiku-5-5"),
    ("fable", "claude-fable-5-2"),
    ("opusplan", "claude-opus-5-5"),
];

/// Model ids and their prices. Ids are compared after [`canonical`].
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    models: Vec<(String, Price)>,
    aliases: Vec<(String, String)>,
}

impl Default for PriceTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PriceTable {
    /// The table this version ships with (see [`PRICES_TAKEN`], [`PRICES_SOURCE`]).
    pub fn builtin() -> Self {
        Self {
            models: BUILTIN
                .iter()
                .map(|(m, i, o, read)| {
                    let mut p = Price::standard(*i, *o);
                    if let Some(r) = read {
                        p.cache_read = *r;
                    }
                    ((*m).to_owned(), p)
                })
                .collect(),
            aliases: ALIASES
                .iter()
                .map(|(a, m)| ((*a).to_owned(), (*m).to_owned()))
                .collect(),
        }
    }

    /// Sets (or adds) the price of `model`.
    pub fn set(&mut self, model: &str, price: Price) {
        let id = canonical(model);
        match self.models.iter_mut().find(|(m, _)| *m == id) {
            Some(slot) => slot.1 = price,
            None => self.models.push((id, price)),
        }
    }

    /// Makes `alias` name `model`.
    pub fn alias(&mut self, alias: &str, model: &str) {
        let (a, m) = (alias.to_ascii_lowercase(), canonical(model));
        match self.aliases.iter_mut().find(|(x, _)| *x == a) {
            Some(slot) => slot.1 = m,
            None => self.aliases.push((a, m)),
        }
    }

    /// The model id `model` comes to (an alias resolved, see [`canonical`]) and its price,
    /// if the table has one.
    pub fn lookup(&self, model: &str) -> Option<(String, Price)> {
        let lower = model.trim().to_ascii_lowercase();
        let bare = lower.strip_suffix("[1m]").unwrap_or(&lower);
        let id = match self.aliases.iter().find(|(a, _)| a == bare) {
            Some((_, m)) => m.clone(),
            None => canonical(bare),
        };
        self.models
            .iter()
            .find(|(m, _)| *m == id)
            .map(|(m, p)| (m.clone(), *p))
    }

    /// The dearest price of `model`'s family (Anthropic's `opus`, `sonnet`, `haiku`,
    /// `fable`, `mythos`; OpenAI's `astra`, `sol`, `terra`, `luna`: a word of its id), for a
    /// model the table does not know: a cap then still holds.
    pub fn lookup_family(&self, model: &str) -> Option<(String, Price)> {
        let id = canonical(model);
        let family = FAMILIES.iter().find(|f| in_family(&id, f))?;
        self.models
            .iter()
            .filter(|(m, _)| in_family(m, family))
            // The first of the dearest, in the table's order.
            .fold(None::<&(String, Price)>, |best, e| match best {
                Some(b) if dearness(&b.1) >= dearness(&e.1) => Some(b),
                _ => Some(e),
            })
            .map(|(m, p)| (m.clone(), *p))
    }

    /// Every alias and the model it names.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases.iter().map(|(a, m)| (a.as_str(), m.as_str()))
    }

    /// Every model and price, in the table's order.
    pub fn models(&self) -> impl Iterator<Item = (&str, &Price)> {
        self.models.iter().map(|(m, p)| (m.as_str(), p))
    }
}

fn dearness(p: &Price) -> f64 {
    p.input + p.output + p.cache_write_5m
}

/// A model id as the table keys it: lower case, without a `[1m]` suffix, a provider's
/// prefix (`us.anthropic.`, `anthropic.`, `openai/`, `openai.`), a version suffix (`-v1:0`,
/// `@20250929`) or a date suffix (`-20250929`, OpenAI's `-2026-04-23`).
pub fn canonical(model: &str) -> String {
    let mut id = model.trim().to_ascii_lowercase();
    if let Some(s) = id.strip_suffix("[1m]") {
        id = s.to_owned();
    }
    if let Some(at) = id.find("claude-").or_else(|| id.find("gpt-")) {
        id = id[at..].to_owned();
    }
    if let Some(at) = id.find(['@', ':']) {
        id.truncate(at);
    }
    if let Some(s) = id.strip_suffix("-v1") {
        id = s.to_owned();
    }
    let date = id.len() >= 9
        && id.as_bytes()[id.len() - 9] == b'-'
        && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit());
    if date {
        id.truncate(id.len() - 9);
    }
    // OpenAI's dated ids: `-YYYY-MM-DD`.
    let b = id.as_bytes();
    let dashed = b.len() >= 11
        && b[b.len() - 11] == b'-'
        && b[b.len() - 6] == b'-'
        && b[b.len() - 3] == b'-'
        && [10, 9, 8, 7, 5, 4, 2, 1]
            .iter()
            .all(|k| b[b.len() - k].is_ascii_digit());
    if dashed {
        id.truncate(id.len() - 11);
    }
    id
}

/// Per-token prices of a model, solved from what the agent reported for its runs (Claude
/// Code reports a cost; Codex does not, so its models are priced by the table or their
/// family): each sample a run's usage and cost. The cache prices keep Anthropic's ratios to the input
/// price (writes 1.25×, reads 0.1×), which leaves input and output to solve, by least
/// squares; `None` until the runs tell the two apart (two runs with different mixes), or
/// when the answer is not a price (negative, or no input price at all).
pub fn learn_price(samples: &[(Usage, f64)]) -> Option<Price> {
    let n = |v: Option<u64>| v.unwrap_or(0) as f64 / 1e6;
    let (mut aa, mut ab, mut bb, mut ac, mut bc) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut used = 0;
    for (u, cost) in samples {
        let a = n(u.input_tokens)
            + 1.25 * n(u.cache_creation_input_tokens)
            + 0.1 * n(u.cache_read_input_tokens);
        let b = n(u.output_tokens);
        if !cost.is_finite() || *cost < 0.0 || (a == 0.0 && b == 0.0) {
            continue;
        }
        used += 1;
        aa += a * a;
        ab += a * b;
        bb += b * b;
        ac += a * cost;
        bc += b * cost;
    }
    let det = aa * bb - ab * ab;
    if used < 2 || det.abs() <= 1e-12 * aa.max(1e-300) * bb.max(1e-300) {
        return None;
    }
    let input = (ac * bb - bc * ab) / det;
    let output = (aa * bc - ab * ac) / det;
    let round = |x: f64| (x * 1e4).round() / 1e4;
    let p = Price::standard(round(input), round(output.max(0.0)));
    (p.input > 0.0 && output > -1e-6 && p.is_valid()).then_some(p)
}

/// Output tokens assumed for a hook with no runs yet.
pub const DEFAULT_OUTPUT_TOKENS: u64 = 1_000;

/// The output a hook's next run is expected to write: the median of its recent runs'
/// output tokens, or [`DEFAULT_OUTPUT_TOKENS`].
pub fn expected_output(recent: &[u64]) -> u64 {
    if recent.is_empty() {
        return DEFAULT_OUTPUT_TOKENS;
    }
    let mut v = recent.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

/// A prompt's tokens, roughly: a token is about four characters of English.
pub fn prompt_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// What a follow-up is expected to cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The model it was priced as.
    pub model: String,
    /// The conversation's context, written to the cache again.
    pub context_tokens: u64,
    /// The prompt's tokens: the conversation's context and the follow-up's prompt.
    pub prompt_tokens: u64,
    /// The output tokens expected.
    pub output_tokens: u64,
    /// What that comes to, in US dollars.
    pub usd: f64,
    /// How it was priced when the table has no price for the model: from what the agent
    /// reported for the model's own runs, or as the dearest of its family, so a cap is
    /// never passed over for want of a price.
    pub priced_as: Option<String>,
}

impl Estimate {
    /// An estimate of `prompt_tokens` in and `output_tokens` out at `price`.
    pub fn new(
        model: &str,
        price: &Price,
        context_tokens: u64,
        prompt_tokens: u64,
        output_tokens: u64,
    ) -> Self {
        let usd = (context_tokens as f64 * price.cache_write_5m
            + prompt_tokens as f64 * price.input
            + output_tokens as f64 * price.output)
            / 1e6;
        Self {
            model: model.to_owned(),
            context_tokens,
            prompt_tokens,
            output_tokens,
            usd,
            priced_as: None,
        }
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "about {} on {}: {}k context re-read as cache writes",
            usd(self.usd),
            self.model,
            self.context_tokens.div_ceil(1000)
        )?;
        if let Some(p) = &self.priced_as {
            write!(f, " (no price in the table: {p}; add it to prices.json)")?;
        }
        Ok(())
    }
}

/// What the fire decision knows of a follow-up's cost.
#[derive(Debug, Clone, PartialEq)]
pub enum CostView {
    /// An estimate at the model's price.
    Estimated(Estimate),
    /// The conversation's (or the prompt's) model has no price.
    NoPrice {
        /// The model no price is known for.
        model: String,
    },
    /// Neither the transcript nor the prompt file names a model.
    NoModel,
}

impl CostView {
    /// Why there is no estimate, when there is none.
    pub fn no_estimate(&self) -> Option<String> {
        match self {
            CostView::Estimated(_) => None,
            CostView::NoPrice { model } => Some(format!(
                "no price for model {model} (add it to prices.json)"
            )),
            CostView::NoModel => Some(
                "no model known for the conversation, so no estimate (name one in the prompt file)"
                    .to_owned(),
            ),
        }
    }
}

/// The check of a hook's cap: `Some(why)` when the follow-up must not run. Without an
/// estimate a capped hook does not run: a cap that cannot be checked is not a cap.
pub fn over_cap(cap: CostCap, view: &CostView) -> Option<String> {
    let cap = cap.usd()?;
    match view {
        CostView::Estimated(e) if e.usd > cap => Some(format!(
            "estimated {} over the {} cap",
            usd(e.usd),
            usd(cap)
        )),
        other => other.no_estimate(),
    }
}

/// Dollars as people read them, the one rule every output uses: cents from a dollar up
/// and for a whole number of cents, else four places (where single runs and small spends
/// are). Rounded up, so an amount over a cap never prints as equal to it.
pub fn usd(v: f64) -> String {
    let cents = v * 100.0;
    if v <= 0.0 {
        "$0.00".to_owned()
    } else if v >= 1.0 {
        format!("${:.2}", (cents - 1e-9).ceil() / 100.0)
    } else if (cents - cents.round()).abs() < 1e-9 {
        format!("${:.2}", cents.round() / 100.0)
    } else {
        format!("${:.4}", (v * 10_000.0 - 1e-9).ceil() / 10_000.0)
    }
}

/// What to do with a follow-up that today's budget cannot pay for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenReached {
    /// Wait for the next day (the default).
    #[default]
    Wait,
    /// Give it up.
    Skip,
}

impl WhenReached {
    /// From its name; the error names `whenReached`.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        match s.trim() {
            "wait" => Ok(Self::Wait),
            "skip" => Ok(Self::Skip),
            other => Err(ValidationError::new(
                "whenReached",
                format!("must be wait or skip (got {other:?})"),
            )),
        }
    }
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wait => "wait",
            Self::Skip => "skip",
        }
    }
}

/// A spending limit for the whole store, per calendar day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The most all follow-ups of a day may cost together.
    pub daily: CostCap,
    /// The zone whose days count (an IANA name); `None`: this machine's local zone.
    pub time_zone: Option<String>,
    /// What happens to follow-ups once the day's budget is spent.
    pub when_reached: WhenReached,
}

impl Budget {
    /// A time zone name as the tz database spells them (`Europe/Berlin`, `UTC`,
    /// `America/Argentina/Buenos_Aires`); whether it exists is for the clock to say.
    pub fn validate_zone(zone: &str) -> Result<String, ValidationError> {
        let ok = !zone.is_empty()
            && zone.len() <= 64
            && !zone.starts_with(['/', '.'])
            && !zone.contains("..")
            && zone
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b));
        if ok {
            Ok(zone.to_owned())
        } else {
            Err(ValidationError::new(
                "timeZone",
                format!("must be a time zone name such as Europe/Berlin or UTC (got {zone:?})"),
            ))
        }
    }
}

/// One calendar day, from its first instant to the next day's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day {
    /// The date, as the zone's calendar has it.
    pub date: time::Date,
    /// When the day begins.
    pub start: crate::stamp::Timestamp,
    /// When it ends (exclusive).
    pub end: crate::stamp::Timestamp,
}

impl Day {
    /// The day holding `at` where clocks are `offset` seconds ahead of UTC.
    pub fn at_offset(at: crate::stamp::Timestamp, offset: i32) -> Day {
        let shift = time::Duration::seconds(i64::from(offset));
        let local = at + shift;
        let midnight = local.replace_time(time::Time::MIDNIGHT);
        let start = midnight - shift;
        Day {
            date: local.date(),
            start,
            end: start + time::Duration::days(1),
        }
    }

    /// Whether `t` is in the day.
    pub fn contains(&self, t: crate::stamp::Timestamp) -> bool {
        self.start <= t && t < self.end
    }
}

/// What the fire decision knows of the store's daily budget.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetView {
    /// The daily budget, in US dollars.
    pub daily_usd: f64,
    /// What the runs started today cost.
    pub spent_today: f64,
    /// The day the budget counts now.
    pub today: Day,
    /// The zone, as the user named it (or `local`).
    pub zone: String,
    /// What happens once it is spent.
    pub when_reached: WhenReached,
}

/// How the reason of an entry waiting for the budget begins.
pub const BUDGET_WAIT: &str = "daily budget: ";

/// The check of the daily budget: `Some(why)` when the follow-up cannot be paid for today.
/// Without an estimate a follow-up is not run under a budget.
pub fn over_budget(b: &BudgetView, view: &CostView) -> Option<String> {
    if b.daily_usd <= 0.0 {
        return None;
    }
    let e = match view {
        CostView::Estimated(e) => e.usd,
        other => return other.no_estimate(),
    };
    (b.spent_today + e > b.daily_usd).then(|| {
        format!(
            "{BUDGET_WAIT}{} spent today of {}, and this follow-up would cost about {}",
            usd(b.spent_today),
            usd(b.daily_usd),
            usd(e)
        )
    })
}

/// A fixed offset from UTC, `+05:30` or `-08:00`, in seconds.
pub fn parse_offset(s: &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 14 && m < 60 && rest.len() == 5).then_some(sign * (h * 3600 + m * 60))
}
