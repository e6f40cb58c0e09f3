#!/usr/bin/env python3
"""Deterministic synthetic MCP tool estate, written for both mcpgov and Toolgraph.

Usage: gen_estate.py OUT_DIR [small|medium|large] [--seed N] [--python PY] [--server-script PATH]
                    [--endpoint-base URL]

Writes
  OUT/mcpgov/governance.yaml   MCPServers (spec + dataAccess), Deny Policies, Agents, Grants
  OUT/mcpgov/catalog.yaml      the same MCPServers with status.tools (the crawled catalog)
  OUT/toolgraph/servers.yaml   one stdio server per MCPServer, served by bench_server.py
  OUT/toolgraph/governance.yaml
  OUT/toolgraph/estate.json    tools per server (read by bench_server.py)
  OUT/toolgraph/servers-prev.yaml, estate-prev.json  an earlier crawl that still had the
                               drifted tools (Toolgraph needs it to see drift, not a typo)
  OUT/meta.json                the agents, pairs and resources the benchmark asks about

--endpoint-base http://127.0.0.1:PORT points every MCPServer at URL/SERVER/mcp, where
`bench_server.py --http PORT OUT/toolgraph/estate.json` serves them all (the operator
bench); without it the URLs are in-cluster placeholders.

Only what both tools express is generated: concrete URIs, concrete `server::tool`
keys, Deny policies over resources, expected exceptions (one namespace), and a little
drift (granted tools that no server exposes). Every document is JSON, which is YAML.
"""
import argparse
import json
import os
import random

NS = "bench"
SIZES = {
    #          servers tools/srv agents policies grants/agent resources res/policy
    "small": dict(servers=2, tools=10, agents=5, policies=3, grants=5, resources=15, per_policy=2),
    "medium": dict(servers=10, tools=50, agents=50, policies=20, grants=15, resources=400, per_policy=5),
    "large": dict(servers=50, tools=200, agents=500, policies=100, grants=30, resources=4000, per_policy=10),
}


def prov(ev):
    return {"source": "OperatorAsserted", "confidence": "High", "evidence": ev}


