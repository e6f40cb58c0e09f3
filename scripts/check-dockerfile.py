#!/usr/bin/env python3
"""Static checks of the Dockerfile's stages (there is no Docker engine in CI).

  check-dockerfile.py DOCKERFILE OUTDIR   the stages are what the docs promise, and every
                                          binary a final stage copies from the build stage
                                          is one scripts/build-release.sh put in OUTDIR
  check-dockerfile.py --selftest DOCKERFILE OUTDIR
                                          the check notices mutations of the Dockerfile

Exits 1 with one line per failed expectation.
"""
import os
import re
import shlex
import sys

NONROOT = "65532:65532"
# Each image: its stage name, the binary it ships, the ports it exposes.
IMAGES = {
    "gateway": ("mcpgov-gateway", {"8480", "8481"}),
    "operator": ("mcpgov", {"8080"}),
}


def stages(text):
    """[(name, base, [(instruction, args)])] in order; continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            out.append((name, words[0], []))
        elif out:
            out[-1][2].append((instr, args.strip()))
    return out


def last(instrs, kind):
    vals = [a for i, a in instrs if i == kind]
    return vals[-1] if vals else None


def check(text, outdir):
    fails = []
    st = stages(text)
    by_name = {s[0]: s for s in st if s[0]}
    build = [s for s in st if any(i == "RUN" and "scripts/build-release.sh" in a for i, a in s[2])]
    if len(build) != 1:
        fails.append(f"{len(build)} stages run scripts/build-release.sh (want 1)")
        return fails
    build_name = build[0][0]
    if not st or st[-1][0] != "operator":
        fails.append(f"the last stage is {st[-1][0] if st else None}, not operator (a plain build must give the operator)")

    def chain(s):
        """The stage and the stages it is built FROM, by name."""
        seen = [s]
        while s[1] in by_name and by_name[s[1]] not in seen:
            s = by_name[s[1]]
            seen.append(s)
        return seen

    for stage, (binary, ports) in IMAGES.items():
        s = by_name.get(stage)
        if s is None:
            fails.append(f"no stage named {stage} (docker build --target {stage})")
            continue
        lineage = chain(s)
        root = lineage[-1][1]
        if root.startswith("rust") or build_name in [x[0] for x in lineage]:
            fails.append(f"{stage}: built on the build image ({root}), not a minimal base")
        if not root.endswith("-slim") and not root.startswith(("gcr.io/distroless", "scratch")):
            fails.append(f"{stage}: base {root} is not a slim or distroless image")
        instrs = [x for st_ in reversed(lineage) for x in st_[2]]
        user = last(instrs, "USER")
        if user != NONROOT:
            fails.append(f"{stage}: USER {user}, want {NONROOT}")
        entry = last(instrs, "ENTRYPOINT")
        want = f'["/usr/local/bin/{binary}"]'
        if entry != want:
            fails.append(f"{stage}: ENTRYPOINT {entry}, want {want}")
        exposed = set(" ".join(a for i, a in instrs if i == "EXPOSE").split())
        if exposed != ports:
            fails.append(f"{stage}: EXPOSE {sorted(exposed)}, want {sorted(ports)}")
        copies = [shlex.split(a) for i, a in s[2] if i == "COPY"]
        shipped = [c for c in copies if f"--from={build_name}" in c and c[-1] == f"/usr/local/bin/{binary}"]
        if len(shipped) != 1:
            fails.append(f"{stage}: {len(shipped)} COPY --from={build_name} of /usr/local/bin/{binary}")
    # Every binary copied out of the build stage is one the build script produced.
    for s in st:
        for i, a in s[2]:
            words = shlex.split(a)
            if i == "COPY" and f"--from={build_name}" in words:
                src = words[-2]
                if not src.startswith("/out/"):
                    fails.append(f"{s[0]}: copies {src}, not from the build script's /out")
                    continue
                path = os.path.join(outdir, src[len("/out/"):])
                if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                    fails.append(f"{s[0]}: copies {src}, which scripts/build-release.sh did not produce")
    return fails


def selftest(text, outdir):
    """Each mutation of a good Dockerfile must fail the check with the expected message."""
    if check(text, outdir):
        print("  the Dockerfile itself fails the check")
        return 1
    gw = text.index("AS gateway")
    op = text.index("AS operator")
    gateway_stage = text[text.rindex("FROM", 0, gw):text.rindex("FROM", 0, op)]
    mutations = [
        ("gateway stage missing", text.replace(gateway_stage, ""), "no stage named gateway"),
        ("gateway last", text.replace(gateway_stage, "") + "\n" + gateway_stage, "not operator"),
        ("gateway as root", text.replace(gateway_stage, gateway_stage.replace("USER 65532:65532", "USER 0")),
         "gateway: USER 0"),
        ("gateway without USER", text.replace(gateway_stage, gateway_stage.replace("USER 65532:65532\n", "")),
         "gateway: USER None"),
        ("gateway on the build image", text.replace(gateway_stage, gateway_stage.replace("FROM base AS gateway", "FROM build AS gateway")),
         "gateway: built on the build image"),
        ("gateway runs the operator", text.replace(gateway_stage, gateway_stage.replace('["/usr/local/bin/mcpgov-gateway"]', '["/usr/local/bin/mcpgov"]')),
         "gateway: ENTRYPOINT"),
        ("gateway without the ops port", text.replace("EXPOSE 8480 8481", "EXPOSE 8480"), "gateway: EXPOSE"),
        ("binary the script does not build", text.replace("/out/mcpgov-gateway", "/out/mcpgov-gw"),
         "did not produce"),
        ("build without the script", text.replace("RUN bash scripts/build-release.sh /out", "RUN cargo build --release"),
         "0 stages run scripts/build-release.sh"),
    ]
    bad = 0
    for name, mutated, want in mutations:
        if mutated == text:
            print(f"  MUTATION DID NOT APPLY: {name}")
            bad += 1
            continue
        fails = check(mutated, outdir)
        hits = [f for f in fails if want in f]
        print(f"  {'ok' if hits else 'MISSED'}: {name} -> {(hits or fails or ['no failure'])[0][:100]}")
        bad += not hits
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    test = args[:1] == ["--selftest"]
    if test:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[0]) as f:
        text = f.read()
    if test:
        sys.exit(selftest(text, args[1]))
    fails = check(text, args[1])
    for f in fails:
        print(f)
    if not fails:
        print("Dockerfile: gateway and operator stages as documented, operator last, binaries from the build script")
    sys.exit(1 if fails else 0)
