#!/usr/bin/env bash
# Check and unit-test the Prometheus alerting rules shipped with the chart:
#   1. `promtool check rules charts/mcpgov/files/alerts.yaml` (syntax, PromQL, templates)
#   2. `promtool test rules e2e/alerts/rules_test.yaml` (every alert's behaviour)
#   3. every alert has unit tests, a runbook section in docs/alerts.md and a runbook_url
#      pointing at that section
# promtool comes from install-promtool.sh (cached). Prints `N passed, N failed` last and
# exits non-zero when a step failed. Runs from any directory.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rules="charts/mcpgov/files/alerts.yaml"
tests="e2e/alerts/rules_test.yaml"
runbook="docs/alerts.md"

log() { printf '[alerts/test] %s\n' "$*" >&2; }

promtool="$("$here/install-promtool.sh" | tail -n1)" || {
    log "error: could not install promtool"
    echo "0 passed, 1 failed"
    exit 1
}
log "$("$promtool" --version 2>&1 | head -n1)"

cd "$repo" || exit 1
passed=0
failed=0
step() {
    local name="$1"
    shift
    if "$@"; then
        log "PASS: $name"
        passed=$((passed + 1))
    else
        log "FAIL: $name"
        failed=$((failed + 1))
    fi
}

# rule_files inside the test file are resolved relative to the test file itself.
check_coverage() {
    local ok=0 name anchor names
    names="$(sed -n 's/^[[:space:]]*-[[:space:]]*alert:[[:space:]]*\([A-Za-z0-9_]*\).*/\1/p' "$rules")"
    if [[ -z "$names" ]]; then
        log "no alerts found in $rules"
        return 1
    fi
    for name in $names; do
        anchor="$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')"
        if ! grep -Eq "alertname:[[:space:]]*$name\$" "$tests"; then
            log "$name has no test in $tests"
            ok=1
        fi
        if ! grep -Eq "^## $name\$" "$runbook"; then
            log "$name has no '## $name' section in $runbook"
            ok=1
        fi
        if ! grep -Eq "runbook_url:[[:space:]]*[^[:space:]]*/$runbook#$anchor\$" "$rules"; then
            log "no runbook_url in $rules ends with $runbook#$anchor"
            ok=1
        fi
    done
    [[ $(grep -Ec '^[[:space:]]*runbook_url:' "$rules") -eq $(wc -w <<<"$names") ]] || {
        log "not every alert has exactly one runbook_url"
        ok=1
    }
    return $ok
}

step "promtool check rules $rules" "$promtool" check rules "$rules"
step "promtool test rules $tests" "$promtool" test rules "$tests"
step "every alert is tested and has a runbook" check_coverage

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
