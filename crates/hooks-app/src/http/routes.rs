//! The routes the server knows: a path's segments and the methods each path takes.

pub fn segments(path: &str) -> Vec<&str> {
    path.trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect()
}

/// The methods a known path takes (none for an unknown path).
pub fn allowed(seg: &[&str]) -> Vec<&'static str> {
    match seg {
        [] | ["metrics"] | ["login"] => vec!["GET"],
        ["logout"] => vec!["POST"],
        [
            "api",
            "v1",
            "healthz" | "openapi.json" | "pending" | "runs" | "version",
        ] => vec!["GET"],
        ["api", "v1", "hooks"] => vec!["GET", "POST"],
        ["api", "v1", "hooks", _] => vec!["GET", "PATCH", "DELETE"],
        ["api", "v1", "hooks", _, "enable" | "disable" | "run"] => vec!["POST"],
        ["api", "v1", "sessions", _] => vec!["GET"],
        ["api", "v1", "events"] => vec!["POST"],
        ["api", "v1", "pause"] => vec!["GET", "PUT", "DELETE"],
        _ => Vec::new(),
    }
}

/// The hand-kept OpenAPI document checked against the code it describes: its paths and
/// methods against the router's, its schemas against the `--json` shapes and the fields a
/// hook takes. A route, a method or a field added without its description fails here.
#[cfg(test)]
mod openapi_tests {
    use std::collections::BTreeSet;

    use hooks_core::stamp::parse;
    use hooks_core::*;
    use serde_json::Value;

    use super::{allowed, segments};
    use crate::http::fields::HOOK_FIELDS;

    fn doc() -> Value {
        serde_json::from_str(crate::http::page::OPENAPI).expect("the document is JSON")
    }

    fn properties(schema: &str) -> BTreeSet<String> {
        doc()["components"]["schemas"][schema]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {schema} has properties"))
            .keys()
            .cloned()
            .collect()
    }

    /// The keys a shape prints, every optional one included.
    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().expect("an object").keys().cloned().collect()
    }

    fn undocumented(schema: &str, v: &Value) -> Vec<String> {
        keys(v).difference(&properties(schema)).cloned().collect()
    }

    #[test]
    fn every_documented_path_has_exactly_the_routers_methods_and_back() {
        let d = doc();
        let paths = d["paths"].as_object().unwrap();
        for (path, item) in paths {
            let mut doc_methods: Vec<String> = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|m| ["get", "post", "put", "patch", "delete"].contains(&m.as_str()))
                .map(|m| m.to_uppercase())
                .collect();
            doc_methods.sort();
            let concrete = path.replace("{id}", "x");
            let mut served: Vec<String> = allowed(&segments(&concrete))
                .into_iter()
                .map(str::to_owned)
                .collect();
            served.sort();
            assert_eq!(doc_methods, served, "{path}");
        }
        // Every route of the API the router serves is documented.
        for sample in [
            "/api/v1/healthz",
            "/api/v1/openapi.json",
            "/api/v1/pending",
            "/api/v1/runs",
            "/api/v1/version",
            "/api/v1/hooks",
            "/api/v1/hooks/x",
            "/api/v1/hooks/x/enable",
            "/api/v1/hooks/x/disable",
            "/api/v1/hooks/x/run",
            "/api/v1/sessions/x",
            "/api/v1/events",
            "/api/v1/pause",
            "/metrics",
        ] {
            assert!(!allowed(&segments(sample)).is_empty(), "{sample} is routed");
            let templated = sample.replace("/x", "/{id}");
            assert!(paths.contains_key(&templated), "{templated} is documented");
        }
    }

    #[test]
    fn the_schemas_hold_every_field_the_shapes_print_and_a_hook_takes() {
        let t = |s: &str| parse(s).unwrap();
        let mut spec = HookSpec::continue_after_limit();
        spec.max_cost = CostCap::from_usd(0.5).unwrap();
        spec.max_lateness = MaxLateness::from_seconds(3600).unwrap();
        let mut hook = spec.into_hook(continue_after_limit_id(), t("2026-12-01T00:00:00+0000"));
        hook.last_status = Some(Status::Ok);
        assert_eq!(
            undocumented("Hook", &crate::shapes::hook(&hook)),
            Vec::<String>::new()
        );
        let entry = PendingEntry {
            hook_id: continue_after_limit_id(),
            session_id: SessionId::parse("s1").unwrap(),
            due_at: DueAt::At(t("2026-12-01T01:00:00+0000")),
            queued_at: Some(t("2026-12-01T00:00:00+0000")),
            retries: 1,
            claim: Some(Claim {
                owner: "me".into(),
                expires_at: t("2026-12-01T02:00:00+0000"),
            }),
            waiting: Some(Waiting {
                reason: "conversation open in claude".into(),
                since: t("2026-12-01T00:30:00+0000"),
                open: true,
            }),
            error: Some(FailureKind::RateLimit),
        };
        assert_eq!(
            undocumented("Pending", &crate::shapes::pending(&entry)),
            Vec::<String>::new()
        );
        let run = RunRecord {
            run_id: Some("me#1".into()),
            hook_id: post_task_id(),
            session_id: SessionId::parse("s1").unwrap(),
            owner: Some("me".into()),
            process: Some(ProcessRef { pid: 42, start: 7 }),
            started_at: t("2026-12-01T00:00:00+0000"),
            finished_at: Some(t("2026-12-01T00:01:00+0000")),
            outcome: RunOutcome {
                status: Some(Status::Ok),
                exit_code: Some(0),
                completed: Some(true),
                num_turns: Some(1),
                cost_usd: Some(0.01),
                usage: Some(Usage::default()),
                duration_ms: Some(900),
                session_id: Some("s1".into()),
                result_text: Some("COMPLETED".into()),
                api_error_status: None,
            },
            estimated_cost_usd: Some(0.02),
            model: Some("claude-x".into()),
        };
        assert_eq!(
            undocumented("Run", &crate::shapes::run(&run)),
            Vec::<String>::new()
        );
        let pause = Pause {
            since: t("2026-12-01T00:00:00+0000"),
            until: Some(t("2026-12-01T01:00:00+0000")),
            by: "me@here".into(),
        };
        assert_eq!(
            undocumented("Pause", &crate::shapes::pause(Some(&pause))),
            Vec::<String>::new()
        );
        // What a hook takes, in the API and in the document alike.
        let fields: BTreeSet<String> = HOOK_FIELDS.iter().map(|f| (*f).to_owned()).collect();
        assert_eq!(properties("HookSpec"), fields);
        assert_eq!(properties("HookPatch"), fields);
    }
}
