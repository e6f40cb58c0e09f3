#!/usr/bin/env python3
"""Time Toolgraph and mcpgov on one generated estate and check they agree.

Called by compare-toolgraph.sh: compare.py ESTATE_DIR RUNS TOOLGRAPH_BIN MCPGOV_BIN
Exit status 1 when the answers differ (the differing rows are printed).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

est, runs, TG, MG = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
meta = json.load(open(f"{est}/meta.json"))
NS = meta["namespace"]
TGDIR = f"{est}/toolgraph"
MGDIR = f"{est}/mcpgov"
AGENTS = meta["agents"]
QA, QP, QR = meta["query_agent"], meta["query_pair"], meta["query_resource"]
# Bundles for every agent, one process per agent. Toolgraph pays seconds per agent
# (~4 s at large), so above ALL_LIMIT agents it is timed on SAMPLE_N agents spread
# evenly over the list and the per-agent median is multiplied by the agent count
# (reported as an extrapolation). mcpgov does every agent unless that would take
# longer than MG_ALL_BUDGET seconds (judged from its one-agent bundle in the same run);
# then it is sampled and extrapolated the same way, and the table says so.
ALL_LIMIT = 60
SAMPLE_N = 20
MG_ALL_BUDGET = 240.0
if len(AGENTS) <= ALL_LIMIT:
    sample = AGENTS
else:
    sample = [AGENTS[i * len(AGENTS) // SAMPLE_N] for i in range(SAMPLE_N)]
bundle_mode = {"tg": set(), "mg": set()}  # per run: "all" or "sampled"



# Toolgraph refuses a YAML file over 5,000,000 bytes; gen_estate.py writes its
# governance indented (6.3 MB at large). The same document without whitespace (JSON is
# YAML) is 4.9 MB at large and is what Toolgraph ingests at every size.
TG_MAX_YAML = 5_000_000
TG_GOV = f"{TGDIR}/governance-compact.yaml"
with open(f"{TGDIR}/governance.yaml") as f:
    compact = json.dumps(json.load(f), separators=(",", ":")) + "\n"
if len(compact.encode()) > TG_MAX_YAML:
    sys.exit(f"{TG_GOV}: {len(compact.encode())} bytes, over Toolgraph's {TG_MAX_YAML}-byte limit")
with open(TG_GOV, "w") as f:
    f.write(compact)


def run(cmd, cwd=None, ok=(0,)):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in ok:
        sys.stderr.write(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}\n")
        sys.exit(3)
    return p.stdout


def timed(cmd, cwd=None, ok=(0,)):
    t = time.perf_counter()
    out = run(cmd, cwd, ok)
    return time.perf_counter() - t, out


times = {}  # step -> {"tg": [..], "mg": [..]}


def rec(step, side, secs):
    times.setdefault(step, {"tg": [], "mg": []})[side].append(secs)


mg_common = ["-f", MGDIR, "-n", NS]
# Toolgraph setup, untimed and done once: a previous crawl that still exposed the
# drifted tools, plus governance, so the timed crawl leaves them as Toolgraph drift
# (tool node, no EXPOSES). Each run starts from a copy of this graph (a minute saved
# per run at large); the copy's config points at its own database file.
base = os.path.abspath(f"{TGDIR}/setup")
shutil.rmtree(base, ignore_errors=True)
os.makedirs(base)
run([TG, "init"], base)
run([TG, "crawl", "--servers", f"{TGDIR}/servers-prev.yaml"], base)
run([TG, "ingest-manifest", "--governance", TG_GOV], base)
for r in range(runs):
    wd = os.path.abspath(f"{TGDIR}/run-{r}")
    shutil.rmtree(wd, ignore_errors=True)
    shutil.copytree(base, wd)
    cfg_path = f"{wd}/.toolgraph/config.json"
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["db_path"] = cfg["db_path"].replace(base, wd, 1)
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    steps = [
        ("crawl", [TG, "crawl", "--servers", f"{TGDIR}/servers.yaml"], None),
        ("ingest / check", [TG, "ingest-manifest", "--governance", TG_GOV],
         [MG, "check", *mg_common, "-o", "json"]),
        ("unsafe-tools 1 agent", [TG, "unsafe-tools", QA, "--all"],
         [MG, "query", "unsafe-tools", QA, *mg_common, "--all"]),
        ("check-access 1 pair", [TG, "check-access", *QP], [MG, "query", "check-access", *QP, *mg_common]),
        ("blast-radius 1 resource", [TG, "blast-radius", QR], [MG, "query", "blast-radius", QR, *mg_common]),
        ("audit-report", [TG, "audit-report"], [MG, "query", "audit-report", *mg_common]),
        ("bundle 1 agent (strict)", [TG, "policy", "compile", "--agent", QA, "--profile", "strict",
                                     "--output", f"{wd}/bundle-{QA}.json"],
         [MG, "bundle", QA, *mg_common]),
    ]
    for name, tcmd, mcmd in steps:
        # audit-report exits non-zero on status fail in neither tool by default; accept 0/1.
        rec(name, "tg", timed(tcmd, wd, ok=(0, 1))[0])
        if mcmd:
            rec(name, "mg", timed(mcmd, ok=(0, 1))[0])
    # all agents' bundles, one process per agent on both sides
    per = [timed([TG, "policy", "compile", "--agent", ag, "--profile", "strict",
                  "--output", f"{wd}/bundle-all.json"], wd)[0] for ag in sample]
    rec("bundles, all agents", "tg", sum(per) if len(sample) == len(AGENTS)
        else statistics.median(per) * len(AGENTS))
    bundle_mode["tg"].add("all" if len(sample) == len(AGENTS) else "sampled")
    mg_all = times["bundle 1 agent (strict)"]["mg"][-1] * len(AGENTS) <= MG_ALL_BUDGET
    mg_agents = AGENTS if mg_all else sample
    per = [timed([MG, "bundle", ag, *mg_common])[0] for ag in mg_agents]
    rec("bundles, all agents", "mg", sum(per) if len(mg_agents) == len(AGENTS)
        else statistics.median(per) * len(AGENTS))
    bundle_mode["mg"].add("all" if len(mg_agents) == len(AGENTS) else "sampled")
    # mcpgov evaluates every agent in one `check`; shown as its own row.
    rec("all agents, one process", "mg", times["ingest / check"]["mg"][-1])
    print(f"run {r + 1}/{runs} done", file=sys.stderr)

# ---------------------------------------------------------------- answers
wd = os.path.abspath(f"{TGDIR}/run-{runs - 1}")
strip = lambda s: s[len(NS) + 1:] if s and s.startswith(NS + "/") else s
CLS = {"Violation": "violation", "AuthorizedButGoverned": "authorized_but_governed"}
mismatches = []


def tg_json(*args):
    return json.loads(run([TG, *args], wd))


def mg_json(*args):
    return json.loads(run([MG, "query", *args, *mg_common]))


checked_rows = 0
for ag in meta["sample_agents"]:
    a = {(r["tool_key"], r["resource"], r["policy"], r["classification"]) for r in tg_json("unsafe-tools", ag, "--all")}
    b = {(strip(r["tool"]), r["resource"], strip(r["policy"]), CLS.get(r["classification"], r["classification"]))
         for r in mg_json("unsafe-tools", ag, "--all")["rows"]}
    checked_rows += len(a | b)
    for row in sorted(a - b):
        mismatches.append(f"unsafe-tools {ag}: only Toolgraph: {row}")
    for row in sorted(b - a):
        mismatches.append(f"unsafe-tools {ag}: only mcpgov:    {row}")

verdicts = {}
for ag, tool in meta["pairs"]:
    a = tg_json("check-access", ag, tool)
    b = mg_json("check-access", ag, tool)
    va, vb = a["verdict"], b["verdict"]
    verdicts[va] = verdicts.get(va, 0) + 1
    if va != vb:
        mismatches.append(f"check-access {ag} {tool}: Toolgraph {va}, mcpgov {vb}")
    elif va in ("DENY", "NOT_GRANTED"):  # NOT_GRANTED lists the deny rows granting would cross
        ea = {(e.get("resource"), e["policy"], e["classification"]) for e in a["deny_evidence"]}
        eb = {(p.get("resource"), strip(p["policy"]), CLS.get(p["classification"], p["classification"]))
              for p in b["denyPaths"]}
        if ea != eb:
            mismatches.append(f"check-access {ag} {tool}: deny paths differ: Toolgraph {sorted(ea)} mcpgov {sorted(eb)}")

a = tg_json("blast-radius", QR)
b = mg_json("blast-radius", QR)
ba = {(i["agent"], i["tool_key"]) for i in a["impacted"]}
# a tool that touches the resource but no agent may call: Toolgraph prints agent null,
# mcpgov an empty agent list
bb = {(strip(ag), strip(i["tool"])) for i in b["impacted"] for ag in (i["agents"] or [None])}
if ba != bb:
    mismatches.append(f"blast-radius {QR}: only Toolgraph {sorted(ba - bb)}; only mcpgov {sorted(bb - ba)}")

chk = json.loads(run([MG, "check", *mg_common, "-o", "json"], ok=(0, 1)))
tg_aud = tg_json("audit-report")
aud = tg_aud["summary"]["counts"]
mg_aud = mg_json("audit-report")
print("\nAnswer check", file=sys.stderr)
print(f"  unsafe-tools: {len(meta['sample_agents'])} agents, {checked_rows} distinct rows compared", file=sys.stderr)
print(f"  check-access: {len(meta['pairs'])} pairs, Toolgraph verdicts {verdicts}", file=sys.stderr)
print(f"  blast-radius {QR}: {len(ba)} (agent, tool) pairs", file=sys.stderr)
print(f"  Toolgraph audit counts: violations {aud['unsafe_violations']}, exceptions "
      f"{aud['authorized_but_governed']}, drifted {aud['drifted_tools']}", file=sys.stderr)
mg_summary = chk.get("summary", {k: v for k, v in chk.items() if not isinstance(v, list)})
print(f"  mcpgov check summary: {json.dumps(mg_summary)[:300]}", file=sys.stderr)
# The audit reports count alike: violation and exception rows, drifted tools (a tool
# two objects name is one; `check`'s summary counts Drift findings, one per object),
# and decide the same status (fail on violations or drift, warn on other findings).
mg_counts = mg_aud["counts"]
for tg_name, mg_name in (("unsafe_violations", "violations"), ("authorized_but_governed", "exceptions"),
                         ("drifted_tools", "drift")):
    if aud.get(tg_name) != mg_counts.get(mg_name):
        mismatches.append(f"audit counts: Toolgraph {tg_name} {aud.get(tg_name)}, "
                          f"mcpgov {mg_name} {mg_counts.get(mg_name)}")
if tg_aud["status"] != mg_aud["status"]:
    mismatches.append(f"audit status: Toolgraph {tg_aud['status']}, mcpgov {mg_aud['status']}")

# ---------------------------------------------------------------- table
def fmt(x):
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s" if x < 120 else f"{x / 60:.1f} min"


print(f"\nEstate: {meta['size']} (seed {meta['seed']}): " + ", ".join(f"{k} {v}" for k, v in meta["counts"].items()))
print(f"Median of {runs} run(s); each step is one CLI process (start-up included) unless noted.\n")
print(f"| step | Toolgraph 0.4.0 (Ladybug) | mcpgov | Toolgraph / mcpgov |")
print(f"|---|---|---|---|")
for step, v in times.items():
    ta = statistics.median(v["tg"]) if v["tg"] else None
    tb = statistics.median(v["mg"]) if v["mg"] else None
    ratio = "—" if not (ta and tb) else f"{ta / tb:.0f}×" if ta / tb >= 10 else f"{ta / tb:.1f}×"
    label = step
    if step == "bundles, all agents":
        sampled = [n for side, n in (("tg", "Toolgraph"), ("mg", "mcpgov")) if "sampled" in bundle_mode[side]]
        label += f" ({len(AGENTS)} processes each"
        if sampled:
            label += (f"; {' and '.join(sampled)} timed on {len(sample)} agents, "
                      f"median × {len(AGENTS)}: extrapolated")
        label += ")"
    if step == "all agents, one process":
        label = "all agents evaluated in one process (mcpgov `check`)"
    if step == "crawl":
        label = "crawl (Toolgraph: stdio MCP servers; mcpgov: none, catalog file)"
    if step == "ingest / check":
        label = "ingest governance (Toolgraph) / `check` ingest+evaluate all (mcpgov)"
    print(f"| {label} | {fmt(ta)} | {fmt(tb)} | {ratio} |")

one_q = statistics.median(times["unsafe-tools 1 agent"]["tg"])
whole = statistics.median(times["ingest / check"]["mg"])
print(f"\nWhole estate evaluated by mcpgov (`check`, one process): {fmt(whole)}; Toolgraph "
      f"answering one question (unsafe-tools, 1 agent): {fmt(one_q)}; ratio {one_q / whole:.1f}×.")

if mismatches:
    print(f"\nANSWER MISMATCHES ({len(mismatches)}):")
    for m in mismatches:
        print("  " + m)
    sys.exit(1)
print("\nAnswers agree: unsafe-tools rows, check-access verdicts (and deny paths of DENY and "
      "NOT_GRANTED), blast-radius, audit counts and status.")
