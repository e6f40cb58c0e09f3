//! Reading the estate from the live cluster (`--live`, or by default under `kubectl
//! mcpgov`): kubeconfig, context and namespace as kubectl takes them, the caller's own
//! credentials (never the operator's), every list paged and bounded. A namespace the
//! caller may not list is an error that names it, never a silent gap in the answer.

use super::Failure;
use crate::crd::common::{GROUP, VERSION};
use crate::crd::{Agent, Grant, MCPServer, Policy};
use crate::manifest::{Loaded, Resource, parse_size};
use crate::text;
use crate::validate::is_dns1123_label;
use clap::Args;
use http_body_util::BodyExt;
use kube::api::{GetParams, ListParams};
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// How to reach the cluster, as kubectl's flags of the same names.
#[derive(Args, Clone, Debug, Default)]
pub struct LiveArgs {
    /// Read the live cluster instead of manifest files (the default under `kubectl
    /// mcpgov` when no -f is given).
    #[arg(long)]
    pub live: bool,
    /// Path of the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then the
    /// in-cluster service account).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Read every namespace (needs cluster-wide list rights).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Act as this user (impersonation; needs the `impersonate` verb).
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// Act as this group (repeatable; with --as).
    #[arg(long = "as-group", value_name = "GROUP", requires = "as_user")]
    pub as_group: Vec<String>,
    /// Give up on any one API request after this long (`30s`, `2m`, or seconds).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Refuse an estate of more objects than this (all four kinds together).
    #[arg(long, default_value_t = 100_000, env = "MCPGOV_MAX_OBJECTS")]
    pub max_objects: usize,
    /// Refuse any single API response larger than this: bytes, or with Ki, Mi or Gi.
    #[arg(long, default_value = "64Mi", value_parser = parse_size)]
    pub max_response_size: u64,
}

fn parse_duration(raw: &str) -> Result<Duration, String> {
    let (n, unit) = match raw.strip_suffix("ms") {
        Some(n) => (n, 1),
        None => match raw.strip_suffix('m') {
            Some(n) => (n, 60_000),
            None => (raw.strip_suffix('s').unwrap_or(raw), 1000),
        },
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{raw:?}: expected e.g. 30s, 2m or 500ms"))?;
    match n.checked_mul(unit) {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!("{raw:?}: out of range")),
    }
}

/// Objects per list page: small enough that one page stays well under the response
/// bound even with large catalogs in MCPServer status.
const PAGE: u32 = 100;
/// An error body is a `Status`: a few hundred bytes. Anything longer is cut.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Pages one list may take. The API server fills every page but the last, so an
/// estate within `max_objects` needs `max_objects / PAGE + 1`; the slack allows short
/// pages, and the cap stops a server that hands out continue tokens forever.
fn max_pages(max_objects: usize) -> usize {
    (max_objects / PAGE as usize + 1) * 4 + 16
}

/// The four kinds: kind, plural.
pub const KINDS: [(&str, &str); 4] = [
    ("MCPServer", "mcpservers"),
    ("Agent", "agents"),
    ("Policy", "policies"),
    ("Grant", "grants"),
];

/// A connected client and the namespace its context names (kubectl's default).
pub struct Cluster {
    pub client: Client,
    pub default_namespace: String,
    args: LiveArgs,
}

/// Why a request failed.
#[derive(Debug)]
pub enum ApiError {
    /// 403: the caller's rights do not allow it.
    Forbidden(String),
    NotFound,
    Other(String),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Forbidden(m) => write!(f, "forbidden: {}", text::escape(m)),
            ApiError::NotFound => f.write_str("not found"),
            ApiError::Other(m) => f.write_str(&text::escape(m)),
        }
    }
}

impl LiveArgs {
    pub async fn connect(&self) -> Result<Cluster, Failure> {
        let bad = |e: &dyn std::fmt::Display| Failure::Input(format!("kubeconfig: {e}"));
        let options = KubeConfigOptions {
            context: self.context.clone(),
            cluster: None,
            user: None,
        };
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(|e| bad(&e))?;
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|e| bad(&e))?
            }
            None if self.context.is_some() => Config::from_kubeconfig(&options)
                .await
                .map_err(|e| bad(&e))?,
            None => Config::infer().await.map_err(|e| bad(&e))?,
        };
        if let Some(user) = &self.as_user {
            config.auth_info.impersonate = Some(user.clone());
            config.auth_info.impersonate_groups =
                (!self.as_group.is_empty()).then(|| self.as_group.clone());
        }
        config.read_timeout = Some(self.request_timeout);
        config.connect_timeout = Some(self.request_timeout);
        let default_namespace = config.default_namespace.clone();
        let client = Client::try_from(config).map_err(|e| bad(&e))?;
        Ok(Cluster {
            client,
            default_namespace,
            args: self.clone(),
        })
    }
}

