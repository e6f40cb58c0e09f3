//! The report objects, written from the two APIs' Go types (`wgpolicyk8s.io/v1alpha2`
//! PolicyReport of kubernetes-sigs/wg-policy-prototypes, `openreports.io/v1alpha1`
//! Report of openreports/reports-api). Both share one result shape; OpenReports adds a
//! report-level `source` and `configuration`, which a PolicyReport must not carry (its
//! schema has no such fields, and a strict server-side apply rejects unknown ones).

use super::rules::{Outcome, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which API the reports are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport: what Kyverno and Policy Reporter read.
    PolicyReport,
    /// `openreports.io/v1alpha1` Report: the successor API.
    OpenReports,
}

impl Api {
    pub fn api_version(self) -> &'static str {
        match self {
            Api::PolicyReport => "wgpolicyk8s.io/v1alpha2",
            Api::OpenReports => "openreports.io/v1alpha1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Api::PolicyReport => "PolicyReport",
            Api::OpenReports => "Report",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            Api::PolicyReport => "wgpolicyk8s.io",
            Api::OpenReports => "openreports.io",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Api::PolicyReport => "v1alpha2",
            Api::OpenReports => "v1alpha1",
        }
    }

    /// The resource's plural, as RBAC and the API path name it.
    pub fn plural(self) -> &'static str {
        match self {
            Api::PolicyReport => "policyreports",
            Api::OpenReports => "reports",
        }
    }

    /// The resource, for the dynamic client.
    pub fn resource(self) -> kube::core::ApiResource {
        kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(self.group(), self.version(), self.kind()),
            self.plural(),
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    /// OpenReports only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub scope: ObjectReference,
    /// OpenReports only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<Configuration>,
    pub summary: ReportSummary,
    #[serde(default)]
    pub results: Vec<ReportResult>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub name: String,
    pub namespace: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A `core/v1` ObjectReference, with the fields a report uses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// OpenReports' contract between a report's writer and its readers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    pub limits: Limits,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_results: usize,
}

/// Counts of results by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportSummary {
    pub pass: usize,
    pub fail: usize,
    pub warn: usize,
    pub error: usize,
    pub skip: usize,
}

impl ReportSummary {
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Warn => self.warn += 1,
            Outcome::Error => self.error += 1,
            Outcome::Skip => self.skip += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.pass + self.fail + self.warn + self.error + self.skip
    }
}

/// A `meta/v1` Timestamp: whole seconds and nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timestamp {
    pub seconds: i64,
    pub nanos: i32,
}

impl From<jiff::Timestamp> for Timestamp {
    fn from(t: jiff::Timestamp) -> Self {
        // jiff truncates towards zero; meta/v1 wants nanos in [0, 1e9) before 1970 too.
        let (seconds, nanos) = (t.as_second(), t.subsec_nanosecond());
        if nanos < 0 {
            Timestamp {
                seconds: seconds - 1,
                nanos: nanos + 1_000_000_000,
            }
        } else {
            Timestamp { seconds, nanos }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportResult {
    pub source: String,
    /// The mcpgov Policy (`namespace/name`), or `mcpgov` for checks no Policy owns.
    pub policy: String,
    pub rule: String,
    pub category: String,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    pub result: Outcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ObjectReference>,
    pub message: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

/// A `v1` List of reports, as `kubectl apply -f` takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct List {
    pub api_version: String,
    pub kind: String,
    pub items: Vec<Report>,
}

impl List {
    pub fn of(items: Vec<Report>) -> Self {
        List {
            api_version: "v1".to_string(),
            kind: "List".to_string(),
            items,
        }
    }
}
