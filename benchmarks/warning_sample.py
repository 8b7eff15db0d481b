#!/usr/bin/env python3
"""How many of the audit's warnings are true: a seeded random sample, judged by reading the code (issue 34).

The audit runs as a user runs it (`hipport audit --report json`, default targets and ROCm release) on the HeCBench
CUDA sources (`../shared/corpus/hecbench/src/*-cuda`) and on single-source projects that build for AMD through a
compatibility layer, each with its AMD build's switches (the projects and commits of
`benchmarks/single_source_labels.toml`, fetched outside the repository: see benchmarks/single_source_audit.py).
The release judged is ROCm 7.2 (`--rocm-version`), the default targets (gfx90a, gfx942, gfx1100). Every warning
and error is collected; a sample of N is drawn with a fixed seed, split between the corpora
(`--per-source`), and each sampled finding is looked up in `benchmarks/warning_sample_labels.toml`, where a person
wrote a verdict after reading the code: `true` (the hazard is real for the AMD build at the judged release and
targets, or the code does not compile there) or `false` (a false alarm), with the reason. A label is keyed by
corpus, path, line, rule and the line's text, so a label whose line moved or changed is not used.

    python3 benchmarks/warning_sample.py                  # the figure, and the sampled findings with no verdict
    python3 benchmarks/warning_sample.py --show           # each sampled finding with its code, for judging
    python3 benchmarks/warning_sample.py --json OUT       # the sample and verdicts as data
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HECBENCH = ROOT.parent / "shared" / "corpus" / "hecbench" / "src"
PROJECTS = Path("/tmp/hipport-single-source")
LABELS = Path(__file__).with_name("warning_sample_labels.toml")
PROJECT_LABELS = Path(__file__).with_name("single_source_labels.toml")


def _audit(paths: list[Path], cwd: Path, defines: list[str], exclude: list[str], release: str) -> list[dict]:
    """Warnings and errors of `hipport audit` over ``paths`` (relative to ``cwd``), as the JSON report has them."""
    cmd = [sys.executable, "-m", "hipport", "audit", "--report", "json", "-o", "-", "--fail-on", "error",
           "--rocm-version", release, *[a for x in exclude for a in ("--exclude", x)],
           *[str(p.relative_to(cwd)) for p in paths]]
    config = None
    if defines:  # the AMD build's switches, as a project states them in its settings file
        config = cwd / ".hipport-sample.toml"
        config.write_text("defines = [" + ", ".join(json.dumps(d) for d in defines) + "]\n")
        cmd[4:4] = ["--config", str(config)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if config is not None:
        config.unlink()
    if r.returncode not in (0, 1):
        sys.exit(f"hipport audit failed in {cwd} (exit {r.returncode}): {r.stderr.strip()[:400]}")
    data = json.loads(r.stdout)
    out = []
    for f in data["files"]:
        for x in f["findings"]:
            if x["severity"] in ("warning", "error"):
                out.append({"path": f["path"], "line": x["location"]["line"], "rule": x["rule"],
                            "severity": x["severity"], "message": x["message"]})
    return out


def _text(root: Path, rel: str, line: int, around: int = 0) -> list[str]:
    try:
        lines = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return [f"{n:5d}{'>' if n == line else ' '} {lines[n - 1]}" for n in range(lo, hi + 1)]


def _corpora(projects: int) -> list[tuple[str, Path, list[Path], list[str], list[str]]]:
    """(name, root, paths, defines, excluded) of each corpus: HeCBench's CUDA folders, then ``projects``
    single-source projects (their newest labelled commit each), as their AMD builds compile them (the switches and
    the sources left out of that build, from the labels file; a project without `defines` there is audited without
    settings, so its switches come from its build files and scripts, fetched beside its folders: `build`)."""
    out = []
    if HECBENCH.is_dir():
        out.append(("hecbench", HECBENCH, sorted(HECBENCH.glob("*-cuda")), [], []))
    data = tomllib.loads(PROJECT_LABELS.read_text(encoding="utf-8"))
    seen = set()
    for p in reversed(data["project"]):  # the newest tree of a repository is listed last
        if p["repo"] in seen or len(seen) >= projects:
            continue
        tree = PROJECTS / p["repo"].replace("/", "+") / p["commit"]
        if not tree.is_dir():
            continue
        seen.add(p["repo"])
        out.append((f"{p['repo']}@{p['commit'][:10]}", tree, [tree / f for f in p["folders"]],
                    list(p.get("defines", ())), list(p.get("exclude", ()))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=50, help="sample size (default 50)")
    ap.add_argument("--per-source", type=int, default=25,
                    help="sampled from HeCBench; the rest from the projects, in turn, and what a project has too few "
                         "findings to give from HeCBench (default 25)")
    ap.add_argument("--projects", type=int, default=2, help="how many single-source projects (default 2)")
    ap.add_argument("--seed", type=int, default=34, help="random seed (default 34, the issue's number)")
    ap.add_argument("--rocm-version", default="7.2", help="the release judged against (default 7.2, what users run)")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--show", action="store_true", help="print each sampled finding with 3 lines of code around")
    ap.add_argument("--json", type=Path, help="write the sample and verdicts here")
    args = ap.parse_args()

    corpora = _corpora(args.projects)
    if not corpora:
        print(f"no corpus: neither {HECBENCH} nor the projects under {PROJECTS}", file=sys.stderr)
        return 2
    labels = {}
    if args.labels.exists():
        for lab in tomllib.loads(args.labels.read_text(encoding="utf-8")).get("finding", []):
            labels[(lab["corpus"].split("@")[0], lab["path"], lab["line"], lab["rule"], lab["text"].strip())] = lab
    rng = random.Random(args.seed)
    sample = []
    quotas = [args.per_source] + [0] * (len(corpora) - 1)
    for k in range(args.n - args.per_source):
        if len(corpora) > 1:
            quotas[1 + k % (len(corpora) - 1)] += 1
    found_by = []
    for name, root, paths, defines, exclude in corpora:
        found = _audit(paths, root, defines, exclude, args.rocm_version)
        print(f"{name}: {len(found)} warnings and errors", file=sys.stderr)
        found.sort(key=lambda x: (x["path"], x["line"], x["rule"]))
        found_by.append(found)
    # A project with fewer findings than its share gives them all; what it leaves goes to the others, HeCBench first,
    # so the sample stays N while there are N findings in all.
    quotas = [min(q, len(f)) for q, f in zip(quotas, found_by)]
    for k in range(len(corpora)):
        quotas[k] += min(len(found_by[k]) - quotas[k], args.n - sum(quotas))
    for (name, root, paths, defines, exclude), quota, found in zip(corpora, quotas, found_by):
        for x in rng.sample(found, quota):
            text = _text(root, x["path"], x["line"])
            x["corpus"], x["root"] = name, str(root)
            x["text"] = text[0][7:] if text else ""
            sample.append(x)
    judged = true = 0
    unjudged = []
    for x in sample:
        lab = labels.get((x["corpus"].split("@")[0], x["path"], x["line"], x["rule"], x["text"].strip()))
        x["verdict"] = lab["verdict"] if lab else None
        x["why"] = lab["why"] if lab else ""
        if lab:
            judged += 1
            true += lab["verdict"] == "true"
        else:
            unjudged.append(x)
        if args.show:
            print(f"\n[{x['corpus']}] {x['path']}:{x['line']}: {x['severity']} {x['rule']}: {x['message']}")
            print("\n".join(_text(Path(x["root"]), x["path"], x["line"], 3)))
            if lab:
                print(f"  verdict: {lab['verdict']}: {lab['why']}")
    print(f"sample: {len(sample)} warnings and errors ({', '.join(f'{c[0]}: {q}' for c, q in zip(corpora, quotas))}),"
          f" seed {args.seed}")
    print(f"judged {judged}, true {true} = {100 * true / max(judged, 1):.1f}%")
    for x in unjudged:
        print(f"  no verdict: [{x['corpus']}] {x['path']}:{x['line']} {x['rule']}: {x['text'].strip()[:80]}")
    if args.json:
        args.json.write_text(json.dumps(sample, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