/// What a live read produced.
pub struct LiveRead {
    pub objects: Vec<Loaded>,
    /// Namespaces read, for the note on stderr.
    pub namespaces: BTreeSet<String>,
}

/// The list path of one kind, in one namespace or all.
fn list_path(plural: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("/apis/{GROUP}/{VERSION}/namespaces/{ns}/{plural}"),
        None => format!("/apis/{GROUP}/{VERSION}/{plural}"),
    }
}

/// The plural of a kind, as kubectl names it and as messages say it.
pub fn plural(kind: &str) -> &'static str {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .expect("one of our kinds")
        .1
}

fn scope_name(ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("namespace {ns}"),
        None => "all namespaces".to_string(),
    }
}

impl Cluster {
    /// One GET, its body read up to the response bound; 4xx/5xx as `ApiError`.
    async fn send(&self, req: http::Request<Vec<u8>>) -> Result<Value, ApiError> {
        let max = usize::try_from(self.args.max_response_size).unwrap_or(usize::MAX);
        let timeout = self.args.request_timeout;
        let work = async {
            let res = self
                .client
                .send(req.map(Body::from))
                .await
                .map_err(|e| ApiError::Other(e.to_string()))?;
            let status = res.status();
            let body = res.into_body();
            if !status.is_success() {
                let bytes = http_body_util::Limited::new(body, MAX_ERROR_BODY)
                    .collect()
                    .await
                    .map(|c| c.to_bytes())
                    .unwrap_or_default();
                let message = serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("message").and_then(Value::as_str).map(String::from))
                    .unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
                return Err(match status.as_u16() {
                    // Not a question of rights: the credentials themselves were refused.
                    401 => ApiError::Other(format!(
                        "unauthorized: the API server did not accept the kubeconfig's \
                         credentials ({message})"
                    )),
                    403 => ApiError::Forbidden(message),
                    404 => ApiError::NotFound,
                    _ => ApiError::Other(message),
                });
            }
            let bytes = http_body_util::Limited::new(body, max)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        ApiError::Other(format!(
                            "response larger than --max-response-size ({})",
                            crate::manifest::describe_size(max as u64)
                        ))
                    } else {
                        ApiError::Other(e.to_string())
                    }
                })?
                .to_bytes();
            serde_json::from_slice(&bytes).map_err(|e| ApiError::Other(format!("not JSON: {e}")))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| ApiError::Other(format!("no answer within {timeout:?}")))?
    }

    /// Every object of one kind in `ns` (or all namespaces), page by page, counting
    /// against `budget` (the objects still allowed). Objects that do not decode are
    /// described in `skipped` (the operator skips them too).
    pub async fn list(
        &self,
        kind: &str,
        ns: Option<&str>,
        budget: &mut usize,
        skipped: &mut Vec<String>,
    ) -> Result<Vec<Loaded>, ApiError> {
        let req = kube::core::Request::new(list_path(plural(kind), ns));
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..max_pages(self.args.max_objects) {
            let mut lp = ListParams::default().limit(PAGE);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = req.list(&lp).map_err(|e| ApiError::Other(e.to_string()))?;
            let mut page = self.send(page).await?;
            let items = match page.get_mut("items").map(Value::take) {
                Some(Value::Array(items)) => items,
                Some(Value::Null) | None => Vec::new(),
                Some(_) => return Err(ApiError::Other("list items is not an array".into())),
            };
            if items.len() > *budget {
                return Err(ApiError::Other(format!(
                    "more than --max-objects ({}) objects; refusing",
                    self.args.max_objects
                )));
            }
            *budget -= items.len();
            for item in items {
                match decode(kind, item) {
                    Ok(l) => out.push(l),
                    Err(m) => skipped.push(m),
                }
            }
            token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(String::from);
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(ApiError::Other(format!(
            "the list did not end within {} pages; refusing",
            max_pages(self.args.max_objects)
        )))
    }

    /// One ConfigMap, or `None` when it does not exist.
    pub async fn config_map(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<k8s_openapi::api::core::v1::ConfigMap>, ApiError> {
        let req = kube::core::Request::new(format!("/api/v1/namespaces/{ns}/configmaps"))
            .get(name, &GetParams::default())
            .map_err(|e| ApiError::Other(e.to_string()))?;
        match self.send(req).await {
            Ok(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| ApiError::Other(format!("not a ConfigMap: {e}"))),
            Err(ApiError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The estate the answers need. With `-A`: every namespace. Otherwise the
    /// `primary` namespaces whole (the one asked about, and any a what-if overlay
    /// names), plus what decides their agents' tools elsewhere: the Policies of the
    /// governance namespace, the MCPServers (and their namespaces' Policies) that
    /// other namespaces share with them or that their Grants name literally.
    pub async fn read_estate(
        &self,
        primary: &BTreeSet<String>,
        governance: &str,
    ) -> Result<LiveRead, Failure> {
        let mut budget = self.args.max_objects;
        let mut skipped = Vec::new();
        let mut objects = Vec::new();
        let mut denied = Vec::new();
        let mut namespaces = BTreeSet::new();
        let fail = |kind: &str, ns: Option<&str>, e: ApiError| -> Failure {
            Failure::Input(format!(
                "cannot list {} in {}: {e}",
                plural(kind),
                scope_name(ns)
            ))
        };
        if self.args.all_namespaces {
            for (kind, _) in KINDS {
                objects.extend(
                    self.list(kind, None, &mut budget, &mut skipped)
                        .await
                        .map_err(|e| match e {
                            ApiError::Forbidden(m) => Failure::Input(format!(
                                "cannot list {} in all namespaces: forbidden: {}\n\
                                 (-A needs cluster-wide list rights; use -n NAMESPACE)",
                                plural(kind),
                                text::escape(&m)
                            )),
                            e => fail(kind, None, e),
                        })?,
                );
            }
            namespaces.insert("*".to_string());
            report_skipped(&skipped);
            return Ok(LiveRead {
                objects,
                namespaces,
            });
        }
        for ns in primary {
            for (kind, _) in KINDS {
                match self.list(kind, Some(ns), &mut budget, &mut skipped).await {
                    Ok(l) => objects.extend(l),
                    Err(ApiError::Forbidden(m)) => denied.push((kind, ns.clone(), m)),
                    Err(e) => return Err(fail(kind, Some(ns), e)),
                }
            }
            namespaces.insert(ns.clone());
        }
        refuse(&denied)?;
        // Namespaces whose MCPServers and Policies the primary ones depend on.
        let mut secondary: BTreeSet<String> = BTreeSet::from([governance.to_string()]);
        for l in &objects {
            if let Resource::Grant(g) = &l.resource {
                secondary.extend(named_namespaces(&g.to_engine("")));
            }
        }
        // Servers shared into a primary namespace can sit anywhere: only a
        // cluster-wide list finds them. Without that right, say what is not seen.
        let mut servers_everywhere = false;
        match self
            .list("MCPServer", None, &mut budget, &mut skipped)
            .await
        {
            Ok(all) => {
                servers_everywhere = true;
                for l in all {
                    let Resource::MCPServer(s) = &l.resource else {
                        continue;
                    };
                    let ns = s.metadata.namespace.clone().unwrap_or_default();
                    if primary.contains(&ns) {
                        continue;
                    }
                    let sharing = s.to_engine("").sharing;
                    if primary.iter().any(|p| sharing.allows(p)) {
                        secondary.insert(ns);
                        objects.push(l);
                    } else if secondary.contains(&ns) {
                        objects.push(l);
                    }
                }
            }
            Err(ApiError::Forbidden(_)) => eprintln!(
                "note: cannot list MCPServers in all namespaces: servers other namespaces \
                 share with {} by bare name or glob are not seen (use -A with the rights)",
                primary.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            Err(e) => return Err(fail("MCPServer", None, e)),
        }
        for ns in secondary.difference(primary) {
            if !is_dns1123_label(ns) {
                continue;
            }
            let mut kinds = vec!["Policy"];
            if !servers_everywhere {
                kinds.push("MCPServer");
            }
            for kind in kinds {
                match self.list(kind, Some(ns), &mut budget, &mut skipped).await {
                    Ok(l) => objects.extend(l),
                    Err(ApiError::Forbidden(m)) => denied.push((kind, ns.clone(), m)),
                    Err(e) => return Err(fail(kind, Some(ns), e)),
                }
            }
            namespaces.insert(ns.clone());
        }
        refuse(&denied)?;
        report_skipped(&skipped);
        Ok(LiveRead {
            objects,
            namespaces,
        })
    }
}

/// Every namespace the caller was refused, in one error.
fn refuse(denied: &[(&str, String, String)]) -> Result<(), Failure> {
    if denied.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = denied
        .iter()
        .map(|(kind, ns, m)| {
            format!(
                "cannot list {} in namespace {ns}: forbidden: {}",
                plural(kind),
                text::escape(m)
            )
        })
        .collect();
    Err(Failure::Input(format!(
        "{}\n(the answer would depend on objects your credentials cannot read; ask for \
         `get`/`list` on {GROUP} there, or name another namespace with -n)",
        lines.join("\nerror: ")
    )))
}

fn report_skipped(skipped: &[String]) {
    for s in skipped {
        eprintln!("note: skipped {s}");
    }
}

/// Namespaces a Grant names literally: `ns/server::tool` selectors and `ns/policy`
/// exceptions. Globs name no one namespace.
fn named_namespaces(g: &mcpgov_engine::Grant) -> Vec<String> {
    let from_tools = g
        .tools
        .iter()
        .filter_map(|t| mcpgov_engine::Selector::parse(t).ok())
        .filter_map(|s| s.namespace);
    let from_exceptions = g
        .expected_exceptions
        .iter()
        .filter_map(|e| e.policy.split_once('/').map(|(ns, _)| ns.to_string()));
    from_tools
        .chain(from_exceptions)
        .filter(|ns| is_dns1123_label(ns))
        .collect()
}

/// A listed object into its typed form, as the operator's watch decodes it.
fn decode(kind: &str, mut item: Value) -> Result<Loaded, String> {
    let describe = |v: &Value| {
        let f = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        };
        text::escape(&format!(
            "{kind} {}/{}",
            f("/metadata/namespace"),
            f("/metadata/name")
        ))
        .into_owned()
    };
    if let Some(map) = item.as_object_mut() {
        // List items may omit them; the typed form wants them. managedFields is large
        // and unused.
        map.entry("apiVersion")
            .or_insert_with(|| crate::crd::common::API_VERSION.into());
        map.entry("kind").or_insert_with(|| kind.into());
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    let who = describe(&item);
    let bad = |e: serde_json::Error| format!("malformed {who}: {}", text::escape(&e.to_string()));
    let resource = match kind {
        "MCPServer" => Resource::MCPServer(Box::new(
            serde_json::from_value::<MCPServer>(item).map_err(bad)?,
        )),
        "Agent" => Resource::Agent(Box::new(
            serde_json::from_value::<Agent>(item).map_err(bad)?,
        )),
        "Policy" => Resource::Policy(Box::new(
            serde_json::from_value::<Policy>(item).map_err(bad)?,
        )),
        "Grant" => Resource::Grant(Box::new(
            serde_json::from_value::<Grant>(item).map_err(bad)?,
        )),
        _ => unreachable!("one of our kinds"),
    };
    Ok(Loaded {
        file: PathBuf::from(CLUSTER_ORIGIN),
        line: None,
        resource,
    })
}

/// What `Origin.file` says of an object read from the cluster.
pub const CLUSTER_ORIGIN: &str = "<cluster>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_writes_them() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        for bad in ["", "0", "-1s", "1h", "s", "99999999999999999999s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grants_name_the_namespaces_they_depend_on() {
        let g = mcpgov_engine::Grant {
            key: mcpgov_engine::ObjKey::new("t", "g"),
            agent: "a".into(),
            tools: vec![
                "shared/fs::read".into(),
                "local::x".into(),
                "bare".into(),
                "team-*/gw::*".into(),
                "Bad_NS/gw::x".into(),
            ],
            expected_exceptions: vec![mcpgov_engine::ExpectedException {
                policy: "mcpgov-system/deny".into(),
                tool: None,
                resource: None,
                reason: "r".into(),
                owner: None,
                expires: None,
            }],
            provenance: Default::default(),
        };
        assert_eq!(named_namespaces(&g), ["shared", "mcpgov-system"]);
    }

    #[test]
    fn listed_objects_decode_without_their_managed_fields() {
        let item = serde_json::json!({
            "metadata": {"name": "a", "namespace": "t", "uid": "u",
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"profile": "Strict"}
        });
        let l = decode("Agent", item).unwrap();
        let Resource::Agent(a) = l.resource else {
            panic!("an Agent")
        };
        assert_eq!(a.metadata.uid.as_deref(), Some("u"));
        assert!(a.metadata.managed_fields.is_none());
        assert_eq!(l.file, PathBuf::from(CLUSTER_ORIGIN));
        // A listed object that does not fit its type is skipped and named, escaped.
        let bad = serde_json::json!({"metadata": {"name": "x\u{1b}[2J", "namespace": "t"},
                                     "spec": {"profile": 7}});
        let e = decode("Agent", bad).unwrap_err();
        assert!(e.starts_with("malformed Agent t/x"), "{e}");
        assert!(!e.contains('\u{1b}'), "{e}");
    }
}
