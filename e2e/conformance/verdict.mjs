// Judge one client scenario from the suite's checks.json, stricter than the suite itself:
// the suite passes a scenario whose test server recorded no check at all (a client that
// exits 0 without connecting), so this also requires the checks that show the scenario
// really ran.
//
//   node verdict.mjs CHECKS_JSON [REQUIRED_ID,...]
//
// Prints one summary line (and the failed or warned checks, one per line, indented) and
// exits 0 when: no FAILURE, no WARNING (the suite fails on warnings too), at least one
// SUCCESS, and every required id has a SUCCESS.
import { readFileSync } from "node:fs";

const [file, required = ""] = process.argv.slice(2);
let checks;
try {
  checks = JSON.parse(readFileSync(file, "utf8"));
} catch (e) {
  console.log(`no readable checks.json (${e.message})`);
  process.exit(1);
}
if (!Array.isArray(checks)) {
  console.log("checks.json is not an array");
  process.exit(1);
}

const by = (status) => checks.filter((c) => c.status === status);
const success = by("SUCCESS");
const failure = by("FAILURE");
const warning = by("WARNING");
const missing = required
  .split(",")
  .filter(Boolean)
  .filter((id) => !success.some((c) => c.id === id));

const parts = [
  `${success.length} success`,
  `${failure.length} failure`,
  `${warning.length} warning`,
];
if (missing.length > 0) parts.push(`missing ${missing.join(", ")}`);
console.log(
  `checks: ${parts.join(", ")}` +
    (success.length > 0 ? ` [${[...new Set(success.map((c) => c.id))].join(" ")}]` : ""),
);
for (const c of [...failure, ...warning]) {
  const msg = c.errorMessage ?? c.details?.message ?? "";
  console.log(`    ${c.status} ${c.id}: ${c.description}${msg ? ` -- ${msg}` : ""}`);
}

const ok =
  failure.length === 0 && warning.length === 0 && success.length > 0 && missing.length === 0;
process.exit(ok ? 0 : 1);
