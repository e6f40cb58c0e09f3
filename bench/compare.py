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
# all-agent bundles: Toolgraph pays ~1 s of start-up per agent; above 60 agents time
# the first 50 and extrapolate linearly (reported as such).
ALL_LIMIT = 60
all_sample = AGENTS if len(AGENTS) <= ALL_LIMIT else AGENTS[:50]
extrapolated = len(all_sample) < len(AGENTS)


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


def tg(*args, cwd, ok=(0,)):
    return [TG, *args]


times = {}  # step -> {"tg": [..], "mg": [..]}


def rec(step, side, secs):
    times.setdefault(step, {"tg": [], "mg": []})[side].append(secs)


mg_common = ["-f", MGDIR, "-n", NS]
for r in range(runs):
    wd = os.path.abspath(f"{TGDIR}/run-{r}")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    # Setup, untimed: a previous crawl that still exposed the drifted tools, plus
    # governance, so the timed crawl leaves them as Toolgraph drift (tool node, no EXPOSES).
    run([TG, "init"], wd)
    run([TG, "crawl", "--servers", f"{TGDIR}/servers-prev.yaml"], wd)
    run([TG, "ingest-manifest", "--governance", f"{TGDIR}/governance.yaml"], wd)
    steps = [
        ("crawl", [TG, "crawl", "--servers", f"{TGDIR}/servers.yaml"], None),
        ("ingest / check", [TG, "ingest-manifest", "--governance", f"{TGDIR}/governance.yaml"],
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
    t = time.perf_counter()
    for ag in all_sample:
        run([TG, "policy", "compile", "--agent", ag, "--profile", "strict",
             "--output", f"{wd}/bundle-all.json"], wd)
    el = time.perf_counter() - t
    rec("bundles, all agents", "tg", el * len(AGENTS) / len(all_sample))
    t = time.perf_counter()
    for ag in AGENTS:
        run([MG, "bundle", ag, *mg_common])
    rec("bundles, all agents", "mg", time.perf_counter() - t)
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
    elif va == "DENY":
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
aud = tg_json("audit-report")["summary"]["counts"]
print("\nAnswer check", file=sys.stderr)
print(f"  unsafe-tools: {len(meta['sample_agents'])} agents, {checked_rows} distinct rows compared", file=sys.stderr)
print(f"  check-access: {len(meta['pairs'])} pairs, Toolgraph verdicts {verdicts}", file=sys.stderr)
print(f"  blast-radius {QR}: {len(ba)} (agent, tool) pairs", file=sys.stderr)
print(f"  Toolgraph audit counts: violations {aud['unsafe_violations']}, exceptions "
      f"{aud['authorized_but_governed']}, drifted {aud['drifted_tools']}", file=sys.stderr)
mg_summary = chk.get("summary", {k: v for k, v in chk.items() if not isinstance(v, list)})
print(f"  mcpgov check summary: {json.dumps(mg_summary)[:300]}", file=sys.stderr)

# ---------------------------------------------------------------- table
def fmt(x):
    return "—" if x is None else (f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s")


print(f"\nEstate: {meta['size']} (seed {meta['seed']}): " + ", ".join(f"{k} {v}" for k, v in meta["counts"].items()))
print(f"Median of {runs} run(s); each step is one CLI process (start-up included) unless noted.\n")
print(f"| step | Toolgraph 0.4.0 (Ladybug) | mcpgov | Toolgraph / mcpgov |")
print(f"|---|---|---|---|")
for step, v in times.items():
    ta = statistics.median(v["tg"]) if v["tg"] else None
    tb = statistics.median(v["mg"]) if v["mg"] else None
    ratio = f"{ta / tb:.0f}×" if ta and tb else "—"
    label = step
    if step == "bundles, all agents":
        label += f" ({len(AGENTS)} processes each" + (f"; Toolgraph timed on {len(all_sample)}, extrapolated)" if extrapolated else ")")
    if step == "all agents, one process":
        label = "all agents evaluated in one process (mcpgov `check`)"
    if step == "crawl":
        label = "crawl (Toolgraph: stdio MCP servers; mcpgov: none, catalog file)"
    if step == "ingest / check":
        label = "ingest governance (Toolgraph) / `check` ingest+evaluate all (mcpgov)"
    print(f"| {label} | {fmt(ta)} | {fmt(tb)} | {ratio} |")

if mismatches:
    print(f"\nANSWER MISMATCHES ({len(mismatches)}):")
    for m in mismatches:
        print("  " + m)
    sys.exit(1)
print("\nAnswers agree: unsafe-tools rows, check-access verdicts (and deny paths), blast-radius.")
