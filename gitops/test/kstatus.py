#!/usr/bin/env python3
"""How Flux reads the mcpgov.io kinds, over the fixtures of gitops/test/expected.json.

Flux's kustomize-controller waits on applied objects (`wait: true`, `healthChecks`) with
kstatus. For a custom resource kstatus decides, in this order (its generic rules):

  1. metadata.deletionTimestamp set                        -> Terminating
  2. status.observedGeneration present and != generation   -> InProgress
  3. the first condition, in list order, that is
       Reconciling=True                                    -> InProgress (its message)
       Stalled=True                                        -> Failed (its message)
  4. (built-in kinds only: their own rules; none apply to mcpgov.io)
  5. a Ready condition: True -> Current; False or Unknown  -> InProgress (its message)
  6. otherwise                                             -> Current ("Resource is current")

Rule 6 means an object the operator has not written status for yet reads Current.
docs/gitops.md proposes `healthCheckExprs` (Flux 2.5+) to close that gap; `flux_exprs`
below evaluates those expressions the way Flux's CEL status reader is documented to
(generation first; then inProgress, failed, current; none true -> InProgress; an
expression naming a missing field is an error, on which Flux keeps waiting: Unknown).
It is a hand translation of the three expressions, not a CEL engine.

Python 3 standard library only.  Usage: kstatus.py GITOPS_DIR
Prints one line per check and, last, `RESULT kstatus passed=N failed=N`.
"""

import json
import os
import sys

CURRENT, IN_PROGRESS, FAILED, TERMINATING, UNKNOWN = (
    "Current", "InProgress", "Failed", "Terminating", "Unknown")


def kstatus(obj):
    """(status, message) by kstatus' generic rules for custom resources."""
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return TERMINATING, "Resource scheduled for deletion"
    status = obj.get("status") or {}
    generation = meta.get("generation")
    if generation is not None and "observedGeneration" in status:
        observed = status["observedGeneration"]
        if observed != generation:
            return IN_PROGRESS, (f"{obj.get('kind')} generation is {generation}, "
                                 f"but latest observed generation is {observed}")
    conditions = status.get("conditions") or []
    for c in conditions:
        if c.get("type") == "Reconciling" and c.get("status") == "True":
            return IN_PROGRESS, c.get("message", "")
        if c.get("type") == "Stalled" and c.get("status") == "True":
            return FAILED, c.get("message", "")
    for c in conditions:
        if c.get("type") != "Ready":
            continue
        if c.get("status") == "True":
            return CURRENT, "Resource is Ready"
        if c.get("status") in ("False", "Unknown"):
            return IN_PROGRESS, c.get("message", "")
    return CURRENT, "Resource is current"


# The expressions docs/gitops.md proposes, the same for the four kinds:
#   inProgress: status.conditions.exists(c, c.type == 'Reconciling' && c.status == 'True')
#   failed:     status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')
#   current:    status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')
EXPRS = [("Reconciling", IN_PROGRESS), ("Stalled", FAILED), ("Ready", CURRENT)]


def flux_exprs(obj):
    """Status under the healthCheckExprs above (Flux's CEL status reader)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status")
    if (status is not None and "observedGeneration" in status
            and status["observedGeneration"] != meta.get("generation")):
        return IN_PROGRESS
    if status is None or "conditions" not in status:
        return UNKNOWN  # `status.conditions` does not exist: evaluation error
    for kind, result in EXPRS:
        if any(c.get("type") == kind and c.get("status") == "True"
               for c in status["conditions"]):
            return result
    return IN_PROGRESS


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "gitops"
    with open(os.path.join(root, "test", "expected.json")) as f:
        cases = json.load(f)["cases"]
    passed = failed = 0

    def check(ok, line):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   {line}")
        else:
            failed += 1
            print(f"FAIL {line}")

    for case in cases:
        name = case["fixture"]
        with open(os.path.join(root, "test", "fixtures", name)) as f:
            obj = json.load(f)
        want = case["kstatus"]
        got, message = kstatus(obj)
        problems = []
        if got != want["status"]:
            problems.append(f"status {got}, want {want['status']}")
        if "message" in want and message != want["message"]:
            problems.append(f"message {message!r}, want {want['message']!r}")
        check(not problems, f"kstatus {name}: " + ("; ".join(problems) or f"{got} ({message})"))
        got = flux_exprs(obj)
        check(got == case["fluxExprs"],
              f"healthCheckExprs {name}: {got}"
              + ("" if got == case["fluxExprs"] else f", want {case['fluxExprs']}"))
    print(f"RESULT kstatus passed={passed} failed={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
