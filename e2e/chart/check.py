#!/usr/bin/env python3
"""Assertions on `helm template` output of charts/mcpgov, for e2e/chart/test.sh.

  check.py render RENDERED.yaml VALUES.json   check one rendering against the values it
                                              was made with (VALUES.json: the effective
                                              values, from `check.py values`)
  check.py selftest RENDERED.yaml VALUES.json the checker notices mutations of a rendering
  check.py coverage CHART                     every value has a schema entry and a README row
  check.py pod RENDERED.yaml                  print the Deployment's pod template as a Pod
  check.py select RENDERED.yaml KIND...       print only the documents of these kinds
  check.py rules RENDERED.yaml                print the RBAC rules, one line each
  check.py aggregate CLUSTERROLES.json        aggregate ClusterRoles as kube-controller-manager
                                              would (for a control plane without it)
  check.py values CHART_VALUES OVERRIDE... -- KEY=VALUE...
                                              print the effective values as JSON (maps
                                              merged, lists replaced, as Helm does)

Exits 1 with one line per failed expectation.
"""
import json
import sys

import yaml

CRD_NAMES = {"mcpservers.mcpgov.io", "agents.mcpgov.io", "policies.mcpgov.io", "grants.mcpgov.io"}
CLUSTER_SCOPED = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace",
                  "ValidatingWebhookConfiguration"}
COMMON_LABELS = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
]
# The ClusterRole the operator needs (docs/operations.md, docs/crawler.md), exactly.
EXPECTED_CLUSTER_RULES = sorted([
    (("mcpgov.io",), ("agents", "grants", "mcpservers", "policies"), (), ("get", "list", "watch")),
    (("mcpgov.io",), ("agents/status", "grants/status", "mcpservers/status", "policies/status"), (), ("get", "patch", "update")),
    (("",), ("configmaps",), (), ("create", "delete", "get", "list", "patch", "update", "watch")),
    (("",), ("secrets",), (), ("get",)),
    (("",), ("events",), (), ("create", "patch")),
    (("events.k8s.io",), ("events",), (), ("create", "patch")),
])

# With policyReports on, one more rule: the chosen API's reports.
REPORT_RULES = {
    "policyreport": (("wgpolicyk8s.io",), ("policyreports",), (), ("create", "delete", "get", "list", "patch", "watch")),
    "openreports": (("openreports.io",), ("reports",), (), ("create", "delete", "get", "list", "patch", "watch")),
}


def policy_reports(v):
    """The reports API policyReports turns on, or None ("off" or false)."""
    r = v.get("policyReports")
    return r if r in REPORT_RULES else None


# The tenant ClusterRoles (docs/security.md, "Tenant RBAC"), by the built-in role they
# aggregate into; each complete on its own.
_READ = (("mcpgov.io",), ("agents", "grants", "mcpservers", "policies"), (), ("get", "list", "watch"))
_WRITE = ("create", "delete", "deletecollection", "patch", "update")
EXPECTED_TENANT_RULES = {
    "view": sorted([_READ]),
    "edit": sorted([_READ, (("mcpgov.io",), ("agents", "grants"), (), _WRITE)]),
    "admin": sorted([_READ, (("mcpgov.io",), ("agents", "grants", "mcpservers", "policies"), (), _WRITE)]),
}
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def tenant_level(cr):
    """The built-in role a ClusterRole aggregates into (view/edit/admin), or None."""
    labels = cr.get("metadata", {}).get("labels") or {}
    levels = [k[len(AGGREGATE):] for k, x in labels.items() if k.startswith(AGGREGATE) and x == "true"]
    return levels[0] if len(levels) == 1 else ("several" if levels else None)


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def norm_rule(r):
    return (
        tuple(sorted(r.get("apiGroups", []))),
        tuple(sorted(r.get("resources", []))),
        tuple(sorted(r.get("resourceNames", []))),
        tuple(sorted(r.get("verbs", []))),
    )


WINDOW_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def alert_groups(alerts, window):
    """files/alerts.yaml's groups as the chart should render them: the default expiry
    window (`<= 604800`) of MCPGovExceptionExpiringSoon replaced by `window` in seconds.
    Returns them and how many rules were rewritten."""
    import copy
    groups = copy.deepcopy(alerts["groups"])
    seconds = int(window[:-1]) * WINDOW_UNITS[window[-1]]
    n = 0
    for g in groups:
        for r in g["rules"]:
            if r.get("alert") == "MCPGovExceptionExpiringSoon" and r["expr"].count("<= 604800") == 1:
                r["expr"] = r["expr"].replace("<= 604800", f"<= {seconds}")
                n += 1
    return groups, n


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


class Checker:
    def __init__(self):
        self.failures = []
        self.count = 0

    def expect(self, cond, msg):
        self.count += 1
        if not cond:
            self.failures.append(msg)
        return cond


