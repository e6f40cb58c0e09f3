#!/usr/bin/env python3
"""Static checks of pods that run the mcpgov gateway as a sidecar, for e2e/chart/test.sh
(examples/gateway and the chart README's snippet).

  sidecar.py check FILE...          every workload with a gateway container in FILEs wires
                                    it safely (rules below); MCPServers and Agents in the
                                    same files are used to check names
  sidecar.py selftest FILE...       the checker notices mutations of those workloads
  sidecar.py snippet README.md      print the YAML block after the marker line
                                    <!-- sidecar-snippet --> (the chart README's patch)
  sidecar.py pods FILE...           print each workload's pod template as a Pod (for a
                                    Pod Security enforcement dry-run)
  sidecar.py flags FILE HELP        every flag the gateway is given appears in HELP (the
                                    output of `mcpgov-gateway --help`)
  sidecar.py smoke DIR GATEWAY MCPGOV WORK
                                    run the gateway binary with the flags and environment
                                    of DIR's Deployment, its mounts laid out under WORK
                                    (the bundle from `mcpgov bundle AGENT -f DIR`, the
                                    Secrets' keys, a random audit key): it must get ready
                                    with that bundle

Rules: the bundle ConfigMap is `<agent>-mcpgov-bundle` (or the Agent's
spec.bundle.configMapName), mounted whole at --bundle-dir (never subPath: a subPath
mount is not updated); no container but the gateway gets a Secret (volume, projected
source, env or envFrom); each header Secret of the MCPServers is mounted at
<credentials-dir>/<secret name>; the agent namespace is the pod's; MCP listens on
loopback only; probes on /healthz and /readyz at the ops port; no shared process
namespace; no ServiceAccount token.

Exits 1 with one line per failed expectation.
"""
import copy
import sys

import yaml

GATEWAY_FLAG = "--bundle-dir"
BUNDLE_SUFFIX = "-mcpgov-bundle"
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"}
DEFAULTS = {"--credentials-dir": "/var/run/mcpgov/credentials", "--listen": "127.0.0.1:8480",
            "--ops-listen": "0.0.0.0:8481"}
ENV = {"--bundle-dir": "MCPGOV_BUNDLE_DIR", "--agent-name": "MCPGOV_AGENT_NAME",
       "--agent-namespace": "MCPGOV_AGENT_NAMESPACE", "--listen": "MCPGOV_LISTEN",
       "--ops-listen": "MCPGOV_OPS_LISTEN"}


