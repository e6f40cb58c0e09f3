// Compare the server scenarios' results against a server directly and through the
// gateway (run-server.sh), and print the table.
//
//   node compare.mjs DIRECT_DIR GATEWAY_DIR DIRECT_URL GATEWAY_URL SCENARIO...
//
// Each DIR holds the suite's output folders, `server-<scenario>-<time>/checks.json`.
// Prints one row per scenario: the result directly and through the gateway, `PASS s/n`
// (s SUCCESS checks of n), `FAIL s/n` or `NO RESULT`, PASS as in verdict.mjs (no FAILURE,
// no WARNING, at least one SUCCESS); then `same` or `DIFFERENT`. Then the differences and
// the notes. Exits 1 when any scenario's result differs.
//
// The results are the same when the verdicts agree, the same checks succeed on both sides,
// and the list scenarios listed the same names (an allow-all bundle must hide nothing).
// Anything else that differs is a note: checks that fail or only inform on the side where
// they appear (a scenario that calls a tool the server does not have gets the server's own
// error directly and the gateway's NotInBundle denial through it, an error result both
// ways but framed differently, so the suite records different follow-up checks), and
// messages or details.
//
// One scenario is expected to improve: the gateway refuses foreign Host/Origin headers on
// its loopback listener (DNS rebinding protection), which server-everything does not. It
// must PASS through the gateway whatever the server does (`improved`); anything else there
// is a difference.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [directDir, gatewayDir, directUrl, gatewayUrl, ...scenarios] = process.argv.slice(2);

// The newest output folder of a scenario (the time stamp sorts as text).
function checksFile(dir, scenario) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  const re = new RegExp(`^server-${scenario.replace(/[^a-z0-9-]/gi, "")}-\\d{4}-\\d{2}-\\d{2}T`);
  const hits = names.filter((n) => re.test(n)).sort();
  return hits.length > 0 ? join(dir, hits[hits.length - 1], "checks.json") : null;
}

function load(file) {
  if (!file) return null;
  try {
    const c = JSON.parse(readFileSync(file, "utf8"));
    return Array.isArray(c) ? c : null;
  } catch {
    return null;
  }
}

function summary(checks) {
  if (!checks) return "NO RESULT";
  const ok = checks.filter((c) => c.status === "SUCCESS").length;
  const bad = checks.some((c) => c.status === "FAILURE" || c.status === "WARNING");
  return `${!bad && ok > 0 ? "PASS" : "FAIL"} ${ok}/${checks.length}`;
}

// Members sorted and JSON inside strings (an SSE event's data) parsed: the gateway
// re-serialises the lists it filters, in another member order.
function sorted(v) {
  if (typeof v === "string" && /^\s*[{[]/.test(v)) {
    try {
      return sorted(JSON.parse(v));
    } catch {
      return v;
    }
  }
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sorted(v[k])]),
    );
  }
  return v;
}

// What tells the two runs apart but is no difference: the URL, host:port, random ids,
// the member order.
function normal(v) {
  let s = JSON.stringify(sorted(v ?? null));
  for (const u of [directUrl, gatewayUrl]) {
    if (u) s = s.split(u).join("<url>");
  }
  return s
    .replace(/127\.0\.0\.1:\d+/g, "<host>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/"timestamp":"[^"]*"/g, "");
}

const statuses = (checks) =>
  (checks ?? []).map((c) => `${c.id}=${c.status}`).sort().join(" ");

function compare(direct, gateway) {
  const differences = [];
  const notes = [];

  const successes = (checks) =>
    [...new Set((checks ?? []).filter((c) => c.status === "SUCCESS").map((c) => c.id))].sort().join(" ");
  const verdict = (s) => s.split(" ")[0];
  if (verdict(summary(direct)) !== verdict(summary(gateway))) {
    differences.push(`verdict: direct ${summary(direct)} via gateway ${summary(gateway)}`);
  }
  if (successes(direct) !== successes(gateway)) {
    differences.push(
      `succeeding checks: direct [${successes(direct)}] via gateway [${successes(gateway)}]`,
    );
  }
  if (direct === null && gateway === null) differences.push("no result on either side");
  if (statuses(direct) !== statuses(gateway)) {
    notes.push(`checks: direct [${statuses(direct)}] via gateway [${statuses(gateway)}]`);
  }

  const byId = (checks) => new Map((checks ?? []).map((c) => [c.id, c]));
  const d = byId(direct);
  const g = byId(gateway);
  for (const [id, dc] of d) {
    const gc = g.get(id);
    if (!gc) continue;
    // The names a list scenario saw.
    for (const key of ["tools", "prompts", "resources"]) {
      const dn = dc.details?.[key];
      const gn = gc.details?.[key];
      if (Array.isArray(dn) || Array.isArray(gn)) {
        const a = JSON.stringify([...(dn ?? [])].sort());
        const b = JSON.stringify([...(gn ?? [])].sort());
        if (a !== b) differences.push(`${id}: ${key} direct ${a} via gateway ${b}`);
      }
    }
    if (normal(dc.errorMessage) !== normal(gc.errorMessage)) {
      notes.push(`${id}: message direct ${normal(dc.errorMessage)} via gateway ${normal(gc.errorMessage)}`);
    } else if (normal(dc.details) !== normal(gc.details)) {
      notes.push(
        `${id}: details direct ${normal(dc.details).slice(0, 240)} via gateway ${normal(gc.details).slice(0, 240)}`,
      );
    }
  }

  return { differences, notes };
}

const IMPROVES = new Set(["dns-rebinding-protection"]);

let differ = 0;
const rows = [];
const lines = [];
for (const scenario of scenarios) {
  const direct = load(checksFile(directDir, scenario));
  const gateway = load(checksFile(gatewayDir, scenario));
  let { differences, notes } = compare(direct, gateway);
  let result = differences.length > 0 ? "DIFFERENT" : "same";
  if (IMPROVES.has(scenario)) {
    const passes = summary(gateway).startsWith("PASS");
    notes = [...notes, ...differences];
    differences = passes ? [] : [`expected to PASS through the gateway, got ${summary(gateway)}`];
    result = passes ? (summary(direct).startsWith("PASS") ? "same" : "improved") : "DIFFERENT";
  }
  if (differences.length > 0) differ++;
  rows.push([scenario, summary(direct), summary(gateway), result]);
  for (const d of differences) lines.push(`${scenario}: DIFFERENCE ${d}`);
  for (const n of notes) lines.push(`${scenario}: note ${n.slice(0, 400)}`);
}
const w = [30, 16, 16];
const row = (r) => r.map((c, i) => (i < w.length ? c.padEnd(w[i]) : c)).join(" ");
console.log(row(["scenario", "direct", "via gateway", "result"]));
for (const r of rows) console.log(row(r));
if (lines.length > 0) console.log(["", ...lines].join("\n"));
console.log(`\n${scenarios.length} scenarios, ${differ} with a different result through the gateway`);
process.exit(differ > 0 ? 1 : 0);
