//! `--policy-reports`: the operator writes each namespace's findings as a PolicyReport
//! (wgpolicyk8s.io/v1alpha2) or an OpenReports Report (openreports.io/v1alpha1), with the
//! real CRDs (fetched by e2e/report-crds.sh from the Go modules that ship them).
//!
//! Each test owns its API's CRD (the two run in parallel; no other test uses them): it
//! removes the CRD, starts the operator without it (the metric says so, the operator
//! keeps working), installs it (the report appears on the next resync), then checks that
//! a violation is a `fail`, that an exception turns it into a `skip`, that a resync
//! writes nothing when nothing changed, and that a namespace without findings loses its
//! report.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use mcpgov::crd::Agent;
use mcpgov::reports::{Api as ReportApi, Report};
use mcpgov_e2e::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const WRITTEN: (&str, &str) = ("mcpgov_policy_report_writes_total", "result=\"written\"");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The directory e2e/report-crds.sh fetched the CRDs into.
fn crd_dir() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("e2e/report-crds.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run e2e/report-crds.sh");
    assert!(out.status.success(), "e2e/report-crds.sh failed");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the command runs")
}

fn kubectl(args: &[&str]) -> String {
    let out = run(Command::new("kubectl").args(args));
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn kubectl_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn mcpgov(args: &[&str]) -> Output {
    run(Command::new(mcpgov_bin()).args(args).current_dir(repo()))
}

fn crd_name(api: ReportApi) -> String {
    format!("{}.{}", api.plural(), api.group())
}

fn crd_file(api: ReportApi) -> PathBuf {
    crd_dir().join(match api {
        ReportApi::PolicyReport => "policyreport.yaml",
        ReportApi::OpenReports => "openreports.yaml",
    })
}

fn resource(api: ReportApi) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(api.group(), api.version(), api.kind()),
        api.plural(),
    )
}

fn flag(api: ReportApi) -> &'static str {
    match api {
        ReportApi::PolicyReport => "policyreport",
        ReportApi::OpenReports => "openreports",
    }
}

/// The report `mcpgov` in `ns`, if any (404 both when absent and when the API is not
/// served).
async fn report(reports: &Api<DynamicObject>) -> Option<(String, Report)> {
    let obj = reports.get_opt("mcpgov").await.ok()??;
    let rv = obj.metadata.resource_version.clone().unwrap();
    let report: Report = serde_json::from_value(serde_json::to_value(&obj).unwrap()).unwrap();
    Some((rv, report))
}

