//! The Claude Code releases this build was tested against, and where a found one stands.

/// The Claude Code versions this build is tested against: the oldest supported and the
/// newest pinned (the suite runs against both).
pub const TESTED_CLAUDE: (&str, &str) = ("2.1.197", "2.1.332");

/// Whether `version` (as `claude --version` prints it) is inside [`TESTED_CLAUDE`].
pub fn tested_range(version: &str) -> String {
    let parse = |v: &str| -> Option<Vec<u32>> {
        v.split_whitespace()
            .next()?
            .split('.')
            .map(|x| x.parse().ok())
            .collect()
    };
    let (lo, hi) = TESTED_CLAUDE;
    match (parse(version), parse(lo), parse(hi)) {
        (Some(v), Some(l), Some(h)) if v >= l && v <= h => {
            format!("inside the tested range {lo} to {hi}")
        }
        (Some(v), Some(l), _) if v < l => {
            format!("older than the oldest tested, {lo}: update Claude Code (claude update)")
        }
        (Some(_), _, _) => {
            format!("newer than the newest tested, {hi}: it usually works; report what does not")
        }
        _ => format!("a version this build cannot read (tested: {lo} to {hi})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_placed_against_the_tested_range() {
        assert!(tested_range("2.1.300 (Claude Code)").starts_with("inside"));
        assert!(tested_range("2.1.197").starts_with("inside"));
        assert!(tested_range("2.0.9").starts_with("older"));
        assert!(tested_range("2.2.0").starts_with("newer"));
        assert!(tested_range("nightly").starts_with("a version this build cannot read"));
    }
}
