//! The committed CRDs under `crds/` must be exactly what the Rust types generate.

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
