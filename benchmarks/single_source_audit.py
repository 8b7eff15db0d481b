#!/usr/bin/env python3
"""Audit recall and false alarms on single-source projects with a ROCm path, against hand labels.

Projects that build for AMD from their CUDA source keep a compatibility layer (`USE_ROCM`, `__HIP_PLATFORM_AMD__`
branches, macros over HIP's warp built-ins). `benchmarks/single_source_labels.toml` lists, per project, a commit,
the folders audited and the project's AMD switches (what its build passes for ROCm), and a sample of warp-level
lines labelled by hand: `must-fix` (wrong or not compiling on a 64-lane wavefront or ROCm 7.0, for the AMD
build) or `correct` (right as the AMD build compiles it), each with the reason. The code is not in this
repository: each project's files are expected under SRC/<owner>+<name>/<commit>/ (SRC defaults to
/tmp/hipport-single-source). With `--clones DIR`, missing trees are extracted from git clones found as
DIR/<owner>+<name>/repo or DIR/<owner>+<name> (`git archive <commit> -- <folders> <build>`). A project without
`defines` gets its switches from its build files and scripts (`build`), as `hipport audit` without settings does.

A line counts as flagged when the audit (default targets, ROCm 7.0, the project's switches) reports a warning or
an error on it. A label whose snippet no longer matches its line is stale and listed.

    python3 benchmarks/single_source_audit.py                       # the figures
    python3 benchmarks/single_source_audit.py -v                    # also each miss and each false alarm
    python3 benchmarks/single_source_audit.py --clones /work/.mirror
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = Path("/tmp/hipport-single-source")
LABELS = Path(__file__).with_name("single_source_labels.toml")


def _tree(src: Path, project: dict) -> Path:
    return src / project["repo"].replace("/", "+") / project["commit"]


def _extract(tree: Path, project: dict, clones: Path) -> bool:
    name = project["repo"].replace("/", "+")
    for git_dir in (clones / name / "repo", clones / name):
        if git_dir.is_dir():
            tree.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", project["commit"], "--",
                                      *project["folders"], *project.get("build", ())], capture_output=True)
            if archive.returncode != 0:
                continue
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
            return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--clones", type=Path, help="git clones to extract missing trees from")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from hipport.audit import AuditOptions, audit_source

    data = tomllib.loads(args.labels.read_text(encoding="utf-8"))
    projects = {(p["repo"], p["commit"]): p for p in data["project"]}
    found = {"must-fix": [0, 0], "correct": [0, 0]}  # label -> [flagged, total]
    stale, missing, listed = [], set(), []
    cache: dict[tuple, dict[int, list[str]]] = {}
    for label in data["line"]:
        key = (label["repo"], label["commit"])
        project = projects[key]
        tree = _tree(args.src, project)
        if not tree.is_dir() and not (args.clones and _extract(tree, project, args.clones)):
            missing.add(f"{label['repo']}@{label['commit'][:10]}")
            continue
        path = tree / label["path"]
        if (key, label["path"]) not in cache:
            try:
                src = path.read_bytes()
            except OSError:
                src = None
            flagged: dict[int, list[str]] = {}
            if src is not None:
                defines = project.get("defines")
                if defines is None:  # as the CLI without settings: the build files' and scripts' switches
                    from hipport.audit.build_switches import build_defines
                    defines = build_defines(str(tree))
                options = AuditOptions(defines=tuple(defines),
                                       include_dirs=tuple(str(tree / d) for d in project.get("include_dirs", ())))
                for f in audit_source(src, str(path), options):
                    if f.severity in ("warning", "error"):
                        flagged.setdefault(f.line, []).append(f.rule_id)
            cache[(key, label["path"])] = {"lines": src.decode("utf-8", "replace").splitlines() if src else [],
                                           "flagged": flagged}
        entry = cache[(key, label["path"])]
        n = label["line"]
        if n > len(entry["lines"]) or label["snippet"].strip() not in entry["lines"][n - 1]:
            stale.append(f"{label['repo']} {label['path']}:{n}")
            continue
        hit = bool(entry["flagged"].get(n))
        found[label["label"]][0] += hit
        found[label["label"]][1] += 1
        if (label["label"] == "must-fix") != hit:
            what = "missed" if label["label"] == "must-fix" else "false alarm " + ",".join(entry["flagged"][n])
            listed.append(f"  {what}: {label['repo']} {label['path']}:{n}: {label['snippet'].strip()}")
    if missing:
        print(f"{args.src}: no tree for {', '.join(sorted(missing))}; fetch the projects (see the labels file) "
              f"or pass --clones DIR", file=sys.stderr)
        if not any(total for _, total in found.values()):
            return 2
    mf, mt = found["must-fix"]
    cf, ct = found["correct"]
    print(f"must-fix recall: {mf}/{mt} = {100 * mf / max(mt, 1):.1f}%")
    print(f"correct lines flagged: {cf}/{ct} = {100 * cf / max(ct, 1):.1f}%")
    print(f"projects: {len({r for r, _ in projects})}, trees: {len(projects)}, stale labels: {len(stale)}")
    if args.verbose:
        for line in listed + [f"  stale: {s}" for s in stale]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