def load(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def containers(spec):
    """(kind, container) for every container of a pod spec."""
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(kind) or []:
            yield kind, c


def is_gateway(c):
    return any(a == GATEWAY_FLAG or a.startswith(GATEWAY_FLAG + "=") for a in (c.get("command") or []) + (c.get("args") or []))


def flag(c, name):
    """A flag's value: from args (`--f v` or `--f=v`), else its env var (value or
    ('fieldRef', path)), else the default; None when absent."""
    args = (c.get("command") or []) + (c.get("args") or [])
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    for e in c.get("env") or []:
        if e.get("name") == ENV.get(name):
            if "value" in e:
                return e["value"]
            ref = (e.get("valueFrom") or {}).get("fieldRef")
            if ref:
                return ("fieldRef", ref.get("fieldPath"))
    return DEFAULTS.get(name)


def secret_sources(vol):
    """Secret names a volume carries (secret volume or projected secret sources)."""
    if "secret" in vol:
        return [vol["secret"].get("secretName")]
    return [s["secret"].get("name") for s in (vol.get("projected") or {}).get("sources") or [] if "secret" in s]


def probe_ok(c, kind, path, port):
    p = (c.get(kind) or {}).get("httpGet") or {}
    want = p.get("port")
    if isinstance(want, str):  # a named port
        want = next((x.get("containerPort") for x in c.get("ports") or [] if x.get("name") == want), None)
    return p.get("path") == path and want == port


def check_pod(where, ns, spec, docs):
    fails = []
    fail = lambda m: fails.append(f"{where}: {m}")  # noqa: E731
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    gws = [c for _, c in containers(spec) if is_gateway(c)]
    if len(gws) != 1:
        return [f"{where}: {len(gws)} gateway containers (want 1)"]
    gw = gws[0]
    gname = gw.get("name")

    # The bundle: the operator's ConfigMap for this agent, the whole volume.
    agent = flag(gw, "--agent-name")
    if not agent:
        fail("the gateway has no --agent-name")
    want_cm = f"{agent}{BUNDLE_SUFFIX}"
    for a in docs:
        if a.get("kind") == "Agent" and a["metadata"].get("name") == agent and a["metadata"].get("namespace", ns) == ns:
            want_cm = ((a.get("spec") or {}).get("bundle") or {}).get("configMapName") or want_cm
    bdir = flag(gw, "--bundle-dir")
    mounts = [m for m in gw.get("volumeMounts") or [] if m.get("mountPath", "").rstrip("/") == str(bdir).rstrip("/")]
    if len(mounts) != 1:
        fail(f"nothing mounted at --bundle-dir {bdir}")
        bundle_vols = set()
    else:
        vol = vols.get(mounts[0]["name"]) or {}
        cm = (vol.get("configMap") or {}).get("name")
        if cm != want_cm:
            fail(f"--bundle-dir {bdir} holds {cm or 'no ConfigMap'}, not {want_cm} (the operator's name for agent {agent})")
        items = (vol.get("configMap") or {}).get("items")
        if items is not None and not any(i.get("key") == "bundle.json" and i.get("path") == "bundle.json" for i in items):
            fail("the bundle volume's items leave out bundle.json")
        if (vol.get("configMap") or {}).get("optional"):
            fail("the bundle volume is optional (a pod without its bundle would start)")
        bundle_vols = {mounts[0]["name"]}
    bundle_vols |= {n for n, v in vols.items() if str((v.get("configMap") or {}).get("name", "")).endswith(BUNDLE_SUFFIX)}
    for kind, c in containers(spec):
        for m in c.get("volumeMounts") or []:
            if m.get("name") in bundle_vols and ("subPath" in m or "subPathExpr" in m):
                fail(f"{kind} {c.get('name')} mounts the bundle volume with subPath (never updated)")

    # Secrets: the gateway's only.
    secret_vols = {n: secret_sources(v) for n, v in vols.items() if secret_sources(v)}
    for kind, c in containers(spec):
        if c is gw:
            continue
        cn = f"{kind} {c.get('name')}"
        for m in c.get("volumeMounts") or []:
            if m.get("name") in secret_vols:
                fail(f"{cn} mounts Secret {', '.join(secret_vols[m['name']])} (only the gateway may)")
        for e in c.get("env") or []:
            if "secretKeyRef" in (e.get("valueFrom") or {}):
                fail(f"{cn} gets Secret {e['valueFrom']['secretKeyRef'].get('name')} in env {e.get('name')}")
        for e in c.get("envFrom") or []:
            if "secretRef" in e:
                fail(f"{cn} gets Secret {e['secretRef'].get('name')} through envFrom")
    if spec.get("automountServiceAccountToken") is not False:
        fail("automountServiceAccountToken is not false (the token would be a credential in the agent container)")
    if spec.get("shareProcessNamespace"):
        fail("shareProcessNamespace: the agent could reach the gateway's files through /proc")

    # Header Secrets: at <credentials-dir>/<name>, in the gateway.
    cdir = str(flag(gw, "--credentials-dir")).rstrip("/")
    gmounts = {m["name"]: m for m in gw.get("volumeMounts") or []}
    for s in docs:
        if s.get("kind") != "MCPServer" or s["metadata"].get("namespace", ns) != ns:
            continue
        for h in ((s.get("spec") or {}).get("endpoint") or {}).get("headers") or []:
            secret = h["valueFrom"]["secretKeyRef"]["name"]
            at = [m for n, m in gmounts.items() if secret in secret_vols.get(n, [])]
            if not at:
                fail(f"Secret {secret} (header {h['name']} of MCPServer {s['metadata']['name']}) is not mounted in the gateway")
            for m in at:
                if m.get("mountPath", "").rstrip("/") != f"{cdir}/{secret}" or "subPath" in m:
                    fail(f"Secret {secret} is mounted at {m.get('mountPath')}, the gateway reads {cdir}/{secret}")
    for n, m in gmounts.items():
        if n in secret_vols and not m.get("readOnly"):
            fail(f"the gateway's mount of Secret volume {n} is not readOnly")

    # The agent served is in the pod's namespace; MCP on loopback; probes on the ops port.
    agent_ns = flag(gw, "--agent-namespace")
    if agent_ns != ("fieldRef", "metadata.namespace") and agent_ns != ns:
        fail(f"--agent-namespace is {agent_ns}, not the pod's namespace (the bundle ConfigMap is there)")
    host = str(flag(gw, "--listen")).rsplit(":", 1)[0].strip("[]")
    if host not in ("127.0.0.1", "::1", "localhost"):
        fail(f"--listen {flag(gw, '--listen')}: MCP routes reachable from outside the pod, with the gateway's credentials")
    ops = int(str(flag(gw, "--ops-listen")).rsplit(":", 1)[1])
    for kind, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        if not probe_ok(gw, kind, path, ops):
            fail(f"{gname}: {kind} is not GET {path} on port {ops}")
    if gw in (spec.get("initContainers") or []) and gw.get("restartPolicy") != "Always":
        fail(f"{gname} is an init container without restartPolicy: Always (it would block the agent)")
    return fails


def workloads(docs):
    for d in docs:
        if d.get("kind") in WORKLOADS:
            yield d, d["spec"]["template"]


def check(docs):
    fails = []
    seen = 0
    for d, tpl in workloads(docs):
        if not any(is_gateway(c) for _, c in containers(tpl["spec"])):
            continue
        seen += 1
        where = f"{d['kind']}/{d['metadata']['name']}"
        fails += check_pod(where, d["metadata"].get("namespace", "default"), tpl["spec"], docs)
    if not seen:
        fails.append("no workload with a gateway container")
    return fails


def selftest(docs):
    if check(docs):
        print("  the input itself fails the check:")
        for f in check(docs):
            print(f"    {f}")
        return 1

    def pod(ds):
        return next(tpl["spec"] for d, tpl in workloads(ds) if any(is_gateway(c) for _, c in containers(tpl["spec"])))

    def gw(spec):
        return next(c for _, c in containers(spec) if is_gateway(c))

    def agent(spec):
        return next(c for _, c in containers(spec) if not is_gateway(c))

    def bundle_mount(spec):
        return next(m for m in gw(spec)["volumeMounts"] if m["mountPath"].rstrip("/") == str(flag(gw(spec), "--bundle-dir")).rstrip("/"))

    def secret_vol(spec):
        return next(v for v in spec["volumes"] if "secret" in v)

    def set_arg(c, name, value):
        c["args"] = [a for a in c.get("args") or [] if not a.startswith(name)] + [f"{name}={value}"]

    mutations = [
        ("bundle mounted with subPath", lambda s: bundle_mount(s).update(subPath="bundle.json"), "with subPath"),
        ("agent mounts the bundle with subPath", lambda s: agent(s).setdefault("volumeMounts", []).append(
            {"name": bundle_mount(s)["name"], "mountPath": "/b/bundle.json", "subPath": "bundle.json"}), "with subPath"),
        ("bundle ConfigMap of another agent", lambda s: next(v for v in s["volumes"] if v["name"] == bundle_mount(s)["name"])
         ["configMap"].update(name="someone-else-mcpgov-bundle"), "not "),
        ("bundle volume optional", lambda s: next(v for v in s["volumes"] if v["name"] == bundle_mount(s)["name"])
         ["configMap"].update(optional=True), "optional"),
        ("agent mounts a Secret", lambda s: agent(s).setdefault("volumeMounts", []).append(
            {"name": secret_vol(s)["name"], "mountPath": "/secrets"}), "only the gateway may"),
        ("agent mounts a projected Secret", lambda s: (s["volumes"].append(
            {"name": "sneaky", "projected": {"sources": [{"secret": {"name": "x"}}]}}),
            agent(s).setdefault("volumeMounts", []).append({"name": "sneaky", "mountPath": "/p"})), "only the gateway may"),
        ("agent env from a secretKeyRef", lambda s: agent(s).setdefault("env", []).append(
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}}), "in env TOKEN"),
        ("agent envFrom a Secret", lambda s: agent(s).setdefault("envFrom", []).append(
            {"secretRef": {"name": "t"}}), "through envFrom"),
        ("credentials at the wrong path", lambda s: next(m for m in gw(s)["volumeMounts"] if m["name"] == secret_vol(s)["name"])
         .update(mountPath="/var/run/secrets/token"), "the gateway reads"),
        ("shared process namespace", lambda s: s.update(shareProcessNamespace=True), "shareProcessNamespace"),
        ("ServiceAccount token mounted", lambda s: s.pop("automountServiceAccountToken"), "automountServiceAccountToken"),
        ("MCP listening on every address", lambda s: set_arg(gw(s), "--listen", "0.0.0.0:8480"), "reachable from outside"),
        ("readiness on the MCP port", lambda s: gw(s)["readinessProbe"]["httpGet"].update(port=8480), "readinessProbe"),
        ("liveness on /readyz", lambda s: gw(s)["livenessProbe"]["httpGet"].update(path="/readyz"), "livenessProbe"),
        ("agent namespace hard-coded elsewhere", lambda s: set_arg(gw(s), "--agent-namespace", "other"), "not the pod's namespace"),
        ("no gateway", lambda s: gw(s)["args"].clear(), "no workload with a gateway"),
    ]
    bad = 0
    for name, mutate, want in mutations:
        ds = copy.deepcopy(docs)
        mutate(pod(ds))
        fails = check(ds)
        hits = [f for f in fails if want in f]
        print(f"  {'ok' if hits else 'MISSED'}: {name} -> {(hits or fails or ['no failure'])[0][:110]}")
        bad += not hits
    return 1 if bad else 0


