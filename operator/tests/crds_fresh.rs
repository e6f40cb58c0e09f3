//! The committed CRDs under `crds/` (and the chart's copy of them) must be exactly what
//! the Rust types generate.

#[test]
fn committed_crds_match_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/mcpgov.io.yaml");
    let committed = std::fs::read_to_string(path).expect("crds/mcpgov.io.yaml exists");
    let generated = mcpgov::crd::crds_yaml();
    assert!(
        committed == generated,
        "crds/mcpgov.io.yaml is stale: run `cargo run -p mcpgov -- crds > crds/mcpgov.io.yaml`"
    );
}

/// Helm reads only files inside the chart, so the chart carries a copy
/// (`charts/mcpgov/files/crds.yaml`, refreshed by `charts/sync-crds.sh`).
#[test]
fn the_charts_crd_copy_matches_the_types() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../charts/mcpgov/files/crds.yaml"
    );
    let copy = std::fs::read_to_string(path).expect("charts/mcpgov/files/crds.yaml exists");
    assert!(
        copy == mcpgov::crd::crds_yaml(),
        "charts/mcpgov/files/crds.yaml is stale: run `bash charts/sync-crds.sh`"
    );
}

#[test]
fn crds_carry_names_categories_and_columns() {
    let crds = mcpgov::crd::all_crds();
    let names: Vec<_> = crds
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mcpservers.mcpgov.io",
            "agents.mcpgov.io",
            "policies.mcpgov.io",
            "grants.mcpgov.io"
        ]
    );
    for c in &crds {
        assert_eq!(c.spec.scope, "Namespaced");
        assert_eq!(
            c.spec.names.categories.as_deref(),
            Some(&["mcpgov".to_string()][..])
        );
        let v = &c.spec.versions[0];
        assert!(
            v.subresources.as_ref().unwrap().status.is_some(),
            "status subresource"
        );
        assert!(v.additional_printer_columns.as_ref().unwrap().len() >= 4);
    }
    // `kubectl get` columns, then the ones `-o wide` adds (priority 1); none repeated.
    let columns = |priority: i32| -> Vec<Vec<String>> {
        crds.iter()
            .map(|c| {
                c.spec.versions[0]
                    .additional_printer_columns
                    .iter()
                    .flatten()
                    .filter(|col| col.priority.unwrap_or(0) == priority)
                    .map(|col| col.name.clone())
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        columns(0),
        [
            &["URL", "Tools", "Crawled", "Ready", "Age"][..],
            &[
                "Profile",
                "Eligible",
                "Violations",
                "Compliant",
                "Ready",
                "Age"
            ],
            &["Effect", "Violations", "Orphan", "Age"],
            &["Agent", "Tools", "Resolved", "Age"],
        ]
    );
    assert_eq!(
        columns(1),
        [
            &["Transport", "Last Crawl", "Crawl Reason", "Digest"][..],
            &["Exceptions", "Bundle", "Revision", "SHA256"],
            &["Reached By", "Description"],
            &["Exceptions For", "Unresolved"],
        ]
    );
    let crawled = &crds[0].spec.versions[0]
        .additional_printer_columns
        .as_ref()
        .unwrap()[2];
    assert_eq!(
        crawled.json_path,
        r#".status.conditions[?(@.type=="Crawled")].status"#
    );
    let shorts: Vec<_> = crds
        .iter()
        .flat_map(|c| c.spec.names.short_names.clone().unwrap_or_default())
        .collect();
    for s in ["mcps", "mcpserver", "mcpagent", "mcppolicy", "mcpgrant"] {
        assert!(shorts.iter().any(|x| x == s), "short name {s}");
    }
}

#[test]
fn committed_crd_reference_matches_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/crd-reference.md");
    let committed = std::fs::read_to_string(path).expect("docs/crd-reference.md exists");
    assert!(
        committed == mcpgov::crd::reference::markdown(),
        "docs/crd-reference.md is stale: run `cargo run -p mcpgov -- crds --reference > docs/crd-reference.md`"
    );
}

/// Every property `kubectl explain` can show (spec and status, nested and list item types,
/// enums, the standard conditions) in each CRD's schema, with its path.
fn properties(path: &str, s: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    if let Some(items) = s.get("items") {
        properties(&format!("{path}[]"), items, out);
    }
    if let Some(props) = s.get("properties").and_then(|p| p.as_object()) {
        for (k, v) in props {
            let p = format!("{path}.{k}");
            out.push((p.clone(), v.clone()));
            properties(&p, v, out);
        }
    }
}

#[test]
fn every_schema_property_has_a_description() {
    let mut missing = Vec::new();
    let mut total = 0;
    for crd in mcpgov::crd::all_crds() {
        let kind = crd.spec.names.kind.clone();
        for v in &crd.spec.versions {
            let schema = serde_json::to_value(&v.schema).unwrap();
            let root = &schema["openAPIV3Schema"];
            let mut props = Vec::new();
            properties(&kind.to_lowercase(), root, &mut props);
            for (path, p) in props {
                total += 1;
                let described = p
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| !d.trim().is_empty());
                if !described {
                    missing.push(path);
                }
            }
        }
    }
    assert!(total > 100, "walked {total} properties");
    assert!(
        missing.is_empty(),
        "{} of {total} schema properties have no description (add a `///` doc comment):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}