def restricted(c, spec, where):
    """The Pod Security "restricted" profile (v1.30+), as far as a manifest shows it."""
    psc = spec.get("securityContext") or {}
    c.expect(not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"),
             f"{where}: host namespaces used")
    for v in spec.get("volumes") or []:
        allowed = {"name", "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret"}
        c.expect(set(v) <= allowed, f"{where}: volume {v.get('name')} of a restricted type")
    for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        sc = ctr.get("securityContext") or {}
        name = f"{where}: container {ctr.get('name')}"
        c.expect(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation is not false")
        c.expect(not sc.get("privileged"), f"{name}: privileged")
        caps = sc.get("capabilities") or {}
        c.expect("ALL" in (caps.get("drop") or []), f"{name}: capabilities do not drop ALL")
        c.expect(set(caps.get("add") or []) <= {"NET_BIND_SERVICE"}, f"{name}: capabilities added")
        nonroot = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        c.expect(nonroot is True, f"{name}: runAsNonRoot is not true")
        uid = sc.get("runAsUser", psc.get("runAsUser"))
        c.expect(uid is None or uid != 0, f"{name}: runAsUser 0")
        c.expect(uid == 65532, f"{name}: runAsUser is {uid}, not 65532")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        c.expect(seccomp in ("RuntimeDefault", "Localhost"), f"{name}: seccompProfile is {seccomp}")
        c.expect(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem is not true")
        for p in ctr.get("ports") or []:
            c.expect("hostPort" not in p, f"{name}: hostPort")


def check_render(path, values_path):
    with open(values_path) as f:
        v = json.load(f)
    docs = load(path)
    c = check_docs(docs, v)
    kinds = [d.get("kind") for d in docs]
    for f in c.failures:
        print(f"  FAIL {f}")
    print(f"  {c.count - len(c.failures)}/{c.count} expectations hold ({len(docs)} objects: "
          + ", ".join(f"{k}×{kinds.count(k)}" for k in sorted(set(kinds))) + ")")
    return 1 if c.failures else 0


def check_docs(docs, v):
    ns = v["_namespace"]
    release = v["_release"]
    c = Checker()

    kinds = [d.get("kind") for d in docs]
    for d in docs:
        md = d.get("metadata") or {}
        what = f"{d.get('kind')}/{md.get('name')}"
        c.expect(d.get("apiVersion") and d.get("kind") and md.get("name"), f"{what}: apiVersion/kind/name missing")
        labels = md.get("labels") or {}
        for l in COMMON_LABELS:
            c.expect(l in labels, f"{what}: label {l} missing")
        c.expect(labels.get("app.kubernetes.io/managed-by") == "Helm", f"{what}: managed-by is not Helm")
        if d.get("kind") not in CLUSTER_SCOPED:
            # The RoleBinding of the ClusterRole lives in watchNamespace; the leader's and
            # the admission webhook's in the release namespace.
            want = v["watchNamespace"] if (d.get("kind") == "RoleBinding"
                                           and "leader" not in md.get("name", "")
                                           and md.get("name") != f"{release}-admission") else ns
            if d.get("kind") == "ConfigMap":
                want = v["grafanaDashboard"]["namespace"] or ns
            c.expect(md.get("namespace") == want, f"{what}: namespace {md.get('namespace')} != {want}")
        else:
            c.expect("namespace" not in md, f"{what}: cluster-scoped object with a namespace")
        # The chart never makes a ConfigMap the operator would take for one of its own.
        c.expect(labels.get("app.kubernetes.io/managed-by") != "mcpgov", f"{what}: labelled managed-by=mcpgov")

    # --- Deployment
    deps = by_kind(docs, "Deployment")
    if c.expect(len(deps) == 1, f"{len(deps)} Deployments"):
        dep = deps[0]
        spec = dep["spec"]
        pod = spec["template"]["spec"]
        c.expect(spec["replicas"] == v["replicaCount"], f"replicas {spec['replicas']} != {v['replicaCount']}")
        sel = spec["selector"]["matchLabels"]
        c.expect(all(spec["template"]["metadata"]["labels"].get(k) == x for k, x in sel.items()),
                 "pod labels do not match the selector")
        restricted(c, pod, "Deployment")
        ctr = pod["containers"][0]
        tag = v["image"]["tag"] or "0.1.0"
        want_image = (f"{v['image']['repository']}@{v['image']['digest']}" if v["image"].get("digest")
                      else f"{v['image']['repository']}:{tag}")
        c.expect(ctr["image"] == want_image, f"image {ctr['image']} != {want_image}")
        args = ctr["args"]
        c.expect(args[0] == "operator", f"args start with {args[0]}")

        def flag(name):
            return args[args.index(name) + 1] if name in args else None

        c.expect(flag("--listen") == "0.0.0.0:8080", "--listen is not 0.0.0.0:8080")
        c.expect(flag("--governance-namespace") == v["governanceNamespace"], "--governance-namespace")
        c.expect(flag("--resync-seconds") == str(v["resyncSeconds"]), "--resync-seconds")
        c.expect(flag("--crawl-concurrency") == str(v["crawler"]["concurrency"]), "--crawl-concurrency")
        c.expect(flag("--namespace") == (v["watchNamespace"] or None), f"--namespace is {flag('--namespace')}")
        c.expect(("--allow-loopback" in args) == v["crawler"]["allowLoopback"], "--allow-loopback iff allowLoopback")
        c.expect(("--deny-private" in args) == v["crawler"]["denyPrivate"], "--deny-private iff denyPrivate")
        c.expect(flag("--policy-reports") == policy_reports(v), f"--policy-reports is {flag('--policy-reports')}")
        le = v["leaderElection"]["enabled"]
        c.expect(("--leader-election" in args) == le, f"--leader-election present={'--leader-election' in args}, enabled={le}")
        if le:
            c.expect(flag("--lease-name") == v["leaderElection"]["leaseName"], "--lease-name")
            c.expect(flag("--lease-namespace") == ns, "--lease-namespace is not the release namespace")
        else:
            c.expect("--lease-name" not in args and "--lease-namespace" not in args, "lease flags without election")
        env = {e["name"]: e for e in ctr.get("env", [])}
        c.expect(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
                 "POD_NAME is not from the downward API")
        c.expect(env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace",
                 "POD_NAMESPACE is not from the downward API")
        c.expect(env.get("RUST_LOG", {}).get("value") == v["logLevel"], "RUST_LOG != logLevel")
        ports = {p["name"]: p for p in ctr.get("ports", [])}
        c.expect(ports.get("http-metrics", {}).get("containerPort") == 8080, "no containerPort 8080 named http-metrics")
        lp = ctr.get("livenessProbe", {}).get("httpGet", {})
        rp = ctr.get("readinessProbe", {}).get("httpGet", {})
        c.expect(lp.get("path") == "/healthz" and lp.get("port") == "http-metrics", f"livenessProbe {lp}")
        c.expect(rp.get("path") == "/readyz" and rp.get("port") == "http-metrics", f"readinessProbe {rp}")
        mounts = {m["mountPath"]: m["name"] for m in ctr.get("volumeMounts", [])}
        vols = {x["name"]: x for x in pod.get("volumes", [])}
        c.expect("/tmp" in mounts and "emptyDir" in vols.get(mounts.get("/tmp"), {}), "no emptyDir at /tmp")
        c.expect(ctr.get("resources") == v["resources"], "resources differ from the values")
        sa = pod.get("serviceAccountName")
        want_sa = (v["serviceAccount"]["name"] or release) if v["serviceAccount"]["create"] else (v["serviceAccount"]["name"] or "default")
        c.expect(sa == want_sa, f"serviceAccountName {sa} != {want_sa}")

    # --- ServiceAccount
    sas = by_kind(docs, "ServiceAccount")
    c.expect(len(sas) == (1 if v["serviceAccount"]["create"] else 0), f"{len(sas)} ServiceAccounts")

    # --- Admission webhook (its Service and RBAC are checked here, not below)
    adm_name = f"{release}-admission"
    is_adm = lambda d: (d.get("metadata") or {}).get("name") == adm_name
    check_admission(c, docs, v, adm_name, deps)
    docs = [d for d in docs if not is_adm(d)]
    # --- MCP listener (its Service and RBAC)
    mcp_name = f"{release}-mcp"
    check_mcp(c, docs, v, mcp_name, deps)
    docs = [d for d in docs if (d.get("metadata") or {}).get("name") != mcp_name]

    # --- RBAC
    crs, crbs = by_kind(docs, "ClusterRole"), by_kind(docs, "ClusterRoleBinding")
    roles, rbs = by_kind(docs, "Role"), by_kind(docs, "RoleBinding")
    rbac = v["rbac"]["create"]
    tenant = [cr for cr in crs if tenant_level(cr)]
    crs = [cr for cr in crs if not tenant_level(cr)]
    want_tenant = rbac and v["rbac"]["aggregateToDefaultRoles"]
    c.expect(sorted(tenant_level(cr) for cr in tenant) == (["admin", "edit", "view"] if want_tenant else []),
             f"tenant ClusterRoles {[cr['metadata']['name'] for cr in tenant]}")
    for cr in tenant:
        level = tenant_level(cr)
        rules = sorted(norm_rule(r) for r in cr["rules"])
        c.expect(rules == EXPECTED_TENANT_RULES.get(level), f"tenant ClusterRole {level} rules differ: {rules}")
        if crs:
            c.expect(cr["metadata"]["name"] == f"{crs[0]['metadata']['name']}-{level}",
                     f"tenant ClusterRole named {cr['metadata']['name']}")
        c.expect(not cr.get("aggregationRule"), "a tenant ClusterRole aggregates others")
    le = v["leaderElection"]["enabled"]
    c.expect(len(crs) == (1 if rbac else 0), f"{len(crs)} ClusterRoles")
    watch_ns = v["watchNamespace"]
    c.expect(len(crbs) == (1 if rbac and not watch_ns else 0), f"{len(crbs)} ClusterRoleBindings")
    c.expect(len(roles) == (1 if rbac and le else 0), f"{len(roles)} Roles")
    c.expect(len(rbs) == (int(rbac and le) + int(bool(rbac and watch_ns))), f"{len(rbs)} RoleBindings")
    for cr in crs:
        rules = sorted(norm_rule(r) for r in cr["rules"])
        want = sorted(EXPECTED_CLUSTER_RULES + ([REPORT_RULES[policy_reports(v)]] if policy_reports(v) else []))
        c.expect(rules == want, f"ClusterRole rules differ: {rules}")
        for r in cr["rules"]:
            c.expect("*" not in r.get("verbs", []) and "*" not in r.get("resources", [])
                     and "*" not in r.get("apiGroups", []), "wildcard in the ClusterRole")
    for role in roles:
        rules = sorted(norm_rule(r) for r in role["rules"])
        lease = v["leaderElection"]["leaseName"]
        want = sorted([
            (("coordination.k8s.io",), ("leases",), (), ("create",)),
            (("coordination.k8s.io",), ("leases",), (lease,), ("get", "patch", "update")),
        ])
        c.expect(rules == want, f"leader Role rules differ: {rules}")
    for b in crbs + rbs:
        subj = b["subjects"]
        c.expect(len(subj) == 1 and subj[0]["kind"] == "ServiceAccount" and subj[0]["namespace"] == ns,
                 f"{b['kind']}/{b['metadata']['name']}: subjects {subj}")
        if deps:
            c.expect(subj[0]["name"] == deps[0]["spec"]["template"]["spec"]["serviceAccountName"],
                     f"{b['kind']} binds {subj[0]['name']}, not the pods' ServiceAccount")
    if watch_ns and rbac:
        nsrb = [b for b in rbs if b["metadata"]["namespace"] == watch_ns]
        c.expect(len(nsrb) == 1 and nsrb[0]["roleRef"]["kind"] == "ClusterRole",
                 "watchNamespace: no RoleBinding of the ClusterRole in it")

    # --- CRDs
    crds = by_kind(docs, "CustomResourceDefinition")
    names = {d["metadata"]["name"] for d in crds}
    if v["crds"]["install"]:
        c.expect(names == CRD_NAMES, f"CRDs {sorted(names)}")
        with open(v["_crds_source"]) as f:
            source = {d["metadata"]["name"]: d for d in yaml.safe_load_all(f) if d}
        for d in crds:
            n = d["metadata"]["name"]
            ann = d["metadata"].get("annotations") or {}
            keep = ann.get("helm.sh/resource-policy") == "keep"
            c.expect(keep == v["crds"]["keep"], f"CRD {n}: keep annotation {keep}, crds.keep {v['crds']['keep']}")
            # Apart from the added metadata, exactly the repository's CRD.
            a = dict(d, metadata={"name": n})
            c.expect(a == source.get(n), f"CRD {n} differs from crds/mcpgov.io.yaml")
    else:
        c.expect(not names, f"CRDs rendered with crds.install=false: {sorted(names)}")

    # --- Service, ServiceMonitor, PrometheusRule, PDB, NetworkPolicy
    svcs = by_kind(docs, "Service")
    c.expect(len(svcs) == int(v["metrics"]["service"]["enabled"]), f"{len(svcs)} Services")
    for s in svcs:
        p = s["spec"]["ports"][0]
        c.expect(p["port"] == v["metrics"]["service"]["port"] and p["targetPort"] == "http-metrics"
                 and p["name"] == "http-metrics", f"metrics Service port {p}")
        if deps:
            pl = deps[0]["spec"]["template"]["metadata"]["labels"]
            c.expect(all(pl.get(k) == x for k, x in s["spec"]["selector"].items()), "Service does not select the pods")
    sms = by_kind(docs, "ServiceMonitor")
    c.expect(len(sms) == int(v["serviceMonitor"]["enabled"]), f"{len(sms)} ServiceMonitors")
    for sm in sms:
        c.expect(sm["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
        ep = sm["spec"]["endpoints"][0]
        c.expect(ep["port"] == "http-metrics" and ep["path"] == "/metrics", f"ServiceMonitor endpoint {ep}")
        c.expect(ep.get("honorLabels") == v["serviceMonitor"]["honorLabels"], "ServiceMonitor honorLabels")
        c.expect(ep.get("interval") == v["serviceMonitor"]["interval"], "ServiceMonitor interval")
        for k, x in v["serviceMonitor"]["labels"].items():
            c.expect(sm["metadata"]["labels"].get(k) == x, f"ServiceMonitor label {k}")
        if svcs:
            sl = svcs[0]["metadata"]["labels"]
            c.expect(all(sl.get(k) == x for k, x in sm["spec"]["selector"]["matchLabels"].items()),
                     "ServiceMonitor does not select the metrics Service")
    prs = by_kind(docs, "PrometheusRule")
    c.expect(len(prs) == int(v["prometheusRule"]["enabled"]), f"{len(prs)} PrometheusRules")
    for pr in prs:
        c.expect(pr["apiVersion"] == "monitoring.coreos.com/v1", "PrometheusRule apiVersion")
        with open(v["_alerts_source"]) as f:
            alerts = yaml.safe_load(f)
        want, n = alert_groups(alerts, v["prometheusRule"]["exceptionExpiryWindow"])
        c.expect(n == 1, f"{n} MCPGovExceptionExpiringSoon rules with the default window in files/alerts.yaml")
        c.expect(pr["spec"]["groups"] == want,
                 "PrometheusRule groups differ from files/alerts.yaml (with the expiry window of the values)")
        for k, x in v["prometheusRule"]["labels"].items():
            c.expect(pr["metadata"]["labels"].get(k) == x, f"PrometheusRule label {k}")
    dashboards = by_kind(docs, "ConfigMap")
    gd = v["grafanaDashboard"]
    c.expect(len(dashboards) == int(gd["enabled"]), f"{len(dashboards)} dashboard ConfigMaps")
    for cm in dashboards:
        with open(v["_dashboard_source"]) as f:
            want = json.load(f)
        c.expect(json.loads(cm["data"]["mcpgov.json"]) == want, "dashboard differs from files/dashboard.json")
        for k, x in gd["labels"].items():
            c.expect(cm["metadata"]["labels"].get(k) == x, f"dashboard label {k}")
        c.expect((cm["metadata"].get("annotations") or {}) == gd["annotations"], "dashboard annotations")
        c.expect(cm["metadata"]["namespace"] == (gd["namespace"] or ns), "dashboard namespace")
    pdbs = by_kind(docs, "PodDisruptionBudget")
    want_pdb = v["podDisruptionBudget"]["enabled"] and v["replicaCount"] > 1
    c.expect(len(pdbs) == int(want_pdb), f"{len(pdbs)} PodDisruptionBudgets (want {int(want_pdb)})")
    for pdb in pdbs:
        c.expect(pdb["spec"]["minAvailable"] == v["podDisruptionBudget"]["minAvailable"], "PDB minAvailable")
    nps = by_kind(docs, "NetworkPolicy")
    c.expect(len(nps) == int(v["networkPolicy"]["enabled"]), f"{len(nps)} NetworkPolicies")
    for np in nps:
        npv = v["networkPolicy"]
        c.expect(sorted(np["spec"]["policyTypes"]) == ["Egress", "Ingress"], "NetworkPolicy policyTypes")
        eg = np["spec"]["egress"]
        ports_of = lambda r: sorted((p["port"], p.get("protocol", "TCP")) for p in r.get("ports", []))
        api_rules = [r for r in eg if ports_of(r) == sorted((p, "TCP") for p in npv["apiServer"]["ports"])]
        c.expect(len(api_rules) >= 1, "no kube-apiserver egress rule")
        for r in api_rules[:1]:
            cidrs = [t["ipBlock"]["cidr"] for t in r.get("to", [])]
            c.expect(cidrs == npv["apiServer"]["cidrs"], f"apiserver egress to {cidrs}")
        if npv["dns"]["enabled"]:
            c.expect(any(ports_of(r) == sorted([(npv["dns"]["port"], "UDP"), (npv["dns"]["port"], "TCP")]) for r in eg),
                     "no DNS egress rule")
        crawl = [r for r in eg if any("ipBlock" in t and t["ipBlock"]["cidr"] in
                                      [b["cidr"] for b in npv["crawler"]["ipBlocks"]] for t in r.get("to", []))]
        if c.expect(len(crawl) == 1, "no crawler egress rule"):
            blocks = [t["ipBlock"] for t in crawl[0]["to"] if "ipBlock" in t]
            c.expect(blocks == [{k: b[k] for k in ("cidr", "except") if b.get(k)} for b in npv["crawler"]["ipBlocks"]],
                     f"crawler ipBlocks {blocks}")
            c.expect([p["port"] for p in crawl[0].get("ports", [])] == npv["crawler"]["ports"], "crawler ports")
        ing = np["spec"]["ingress"]
        want_ports = (["http-metrics"] + (["admission"] if v["admission"]["enabled"] else [])
                      + (["mcp"] if v["mcp"]["enabled"] else []))
        c.expect([r["ports"][0]["port"] for r in ing] == want_ports and all(len(r["ports"]) == 1 for r in ing),
                 f"ingress is not {want_ports} only")

    allowed = {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
               "CustomResourceDefinition", "Service", "ServiceMonitor", "PrometheusRule",
               "PodDisruptionBudget", "NetworkPolicy", "ConfigMap", "ValidatingWebhookConfiguration"}
    c.expect(set(kinds) <= allowed, f"unexpected kinds {set(kinds) - allowed}")
    return c


def check_admission(c, docs, v, name, deps):
    """The webhook: off by default; when on, the Service, configuration, flags and the
    narrow RBAC of the self-managed certificate (docs/admission.md)."""
    a = v["admission"]
    ns, release = v["_namespace"], v["_release"]
    vwcs = by_kind(docs, "ValidatingWebhookConfiguration")
    adm = [d for d in docs if d["metadata"]["name"] == name]
    args = deps[0]["spec"]["template"]["spec"]["containers"][0]["args"] if deps else []
    ports = {p["name"]: p for p in (deps[0]["spec"]["template"]["spec"]["containers"][0].get("ports", [])
                                    if deps else [])}
    if not a["enabled"]:
        c.expect(not vwcs and not adm, "admission objects rendered with admission.enabled=false")
        c.expect(not any(x.startswith("--admission") for x in args), "admission flags while off")
        c.expect("admission" not in ports, "admission port while off")
        return
    def flag(f):
        return args[args.index(f) + 1] if f in args else None
    config_name = f"{release}-{ns}"
    secret = f"{release}-admission-tls"
    c.expect(flag("--admission-listen") == f"0.0.0.0:{a['port']}", "--admission-listen")
    c.expect(flag("--admission-hosts") == f"{name}.{ns}.svc,{name}.{ns}.svc.cluster.local", "--admission-hosts")
    c.expect(flag("--admission-secret") == secret, "--admission-secret")
    c.expect(flag("--admission-webhook-config") == config_name, "--admission-webhook-config")
    c.expect(ports.get("admission", {}).get("containerPort") == a["port"], "no admission containerPort")
    svcs = [d for d in adm if d["kind"] == "Service"]
    if c.expect(len(svcs) == 1, f"{len(svcs)} admission Services"):
        p = svcs[0]["spec"]["ports"]
        c.expect(p == [{"name": "https-admission", "port": 443, "targetPort": "admission", "protocol": "TCP"}],
                 f"admission Service ports {p}")
    if c.expect(len(vwcs) == 1, f"{len(vwcs)} ValidatingWebhookConfigurations"):
        cfg = vwcs[0]
        c.expect(cfg["metadata"]["name"] == config_name, "configuration name")
        hooks = cfg["webhooks"]
        if c.expect(len(hooks) == 1, f"{len(hooks)} webhooks"):
            w = hooks[0]
            c.expect(w["failurePolicy"] == a["failurePolicy"], "failurePolicy")
            c.expect(w["sideEffects"] == "None", "sideEffects")
            c.expect(w["timeoutSeconds"] == a["timeoutSeconds"], "timeoutSeconds")
            c.expect(w["admissionReviewVersions"] == ["v1"], "admissionReviewVersions")
            c.expect("caBundle" not in w["clientConfig"], "caBundle rendered (the operator owns it)")
            c.expect(w["clientConfig"]["service"] == {"name": name, "namespace": ns, "path": "/validate", "port": 443},
                     f"clientConfig {w['clientConfig']}")
            rules = w["rules"]
            # Every kind on create and update; a server's deletion too (warned about, never refused).
            c.expect(len(rules) == 2 and all(r["apiGroups"] == ["mcpgov.io"] for r in rules)
                     and sorted(rules[0]["resources"]) == ["agents", "grants", "mcpservers", "policies"]
                     and sorted(rules[0]["operations"]) == ["CREATE", "UPDATE"]
                     and rules[1]["resources"] == ["mcpservers"]
                     and rules[1]["operations"] == ["DELETE"], f"rules {rules}")
            exprs = w["namespaceSelector"]["matchExpressions"]
            c.expect(exprs == [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                "values": ["kube-system"] + a["excludeNamespaces"]}], f"namespaceSelector {exprs}")
    rbac = v["rbac"]["create"]
    kinds = sorted(d["kind"] for d in adm if d["kind"] != "Service")
    c.expect(kinds == (["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] if rbac else []),
             f"admission RBAC objects {kinds}")
    for d in adm:
        if d["kind"] in ("Role", "ClusterRole"):
            got = sorted(norm_rule(r) for r in d["rules"])
            want = sorted([((("",), ("secrets",), (), ("create",))),
                           (("",), ("secrets",), (secret,), ("get", "update"))]) if d["kind"] == "Role" else [
                (("admissionregistration.k8s.io",), ("validatingwebhookconfigurations",), (config_name,),
                 ("get", "update"))]
            c.expect(got == want, f"admission {d['kind']} rules {got}")
        if d["kind"] in ("RoleBinding", "ClusterRoleBinding") and deps:
            subj = d["subjects"]
            c.expect(subj == [{"kind": "ServiceAccount", "namespace": ns,
                               "name": deps[0]["spec"]["template"]["spec"]["serviceAccountName"]}],
                     f"admission {d['kind']} subjects {subj}")


def check_mcp(c, docs, v, name, deps):
    """The MCP listener: off by default; when on, its flags, port, Service, and RBAC of
    exactly TokenReview and SubjectAccessReview creation (docs/mcp-server.md)."""
    m = v["mcp"]
    ns = v["_namespace"]
    objs = [d for d in docs if (d.get("metadata") or {}).get("name") == name]
    args = deps[0]["spec"]["template"]["spec"]["containers"][0]["args"] if deps else []
    ports = {p["name"]: p for p in (deps[0]["spec"]["template"]["spec"]["containers"][0].get("ports", [])
                                    if deps else [])}
    if not m["enabled"]:
        c.expect(not objs, "MCP objects rendered with mcp.enabled=false")
        c.expect(not any(x.startswith("--mcp") for x in args), "MCP flags while off")
        c.expect("mcp" not in ports, "MCP port while off")
        return
    def flag(f):
        return args[args.index(f) + 1] if f in args else None
    c.expect(flag("--mcp-listen") == f"0.0.0.0:{m['port']}", "--mcp-listen")
    c.expect(flag("--mcp-token-audiences") == ",".join(m["tokenAudiences"]), "--mcp-token-audiences")
    c.expect("--mcp-allow-unauthenticated" not in args, "the chart never serves MCP unauthenticated")
    c.expect(ports.get("mcp", {}).get("containerPort") == m["port"], "no mcp containerPort")
    svcs = [d for d in objs if d["kind"] == "Service"]
    if c.expect(len(svcs) == 1, f"{len(svcs)} MCP Services"):
        p = svcs[0]["spec"]["ports"]
        c.expect(p == [{"name": "http-mcp", "port": m["service"]["port"], "targetPort": "mcp", "protocol": "TCP"}],
                 f"MCP Service ports {p}")
        c.expect(svcs[0]["metadata"]["namespace"] == ns, "MCP Service namespace")
    rbac = v["rbac"]["create"]
    kinds = sorted(d["kind"] for d in objs if d["kind"] != "Service")
    c.expect(kinds == (["ClusterRole", "ClusterRoleBinding"] if rbac else []), f"MCP RBAC objects {kinds}")
    for d in objs:
        if d["kind"] == "ClusterRole":
            got = sorted(norm_rule(r) for r in d["rules"])
            want = sorted([(("authentication.k8s.io",), ("tokenreviews",), (), ("create",)),
                           (("authorization.k8s.io",), ("subjectaccessreviews",), (), ("create",))])
            c.expect(got == want, f"MCP ClusterRole rules {got}")
        if d["kind"] == "ClusterRoleBinding" and deps:
            c.expect(d["roleRef"]["name"] == name, "MCP ClusterRoleBinding roleRef")
            subj = d["subjects"]
            c.expect(subj == [{"kind": "ServiceAccount", "namespace": ns,
                               "name": deps[0]["spec"]["template"]["spec"]["serviceAccountName"]}],
                     f"MCP ClusterRoleBinding subjects {subj}")


def selftest(path, values_path):
    """The checker must notice a broken rendering: mutate the default one, expect failures."""
    import copy
    with open(values_path) as f:
        v = json.load(f)
    base = load(path)
    if check_docs(base, v).failures:
        print("  the unmodified rendering does not pass")
        return 1

    def ctr(docs):
        return by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]

    def crd(docs, n=0):
        return by_kind(docs, "CustomResourceDefinition")[n]

    def cr(docs):
        return [r for r in by_kind(docs, "ClusterRole") if not tenant_level(r)][0]

    def tenant(docs, level):
        return [r for r in by_kind(docs, "ClusterRole") if tenant_level(r) == level][0]

    mutations = [
        ("readOnlyRootFilesystem off", lambda d: ctr(d)["securityContext"].update(readOnlyRootFilesystem=False),
         "readOnlyRootFilesystem"),
        ("capabilities not dropped", lambda d: ctr(d)["securityContext"].pop("capabilities"), "drop ALL"),
        ("runAsUser 0", lambda d: ctr(d)["securityContext"].update(runAsUser=0), "runAsUser"),
        ("--leader-election dropped", lambda d: ctr(d)["args"].remove("--leader-election"), "--leader-election"),
        ("keep annotation dropped", lambda d: crd(d)["metadata"].pop("annotations"), "keep annotation"),
        ("a CRD missing", lambda d: d.remove(crd(d, 3)), "CRDs"),
        ("a CRD's schema changed", lambda d: crd(d)["spec"].update(scope="Cluster"), "differs from crds/"),
        ("secrets listable", lambda d: cr(d)["rules"][3]["verbs"].append("list"), "ClusterRole rules differ"),
        ("reports written while off", lambda d: ctr(d)["args"].extend(["--policy-reports", "policyreport"]),
         "--policy-reports"),
        ("reports RBAC while off", lambda d: cr(d)["rules"].append(
            {"apiGroups": ["wgpolicyk8s.io"], "resources": ["policyreports"], "verbs": ["get", "list", "watch", "create", "patch", "delete"]}),
         "ClusterRole rules differ"),
        ("a wildcard rule", lambda d: cr(d)["rules"].append({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
         "wildcard"),
        ("edit may write Policies", lambda d: tenant(d, "edit")["rules"][1]["resources"].append("policies"),
         "tenant ClusterRole edit rules differ"),
        ("view may write status", lambda d: tenant(d, "view")["rules"].append(
            {"apiGroups": ["mcpgov.io"], "resources": ["agents/status"], "verbs": ["patch"]}),
         "tenant ClusterRole view rules differ"),
        ("the admin role unlabelled", lambda d: tenant(d, "admin")["metadata"]["labels"].pop(AGGREGATE + "admin"),
         "tenant ClusterRoles"),
        ("/readyz probe gone", lambda d: ctr(d).pop("readinessProbe"), "readinessProbe"),
        ("/tmp not writable", lambda d: ctr(d).pop("volumeMounts"), "emptyDir at /tmp"),
        ("an MCP Service while mcp is off", lambda d: d.append(
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "mcpgov-mcp", "namespace": "mcpgov-system"}, "spec": {}}),
         "MCP objects rendered"),
        ("an MCP flag while mcp is off", lambda d: ctr(d)["args"].append("--mcp-listen")
         or ctr(d)["args"].append("127.0.0.1:1"), "MCP flags while off"),
        ("a webhook configuration while admission is off", lambda d: d.append(
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
             "metadata": {"name": "x", "labels": ctr(d) and by_kind(d, "Deployment")[0]["metadata"]["labels"]},
             "webhooks": []}), "admission objects rendered"),
        ("POD_NAMESPACE hard-coded", lambda d: ctr(d)["env"].__setitem__(1, {"name": "POD_NAMESPACE", "value": "x"}), "POD_NAMESPACE"),
    ]
    bad = 0
    for name, mutate, want in mutations:
        docs = copy.deepcopy(base)
        mutate(docs)
        failures = check_docs(docs, v).failures
        hits = [f for f in failures if want in f]
        shown = (hits or failures or ["no failure"])[0]
        print(f"  {'ok' if hits else 'MISSED'}: {name} -> {shown[:110]}")
        bad += not hits
    return 1 if bad else 0


def pod(path):
    dep = by_kind(load(path), "Deployment")[0]
    tpl = dep["spec"]["template"]
    out = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": dep["metadata"]["name"] + "-pss", "namespace": dep["metadata"]["namespace"],
                        "labels": tpl["metadata"].get("labels", {})},
           "spec": tpl["spec"]}
    yaml.safe_dump(out, sys.stdout, sort_keys=False)
    return 0


def select(path, kinds):
    docs = [d for d in load(path) if d.get("kind") in kinds]
    yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
    return 0


def rules(path):
    for d in load(path):
        if d.get("kind") in ("ClusterRole", "Role"):
            where = d["kind"] + "/" + d["metadata"]["name"]
            if d["kind"] == "Role":
                where += f" (namespace {d['metadata']['namespace']})"
            print(where)
            for r in d["rules"]:
                groups = ",".join(g or '""' for g in r.get("apiGroups", []))
                names = f" names={','.join(r['resourceNames'])}" if r.get("resourceNames") else ""
                print(f"  {groups:15} {','.join(r['resources']):70} {','.join(r['verbs'])}{names}")
        elif d.get("kind") in ("ClusterRoleBinding", "RoleBinding"):
            s = d["subjects"][0]
            where = f"{d['kind']}/{d['metadata']['name']}"
            if d["kind"] == "RoleBinding":
                where += f" (namespace {d['metadata']['namespace']})"
            print(f"{where}: {d['roleRef']['kind']}/{d['roleRef']['name']} -> ServiceAccount {s['namespace']}/{s['name']}")
    return 0


def aggregate(path):
    """What kube-controller-manager's clusterrole-aggregation controller does, for a
    control plane without it: every ClusterRole with an aggregationRule gets the union of
    the rules of the ClusterRoles its selectors match (repeated until nothing changes, as
    view feeds edit feeds admin). Reads `kubectl get clusterroles -o json`, prints the
    changed roles as a List for `kubectl replace`."""
    with open(path) as f:
        roles = {r["metadata"]["name"]: r for r in json.load(f)["items"]}

    def selected(sel, r):
        if set(sel) - {"matchLabels"}:
            raise SystemExit(f"selector {sel}: only matchLabels is understood here")
        labels = r["metadata"].get("labels") or {}
        return all(labels.get(k) == x for k, x in (sel.get("matchLabels") or {}).items())

    changed = set()
    for _ in range(10):
        moved = False
        for name, role in sorted(roles.items()):
            agg = role.get("aggregationRule")
            if not agg:
                continue
            rules = []
            for other_name, other in sorted(roles.items()):
                if other_name == name:
                    continue
                if any(selected(sel, other) for sel in agg.get("clusterRoleSelectors") or []):
                    for r in other.get("rules") or []:
                        if r not in rules:
                            rules.append(r)
            if rules != (role.get("rules") or []):
                role["rules"] = rules
                changed.add(name)
                moved = True
        if not moved:
            break
    else:
        raise SystemExit("aggregation did not settle")
    out = {"apiVersion": "v1", "kind": "List", "items": [roles[n] for n in sorted(changed)]}
    json.dump(out, sys.stdout)
    return 0


def merge(base, over):
    for k, x in over.items():
        if x is None:
            base.pop(k, None)
        elif isinstance(x, dict) and isinstance(base.get(k), dict):
            merge(base[k], x)
        else:
            base[k] = x
    return base


def values(args):
    sep = args.index("--") if "--" in args else len(args)
    files, extra = args[:sep], args[sep + 1:]
    v = {}
    for f in files:
        with open(f) as fh:
            merge(v, yaml.safe_load(fh) or {})
    for kv in extra:
        k, x = kv.split("=", 1)
        v[k] = x
    json.dump(v, sys.stdout, indent=1)
    return 0


def coverage(chart):
    """Every value in values.yaml is described by values.schema.json and the README table."""
    import re
    with open(f"{chart}/values.yaml") as f:
        vals = yaml.safe_load(f)
    with open(f"{chart}/values.schema.json") as f:
        schema = json.load(f)
    with open(f"{chart}/README.md") as f:
        table = f.read().split("\n## Values\n", 1)[-1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", table, re.M))
    bad = 0

    def walk(v, sch, path):
        nonlocal bad
        for k, x in v.items():
            p = f"{path}.{k}" if path else k
            sub = (sch.get("properties") or {}).get(k)
            if sub is None:
                print(f"  {p}: not in values.schema.json")
                bad += 1
                continue
            recurse = isinstance(x, dict) and x and "properties" in sub
            if not recurse and not any(p == d or p.startswith(d + ".") for d in documented):
                print(f"  {p}: not in the README's values table")
                bad += 1
            if recurse:
                walk(x, sub, p)
            elif "type" not in sub and "anyOf" not in sub:
                print(f"  {p}: no type in the schema")
                bad += 1

    walk(vals, schema, "")

    def exists(path):
        cur = vals
        for part in path.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return False
            cur = cur[part]
        return True

    for d in sorted(documented):
        if not exists(d):
            print(f"  README documents {d}, which values.yaml lacks")
            bad += 1
    print(f"  {len(documented)} documented keys; {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "coverage":
        sys.exit(coverage(sys.argv[2]))
    if cmd == "values":
        sys.exit(values(sys.argv[2:]))
    if cmd == "render":
        sys.exit(check_render(sys.argv[2], sys.argv[3]))
    if cmd == "selftest":
        sys.exit(selftest(sys.argv[2], sys.argv[3]))
    if cmd == "pod":
        sys.exit(pod(sys.argv[2]))
    if cmd == "select":
        sys.exit(select(sys.argv[2], set(sys.argv[3:])))
    if cmd == "rules":
        sys.exit(rules(sys.argv[2]))
    if cmd == "aggregate":
        sys.exit(aggregate(sys.argv[2]))
    sys.exit(f"unknown command {cmd}")