def snippet(readme):
    lines = open(readme).read().split("\n")
    try:
        i = lines.index("<!-- sidecar-snippet -->")
    except ValueError:
        sys.exit(f"{readme}: no <!-- sidecar-snippet --> marker")
    if lines[i + 1] != "```yaml" or "```" not in lines[i + 2:]:
        sys.exit(f"{readme}: the marker is not followed by a ```yaml block")
    end = lines.index("```", i + 2)
    print("\n".join(lines[i + 2:end]))
    return 0


def pods(docs):
    out = []
    for d, tpl in workloads(docs):
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": d["metadata"]["name"] + "-pss", "namespace": d["metadata"].get("namespace"),
                                 "labels": (tpl.get("metadata") or {}).get("labels", {})},
                    "spec": tpl["spec"]})
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)
    return 0


def flags(docs, help_path):
    help_text = open(help_path).read()
    bad = 0
    seen = 0
    for d, tpl in workloads(docs):
        for _, c in containers(tpl["spec"]):
            if not is_gateway(c):
                continue
            seen += 1
            for a in (c.get("args") or []):
                if a.startswith("--"):
                    name = a.split("=", 1)[0]
                    known = f"{name} " in help_text or f"{name}=" in help_text or f"{name}\n" in help_text
                    print(f"  {'ok' if known else 'UNKNOWN'}: {name}")
                    bad += not known
            for e in c.get("env") or []:
                known = f"[env: {e['name']}=" in help_text
                print(f"  {'ok' if known else 'UNKNOWN'}: env {e['name']}")
                bad += not known
    if not seen:
        print("  no gateway container")
        return 1
    return 1 if bad else 0