async fn wait_report(
    reports: &Api<DynamicObject>,
    what: &str,
    pred: impl Fn(Option<&Report>) -> bool,
) -> Option<(String, Report)> {
    let start = Instant::now();
    loop {
        let r = report(reports).await;
        if pred(r.as_ref().map(|(_, r)| r)) {
            return r;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the report never showed {what}; last: {r:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn quickstart(file: &str, ns: &str) -> String {
    std::fs::read_to_string(repo().join("examples/quickstart").join(file))
        .unwrap()
        .replace("namespace: quickstart", &format!("namespace: {ns}"))
}

async fn reports_end_to_end(api: ReportApi) {
    let client = client().await;
    let ns = namespace(&client, &format!("reports-{}", flag(api))).await;
    let crd = crd_name(api);
    let crd_path = crd_file(api);

    // The example, in this test's namespace: applied, and printed offline by the CLI.
    let dir = std::env::temp_dir().join(&ns);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["governance.yaml", "catalog.yaml"] {
        std::fs::write(dir.join(file), quickstart(file, &ns)).unwrap();
    }
    let printed = mcpgov(&["check", "-f", dir.to_str().unwrap(), "-o", flag(api)]);
    assert!(printed.status.success());
    let printed: serde_json::Value = serde_saphyr::from_slice(&printed.stdout).unwrap();
    let mut printed: Report = serde_json::from_value(printed["items"][0].clone()).unwrap();
    for r in &mut printed.results {
        r.timestamp = None;
    }

    // No CRD: the operator says so and keeps working.
    kubectl(&[
        "delete",
        "crd",
        &crd,
        "--ignore-not-found",
        "--wait=true",
        "--timeout=60s",
    ]);
    kubectl_stdin(
        &["apply", "--server-side", "-f", "-"],
        quickstart("governance.yaml", &ns).as_bytes(),
    );
    let op = Operator::start_with(
        &ns,
        2,
        &["--crawl-concurrency", "0", "--policy-reports", flag(api)],
    )
    .await;
    let catalog = dir.join("catalog.yaml");
    let out = mcpgov(&["catalog", "apply", "--catalog", catalog.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    wait_for(&agents, "vibe-coder", "its violation", |a| {
        a.status.as_ref().and_then(|s| s.violations) == Some(1)
    })
    .await;
    let available = "mcpgov_policy_reports_available";
    let resyncs = "mcpgov_agent_evaluations_total";
    let resync = ["trigger=\"resync\""];
    let seen = op.metric(resyncs, &resync).await;
    op.wait_metric(resyncs, &resync, seen + 1.0).await;
    assert_eq!(op.metric(available, &[]).await, 0.0, "the CRD is missing");
    let log = std::fs::read_to_string(log_path(&ns)).unwrap();
    assert_eq!(
        log.matches("the reports API is not served").count(),
        1,
        "said once, not on every pass:\n{log}"
    );
    assert_eq!(
        op.metric("mcpgov_policy_report_writes_total", &["result=\"error\""])
            .await,
        0.0,
        "no write is tried without the API"
    );

    // The CRD arrives: the report follows on a resync, with no restart.
    kubectl(&["apply", "--server-side", "-f", crd_path.to_str().unwrap()]);
    kubectl(&[
        "wait",
        "--for=condition=established",
        "--timeout=60s",
        &format!("crd/{crd}"),
    ]);
    // What the CLI prints, the real CRD takes field for field.
    let yaml = serde_saphyr::to_string(&printed).unwrap();
    let dry = kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            "-",
        ],
        yaml.as_bytes(),
    );
    assert!(
        dry.status.success(),
        "the printed report is refused: {}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource(api));
    let (_, r) = wait_report(&reports, "the violation", |r| r.is_some())
        .await
        .unwrap();
    op.wait_metric(available, &[], 1.0).await;
    // The operator writes what `mcpgov check -o` prints (without the evaluation instant).
    assert_eq!(r, printed);
    assert_eq!(r.api_version, api.api_version());
    assert_eq!(r.kind, api.kind());
    assert_eq!(r.metadata.labels["app.kubernetes.io/managed-by"], "mcpgov");
    assert_eq!((r.summary.fail, r.summary.warn, r.summary.skip), (1, 0, 0));
    assert_eq!(r.results.len(), 1);
    let result = &r.results[0];
    assert_eq!(serde_json::to_value(result.result).unwrap(), "fail");
    assert_eq!(result.rule, "deny-violation");
    assert_eq!(result.policy, format!("{ns}/drafts-deny"));
    assert_eq!(result.source, "mcpgov");
    assert_eq!(result.properties["reason"], "DenyViolation");
    assert_eq!(
        (
            result.resources[0].kind.as_str(),
            result.resources[0].name.as_str()
        ),
        ("Agent", "vibe-coder")
    );
    assert_eq!(
        r.source.as_deref(),
        (api == ReportApi::OpenReports).then_some("mcpgov")
    );

    // Resyncs with nothing changed write nothing.
    let (rv, _) = report(&reports).await.unwrap();
    let writes = op.metric(WRITTEN.0, &[WRITTEN.1]).await;
    let seen = op.metric(resyncs, &resync).await;
    op.wait_metric(resyncs, &resync, seen + 2.0).await;
    // The pass after the tick has finished once the next tick is counted.
    assert_eq!(
        op.metric(WRITTEN.0, &[WRITTEN.1]).await,
        writes,
        "a resync rewrote an unchanged report"
    );
    assert_eq!(report(&reports).await.unwrap().0, rv);

    // The Grant declares the reach intended: the fail becomes a skip.
    let grants: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("mcpgov.io", "v1alpha1", "Grant")),
    );
    let patch = serde_json::json!({
        "apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
        "spec": {"expectedExceptions": [{"policy": "drafts-deny", "reason": "drafts are reviewed by hand"}]}
    });
    grants
        .patch(
            "vibe-coder-notes",
            &PatchParams::apply("e2e-exception"),
            &Patch::Apply(&patch),
        )
        .await
        .unwrap();
    let (_, r) = wait_report(&reports, "the exception", |r| {
        r.is_some_and(|r| r.summary.skip == 1)
    })
    .await
    .unwrap();
    assert_eq!((r.summary.fail, r.summary.warn, r.summary.skip), (0, 0, 1));
    let result = &r.results[0];
    assert_eq!(serde_json::to_value(result.result).unwrap(), "skip");
    assert_eq!(result.rule, "expected-exception");
    assert_eq!(
        result.properties["exceptionReason"],
        "drafts are reviewed by hand"
    );

    // No Grant, no finding: the namespace loses its report.
    delete(
        &client,
        &ns,
        ("mcpgov.io/v1alpha1", "Grant"),
        "vibe-coder-notes",
    )
    .await;
    wait_report(&reports, "its removal", |r| r.is_none()).await;
    op.wait_metric(
        "mcpgov_policy_report_writes_total",
        &["result=\"deleted\""],
        1.0,
    )
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn policyreports_follow_findings_and_the_crd() {
    reports_end_to_end(ReportApi::PolicyReport).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn openreports_follow_findings_and_the_crd() {
    reports_end_to_end(ReportApi::OpenReports).await;
}
