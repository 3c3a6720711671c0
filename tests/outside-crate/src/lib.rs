//! A team's crate kept outside the hooks-app workspace, built as `docs/adapters.md` says.
//! Its tests expand the store contract and use the mocks through the documented
//! dev-dependency only, so a change that would break a team's set-up breaks CI first.

/// What this crate adds: nothing but the check that it builds (its tests are the point).
pub const WHAT: &str = "a team's crate, outside the workspace";