def smoke(example, gateway, mcpgov, work):
    import glob
    import os
    import secrets
    import socket
    import subprocess
    import time
    import urllib.request

    docs = load(sorted(glob.glob(os.path.join(example, "*.yaml"))))
    d, tpl = next((d, t) for d, t in workloads(docs) if any(is_gateway(c) for _, c in containers(t["spec"])))
    spec, ns = tpl["spec"], d["metadata"].get("namespace", "default")
    gw = next(c for _, c in containers(spec) if is_gateway(c))
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    agent = flag(gw, "--agent-name")

    def under(path):
        return os.path.join(work, path.lstrip("/"))

    # The mounts, as the kubelet would fill them.
    for m in gw.get("volumeMounts") or []:
        v, at = vols[m["name"]], under(m["mountPath"])
        os.makedirs(at, exist_ok=True)
        if "configMap" in v:
            out = subprocess.run([mcpgov, "bundle", agent, "-f", example], capture_output=True, check=True)
            open(os.path.join(at, "bundle.json"), "wb").write(out.stdout)
        for name in secret_sources(v):
            keys = [h["valueFrom"]["secretKeyRef"]["key"] for s in docs if s.get("kind") == "MCPServer"
                    for h in (s["spec"]["endpoint"].get("headers") or []) if h["valueFrom"]["secretKeyRef"]["name"] == name]
            for k in keys or ["key"]:
                open(os.path.join(at, k), "w").write(("Bearer smoke-test" if keys else secrets.token_hex(32)) + "\n")

    def port():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        return p

    ops = port()
    args, env = [], dict(os.environ)
    path_flags = ("--bundle-dir", "--credentials-dir", "--audit-key-file")
    for a in gw.get("args") or []:
        name, _, val = a.partition("=")
        if name in ("--listen", "--ops-listen"):
            continue
        args.append(f"{name}={under(val)}" if name in path_flags and val else a)
    for e in gw.get("env") or []:
        ref = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        env[e["name"]] = ns if ref == "metadata.namespace" else e.get("value", "")
    args += [f"--listen=127.0.0.1:{port()}", f"--ops-listen=127.0.0.1:{ops}"]
    print("  mcpgov-gateway " + " ".join(a.replace(work, "$WORK") for a in args))
    log = open(os.path.join(work, "gateway.log"), "wb")
    proc = subprocess.Popen([gateway] + args, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            if proc.poll() is not None:
                print(f"  the gateway exited ({proc.returncode}):")
                print(open(os.path.join(work, "gateway.log")).read()[-2000:])
                return 1
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{ops}/readyz", timeout=2).read().decode()
                print(f"  ok: /readyz 200 with the bundle of {ns}/{agent}: {body.strip()[:90]}")
                return 0
            except OSError:
                time.sleep(0.2)
        print("  not ready in 30s:")
        print(open(os.path.join(work, "gateway.log")).read()[-2000:])
        return 1
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "check":
        fails = check(load(args))
        for f in fails:
            print(f)
        if not fails:
            print("ok: bundle mounted whole as <agent>-mcpgov-bundle, Secrets in the gateway only, "
                  "credentials at <credentials-dir>/<secret>, loopback MCP, probes on the ops port")
        sys.exit(1 if fails else 0)
    if cmd == "selftest":
        sys.exit(selftest(load(args)))
    if cmd == "snippet":
        sys.exit(snippet(args[0]))
    if cmd == "pods":
        sys.exit(pods(load(args)))
    if cmd == "smoke":
        sys.exit(smoke(*args))
    if cmd == "flags":
        sys.exit(flags(load(args[:1]), args[1]))
    sys.exit(f"unknown command {cmd}")
