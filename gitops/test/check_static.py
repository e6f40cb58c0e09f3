#!/usr/bin/env python3
"""Static checks of gitops/ (Python 3 standard library only).  Usage: check_static.py GITOPS_DIR

- argocd/argocd-cm-patch.yaml carries each health.lua verbatim under
  resource.customizations.health.<group>_<Kind>, and nothing else (read back here with a
  small reader of its block scalars, independent of render-cm.sh);
- the `common` block is identical in the four health.lua files (render-cm.sh generates them
  from src/common.lua; this reads the outputs, so a hand edit is caught either way);
- the scripts stay within what Argo CD's Lua (gopher-lua, Lua 5.1) runs, on paths the
  fixtures may not reach (mcpgov-health runs them in gopher-lua itself);
- every fixture is in test/expected.json exactly once, with the three expectations;
- docs/gitops.md shows the healthCheckExprs that expected.json evaluates.
Prints one line per check and, last, `RESULT static passed=N failed=N`.
"""

import json
import os
import re
import sys

KINDS = ["Agent", "Grant", "MCPServer", "Policy"]
GROUP = "mcpgov.io"


def cm_data(text):
    """The data keys of the rendered ConfigMap: key -> block scalar text (`|`, clip)."""
    lines = text.split("\n")
    start = lines.index("data:") + 1
    data, key, body = {}, None, []

    def close():
        if key is not None:
            while body and body[-1] == "":
                body.pop()
            data[key] = "\n".join(body) + "\n"

    for line in lines[start:]:
        m = re.fullmatch(r"  (\S+): \|", line)
        if m:
            close()
            key, body = m.group(1), []
        elif line == "" or line.startswith("    "):
            body.append(line[4:])
        else:
            raise ValueError(f"unexpected line in data: {line!r}")
    close()
    return data


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "gitops"
    passed = failed = 0

    def check(ok, line):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   {line}")
        else:
            failed += 1
            print(f"FAIL {line}")

    scripts = {}
    for kind in KINDS:
        with open(os.path.join(root, "argocd", "health", GROUP, kind, "health.lua")) as f:
            scripts[kind] = f.read()

    with open(os.path.join(root, "argocd", "argocd-cm-patch.yaml")) as f:
        data = cm_data(f.read())
    want_keys = {f"resource.customizations.health.{GROUP}_{k}" for k in KINDS}
    check(set(data) == want_keys, f"argocd-cm-patch.yaml keys: {sorted(data)}")
    for kind in KINDS:
        key = f"resource.customizations.health.{GROUP}_{kind}"
        check(data.get(key) == scripts[kind], f"argocd-cm-patch.yaml {key} is {kind}/health.lua verbatim")

    def common(text):
        m = re.search(r"^-- >>> common.*?^-- <<< common$", text, re.S | re.M)
        return m.group(0) if m else None

    blocks = {k: common(s) for k, s in scripts.items()}
    check(all(blocks.values()) and len(set(blocks.values())) == 1,
          "the common block is identical in the four health.lua files")

    # gopher-lua is Lua 5.1: no goto/labels, no integer division, no bitwise operators;
    # Argo CD opens only base, table and package for a custom health check (no
    # useOpenLibs): no string, math, io, os, debug, nor string methods (s:find).
    banned = [(r"\bgoto\b|::\w+::", "goto"), (r"//", "integer division"),
              (r"[^~=<>]~[^=]|<<|>>", "bitwise operator"),
              (r"\b(io|os|debug|require|string|math)\b[.(]", "library"),
              (r"[\w)\]\"']:\w+\(", "method call (string methods are not opened)"),
              (r"\t", "tab")]
    for kind, text in scripts.items():
        code = "\n".join(line.split("--", 1)[0] for line in text.split("\n"))
        hits = [what for pattern, what in banned if re.search(pattern, code)]
        check(not hits, f"{kind}/health.lua stays within Lua 5.1 / Argo CD" + (f": {hits}" if hits else ""))
        check(text.rstrip().endswith("return hs"), f"{kind}/health.lua ends with `return hs`")

    with open(os.path.join(root, "test", "expected.json")) as f:
        expected = json.load(f)
    cases = expected["cases"]
    exprs = expected.get("fluxHealthCheckExprs", {})
    with open(os.path.join(root, "..", "docs", "gitops.md")) as f:
        docs = f.read()
    for name in ("inProgress", "failed", "current"):
        line = f'{name}: "{exprs.get(name)}"'
        check(bool(exprs.get(name)) and line in docs, f"docs/gitops.md shows the evaluated {name} expression")
    listed = [c["fixture"] for c in cases]
    on_disk = sorted(n for n in os.listdir(os.path.join(root, "test", "fixtures")) if n.endswith(".json"))
    check(sorted(listed) == on_disk and len(set(listed)) == len(listed),
          f"expected.json lists each of the {len(on_disk)} fixtures once")
    incomplete = [c["fixture"] for c in cases
                  if not ({"argocd", "kstatus", "fluxExprs", "about"} <= set(c)
                          and "status" in c["argocd"] and "status" in c["kstatus"])]
    check(not incomplete, "every case has about, argocd, kstatus and fluxExprs"
          + (f": missing in {incomplete}" if incomplete else ""))
    for c in cases:
        with open(os.path.join(root, "test", "fixtures", c["fixture"])) as f:
            obj = json.load(f)
        meta = obj.get("metadata", {})
        trimmed = not ({"managedFields", "uid", "resourceVersion"} & set(meta))
        check(obj.get("apiVersion", "").startswith(GROUP + "/") and obj.get("kind") in KINDS and trimmed,
              f"{c['fixture']}: a trimmed {GROUP} object")

    print(f"RESULT static passed={passed} failed={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
