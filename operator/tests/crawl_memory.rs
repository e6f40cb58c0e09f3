//! The crawler's memory arithmetic (docs/crawler.md) against the Helm chart: with every
//! crawl the chart's default concurrency allows running at the CRD's maximum caps, plus
//! what the operator holds besides crawling, the pod stays under its memory limit.

use mcpgov::crawler::crawl_memory_bound;
use serde_json::Value;

/// What the operator holds besides crawling: 2.5 times the idle operator of the e2e suite
/// (65 MiB), room for the engine, caches and status writes of a sizeable estate.
const OTHER_MIB: usize = 160;
const MIB: usize = 1 << 20;

/// `resources.limits.memory` (in Mi) and `crawler.concurrency` from the chart's values.
fn chart_values() -> (usize, usize) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/mcpgov/values.yaml");
    let v: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let limit = v["resources"]["limits"]["memory"].as_str().unwrap();
    let limit = limit
        .strip_suffix("Mi")
        .expect("the limit is in Mi")
        .parse()
        .unwrap();
    let concurrency = v["crawler"]["concurrency"].as_u64().unwrap() as usize;
    (limit, concurrency)
}

/// `spec.crawl.<field>`'s default and maximum in the MCPServer CRD.
fn crawl_cap(field: &str) -> (usize, usize) {
    let crd = serde_json::to_value(&mcpgov::crd::all_crds()[0]).unwrap();
    let p = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["crawl"]["properties"][field];
    (
        p["default"].as_u64().unwrap() as usize,
        p["maximum"].as_f64().unwrap() as usize,
    )
}

#[test]
fn crawling_at_the_maxima_fits_the_charts_memory_limit() {
    let (limit_mib, concurrency) = chart_values();
    let (default_bytes, max_bytes) = crawl_cap("maxBytes");
    let (default_tools, max_tools) = crawl_cap("maxTools");
    let at_max = concurrency * crawl_memory_bound(max_bytes, max_tools);
    let at_default = concurrency * crawl_memory_bound(default_bytes, default_tools);
    println!(
        "{concurrency} crawls: {} MiB at the maxima ({max_bytes} bytes, {max_tools} tools), \
         {} MiB at the defaults; limit {limit_mib} MiB, {OTHER_MIB} MiB for the rest",
        at_max / MIB,
        at_default / MIB
    );
    // A margin of a tenth of the limit, on top.
    assert!(
        at_max + OTHER_MIB * MIB <= limit_mib * MIB * 9 / 10,
        "{} MiB of crawling at the maxima does not fit {limit_mib} MiB",
        at_max / MIB
    );
    assert!(at_default < at_max);
}