def tg_prov(ev):
    return {"source": "operator_asserted", "confidence": "high", "evidence": ev}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("size", nargs="?", default="medium", choices=sorted(SIZES))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--python", default="python3", help="interpreter Toolgraph starts the server with")
    ap.add_argument("--server-script", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_server.py"))
    ap.add_argument("--endpoint-base", metavar="URL",
                    help="MCPServer endpoints at URL/SERVER/mcp (bench_server.py --http) instead of placeholders")
    a = ap.parse_args()
    p = SIZES[a.size]
    rng = random.Random(f"{a.seed}:{a.size}")

    servers = [f"srv-{i:02d}" for i in range(p["servers"])]
    tools = {s: [f"tool_{j:03d}" for j in range(p["tools"])] for s in servers}
    resources = [f"file:///data/r{k:05d}" for k in range(p["resources"])]
    policies = [f"pol-{i:03d}" for i in range(p["policies"])]
    agents = [f"agent-{i:03d}" for i in range(p["agents"])]

    # dataAccess: 80% of tools touch 1-2 resources, the rest stay unmapped.
    access = {}  # (server, tool) -> [(uri, mode)]
    for s in servers:
        for t in tools[s]:
            if rng.random() < 0.8:
                uris = rng.sample(resources, rng.randint(1, 2))
                access[(s, t)] = [(u, rng.choice(["READS", "WRITES"])) for u in uris]
    # Deny policies, each governing a few resources (a resource may sit under several).
    governs = {pol: sorted(rng.sample(resources, p["per_policy"])) for pol in policies}
    gov_of = {}
    for pol, uris in governs.items():
        for u in uris:
            gov_of.setdefault(u, []).append(pol)

    all_keys = [(s, t) for s in servers for t in tools[s]]
    grants = {}  # agent -> [key strings]
    exceptions = {}  # agent -> [dict(tool, policy, resource|None, reason)]
    drift = {}
    for i, ag in enumerate(agents):
        keys = rng.sample(all_keys, min(p["grants"], len(all_keys)))
        grants[ag] = [f"{s}::{t}" for s, t in sorted(keys)]
        if i % 7 == 3:  # a little drift: granted, but no server exposes it
            ghost = f"{rng.choice(servers)}::ghost_{i:03d}"
            drift[ag] = ghost
            grants[ag].append(ghost)
        # expected exceptions for some agents, only where a deny path exists
        reach = sorted(
            (f"{s}::{t}", u, pol)
            for s, t in keys
            for u, _ in access.get((s, t), [])
            for pol in gov_of.get(u, [])
        )
        if reach and i % 3 == 0:
            picks = rng.sample(reach, min(len(reach), 2))
            exceptions[ag] = []
            for n, (key, u, pol) in enumerate(picks):
                exceptions[ag].append(
                    {"tool": key, "policy": pol, "resource": u if n == 0 else None,
                     "reason": f"by design: {ag} needs {key} (ticket BENCH-{i}-{n})"})

    def endpoint(s):
        if a.endpoint_base:
            return f"{a.endpoint_base.rstrip('/')}/{s}/mcp"
        return f"http://{s}.{NS}.svc:8080/mcp"

    # ---- mcpgov ----
    os.makedirs(f"{a.out}/mcpgov", exist_ok=True)
    docs = []
    for s in servers:
        da = []
        for t in tools[s]:
            for u, mode in access.get((s, t), []):
                da.append({"tool": t, "resource": u, "mode": "Reads" if mode == "READS" else "Writes",
                           "provenance": prov(f"bench/{s}.py::{t}")})
        docs.append({"apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
                     "metadata": {"name": s, "namespace": NS},
                     "spec": {"endpoint": {"url": endpoint(s)}, "dataAccess": da}})
    for pol in policies:
        docs.append({"apiVersion": "mcpgov.io/v1alpha1", "kind": "Policy",
                     "metadata": {"name": pol, "namespace": NS},
                     "spec": {"effect": "Deny", "description": f"synthetic deny {pol}",
                              "governs": {"resources": [{"uri": u, "provenance": prov(f"BENCH-{pol}")}
                                                        for u in governs[pol]]}}})
    for ag in agents:
        docs.append({"apiVersion": "mcpgov.io/v1alpha1", "kind": "Agent",
                     "metadata": {"name": ag, "namespace": NS},
                     "spec": {"description": f"synthetic agent {ag}", "profile": "Strict"}})
        spec = {"agent": ag, "tools": grants[ag], "provenance": prov(f"BENCH-grant-{ag}")}
        if ag in exceptions:
            spec["expectedExceptions"] = [
                {k: v for k, v in e.items() if v is not None} for e in exceptions[ag]]
        docs.append({"apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
                     "metadata": {"name": f"{ag}-grant", "namespace": NS}, "spec": spec})
    with open(f"{a.out}/mcpgov/governance.yaml", "w") as f:
        f.write("\n---\n".join(json.dumps(d) for d in docs) + "\n")
    catalog = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
         "metadata": {"name": s, "namespace": NS},
         "spec": {"endpoint": {"url": endpoint(s)}},
         "status": {"protocolVersion": "2025-11-25", "serverInfo": {"name": s, "version": "1.0.0"},
                    "lastSuccessfulCrawlTime": "2026-11-01T00:00:00Z", "toolCount": len(tools[s]),
                    "tools": [{"name": t, "description": f"Synthetic tool {t} of {s}."} for t in tools[s]]}}
        for s in servers]}
    with open(f"{a.out}/mcpgov/catalog.yaml", "w") as f:
        f.write(json.dumps(catalog) + "\n")

    # ---- Toolgraph ----
    os.makedirs(f"{a.out}/toolgraph", exist_ok=True)
    estate_json = os.path.abspath(f"{a.out}/toolgraph/estate.json")
    with open(estate_json, "w") as f:
        json.dump({s: tools[s] for s in servers}, f)
    # Toolgraph's drift is "a Tool node with no live EXPOSES": the ghost tools were
    # exposed by an earlier crawl (servers-prev.yaml) and are gone in the current one.
    prev = {s: list(tools[s]) for s in servers}
    for ghost in drift.values():
        gs, gt = ghost.split("::")
        prev[gs].append(gt)
    prev_json = os.path.abspath(f"{a.out}/toolgraph/estate-prev.json")
    with open(prev_json, "w") as f:
        json.dump(prev, f)
    for fname, est in (("servers.yaml", estate_json), ("servers-prev.yaml", prev_json)):
        with open(f"{a.out}/toolgraph/{fname}", "w") as f:
            f.write(json.dumps({"servers": [
                {"name": s, "transport": "stdio", "command": a.python,
                 "args": [a.server_script, est, s]} for s in servers]}) + "\n")
    gov = {
        "agents": agents,
        "policies": [{"id": pol, "effect": "DENY", "scope": "bench", "description": f"synthetic deny {pol}"}
                     for pol in policies],
        "grants": [{"agent": ag, "tool": k, "granted_by": "bench", "provenance": tg_prov(f"BENCH-grant-{ag}")}
                   for ag in agents for k in grants[ag]],
        "data_access": [{"tool": f"{s}::{t}", "resource": u, "mode": mode, "provenance": tg_prov(f"bench/{s}.py::{t}")}
                        for s in servers for t in tools[s] for u, mode in access.get((s, t), [])],
        "governed_by": {},
        "expected_exceptions": [
            {k: v for k, v in dict(agent=ag, **e).items() if v is not None}
            for ag in agents for e in exceptions.get(ag, [])],
    }
    for u in sorted(gov_of):
        gov["governed_by"][u] = [{"policy": pol, "provenance": tg_prov(f"BENCH-{pol}")} for pol in gov_of[u]]
    with open(f"{a.out}/toolgraph/governance.yaml", "w") as f:
        f.write(json.dumps(gov, indent=1) + "\n")

    # ---- what the benchmark asks ----
    exc_agents = sorted(exceptions)
    drift_agents = sorted(drift)
    sample_agents = sorted(set(agents[:5] + exc_agents[:3] + drift_agents[:2]))
    # query agent: the agent with the most deny reach among the first ones with an exception
    q_agent = exc_agents[0] if exc_agents else agents[0]
    pairs = []
    for ag in sample_agents:
        pairs += [(ag, k) for k in grants[ag][:3]]                     # granted
        others = [f"{s}::{t}" for s, t in all_keys if f"{s}::{t}" not in grants[ag]]
        pairs.append((ag, rng.choice(others)))                         # not granted
        pairs.append((ag, f"{servers[0]}::no_such_tool"))              # not found
        if ag in drift:
            pairs.append((ag, drift[ag]))                              # drifted grant
        for e in exceptions.get(ag, []):
            pairs.append((ag, e["tool"]))                              # excepted reach
    q_pair = next(((ag, e["tool"]) for ag in exc_agents for e in exceptions[ag]), pairs[0])
    # blast radius: the governed resource reached by most tools
    reach_count = {}
    for (s, t), acc in access.items():
        for u, _ in acc:
            if u in gov_of:
                reach_count[u] = reach_count.get(u, 0) + 1
    q_res = max(sorted(reach_count), key=lambda u: reach_count[u]) if reach_count else resources[0]
    meta = {"size": a.size, "seed": a.seed, "namespace": NS, "agents": agents,
            "sample_agents": sample_agents, "pairs": pairs, "query_agent": q_agent,
            "query_pair": list(q_pair), "query_resource": q_res,
            "counts": {"servers": len(servers), "tools": len(all_keys), "agents": len(agents),
                       "policies": len(policies), "grants": sum(len(g) for g in grants.values()),
                       "data_access": sum(len(v) for v in access.values()),
                       "expected_exceptions": sum(len(v) for v in exceptions.values()),
                       "drifted_grants": len(drift)}}
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta["counts"]))


if __name__ == "__main__":
    main()
