#!/usr/bin/env python3
"""What `convert --apply-suggestions` does to real code: audit findings and compiling units, before and after.

On HeCBench (`../shared/corpus/hecbench/src`, the CUDA folder of every benchmark that has a hand port), for each
ROCm target:

* plain: the CUDA folder converted (`hipport convert --rocm-version R --offload-arch gfx90a --no-cache`);
* fixed: the same, with `--apply-suggestions` (plus `--fix-args`, e.g. `--select RULE`).

Both trees are audited (`hipport audit --report json`, same target): warnings and errors before and after.
Every translation unit (a `.cu` no other file includes) of a benchmark the patches changed is compiled in both
trees, syntax only, for gfx90a, the way `../shared/tools/hecbench_rate.py` compiles: with Debian's hipcc for
target 5.2 and with `../shared/rocm-6.2.2/bin/hipcc` for 6.2. A benchmark the patches did not change compiles
or fails alike in both trees, so it is not compiled twice. A *regression* is a unit that compiles plain and
fails fixed: the figure that must be zero.

    python3 benchmarks/autofix.py                   # all benchmarks, targets 5.2 and 6.2
    python3 benchmarks/autofix.py --limit 40 -v     # a sample, each regression with its first error
    python3 benchmarks/autofix.py --targets 6.2 --json out.json
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_SRC = SHARED / "corpus" / "hecbench" / "src"
HIPCC = {"5.2": "hipcc", "6.2": str(SHARED / "rocm-6.2.2" / "bin" / "hipcc")}
_SOURCE = re.compile(r"\.(cu|cuh|h|hpp|cpp|c|inl|inc)$")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def benchmarks(src: Path, limit: int) -> list[str]:
    names = sorted(d.name[:-5] for d in src.iterdir()
                   if d.name.endswith("-cuda") and (src / (d.name[:-5] + "-hip")).is_dir())
    return names[:limit] if limit else names


def copy_tree(src: Path, names: list[str], into: Path) -> None:
    into.mkdir(parents=True)
    for n in names:
        dst = into / n
        shutil.copytree(src / (n + "-cuda"), dst, symlinks=True)
        for p in [dst, *dst.rglob("*")]:  # the corpus is read-only; convert rewrites in place
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)


def convert(tree: Path, target: str, extra: list[str], jobs: int) -> float:
    t0 = time.time()
    subprocess.run(["hipport", "convert", str(tree), "-q", "--no-cache", "--rocm-version", target,
                    "--offload-arch", "gfx90a", "--no-build-files", "-j", str(jobs), *extra],
                   capture_output=True, timeout=3600)
    return time.time() - t0


def audit(tree: Path, target: str) -> dict[str, int]:
    out = tree.parent / (tree.name + "-audit.json")
    subprocess.run(["hipport", "audit", str(tree), "--rocm-version", target, "--offload-arch", "gfx90a",
                    "--no-cache", "--report", "json", "-o", str(out)], capture_output=True, timeout=3600)
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        return {"error": -1, "warning": -1}
    counts = {"error": 0, "warning": 0}
    for f in data.get("files", []):
        for finding in f.get("findings", []):
            if finding.get("severity") in counts:
                counts[finding["severity"]] += 1
    return counts


def changed(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return True
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return bool(mismatch or errors) or any(changed(a / d, b / d) for d in cmp.common_dirs)


def units(bench: Path) -> list[Path]:
    files = [p for p in bench.rglob("*") if p.is_file()]
    included = set()
    for f in files:
        if _SOURCE.search(f.name):
            included.update(os.path.basename(m) for m in _INCLUDE.findall(f.read_text(errors="replace")))
    return sorted(f for f in files if f.suffix == ".cu" and f.name not in included)


def compile_unit(hipcc: str, unit: Path, bench: Path, src: Path) -> tuple[bool, str]:
    cmd = [hipcc, "-x", "hip", "--offload-arch=gfx90a", "-fsyntax-only", "-std=c++17", "-w",
           "-I", str(unit.parent), "-I", str(bench), "-I", str(src / "include"), str(unit)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=unit.parent,
                           env=dict(os.environ, HIP_PLATFORM="amd"))
    except subprocess.TimeoutExpired:
        return False, "timeout"
    return r.returncode == 0, next((l for l in r.stderr.splitlines() if "error" in l), "")


def run_target(src: Path, names: list[str], target: str, fix_args: list[str], jobs: int, tmp: Path) -> dict:
    plain, fixed = tmp / f"plain-{target}", tmp / f"fixed-{target}"
    copy_tree(src, names, plain)
    copy_tree(src, names, fixed)
    t_plain = convert(plain, target, [], jobs)
    t_fixed = convert(fixed, target, ["--apply-suggestions", *fix_args], jobs)
    before, after = audit(plain, target), audit(fixed, target)
    touched = [n for n in names if changed(plain / n, fixed / n)]
    hipcc = HIPCC[target]
    with cf.ThreadPoolExecutor(jobs) as ex:
        jobs_ = {n: [(u.relative_to(plain / n),
                      ex.submit(compile_unit, hipcc, u, plain / n, src),
                      ex.submit(compile_unit, hipcc, fixed / n / u.relative_to(plain / n), fixed / n, src))
                     for u in units(plain / n)] for n in touched}
        rows = []
        for n, us in jobs_.items():
            for rel, p, f in us:
                (ok_p, err_p), (ok_f, err_f) = p.result(), f.result()
                rows.append({"bench": n, "unit": str(rel), "plain": ok_p, "fixed": ok_f,
                             "error": err_f.replace(str(tmp) + "/", "") if ok_p and not ok_f else ""})
    return {"target": target, "benchmarks": len(names), "benchmarks_patched": len(touched),
            "units_compared": len(rows), "compile_plain": sum(r["plain"] for r in rows),
            "compile_fixed": sum(r["fixed"] for r in rows),
            "regressions": [r for r in rows if r["plain"] and not r["fixed"]],
            "repairs": [r for r in rows if r["fixed"] and not r["plain"]],
            "audit_plain": before, "audit_fixed": after,
            "convert_s": {"plain": round(t_plain, 1), "fixed": round(t_fixed, 1)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC, help="HeCBench's src/ folder")
    ap.add_argument("--targets", default="5.2,6.2", help="ROCm targets, comma-separated (5.2, 6.2)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N benchmarks (by name)")
    ap.add_argument("--only", default="", help="only these benchmarks, comma-separated names (e.g. `mpc,bmf`)")
    ap.add_argument("--fix-args", default="", help="extra arguments for the fixed conversion, e.g. '--select X'")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every figure and each regression to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="list each regression and repair")
    a = ap.parse_args(argv)
    if not a.src.is_dir():
        print(f"autofix: `{a.src}` is not HeCBench's src/ folder; pass --src", file=sys.stderr)
        return 2
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in HIPCC]
    if unknown:
        print(f"autofix: no compiler known for target `{unknown[0]}`; use 5.2 or 6.2", file=sys.stderr)
        return 2
    names = benchmarks(a.src, a.limit)
    if a.only:
        wanted = {n.strip() for n in a.only.split(",")}
        names = [n for n in names if n in wanted]
    results = []
    with tempfile.TemporaryDirectory(prefix="hipport-autofix-") as tmp:
        for t in targets:
            r = run_target(a.src, names, t, a.fix_args.split(), a.jobs, Path(tmp))
            results.append(r)
            print(f"ROCm {t}: {r['benchmarks_patched']}/{r['benchmarks']} benchmarks changed by patches; "
                  f"audit warnings+errors {r['audit_plain']['warning'] + r['audit_plain']['error']} -> "
                  f"{r['audit_fixed']['warning'] + r['audit_fixed']['error']} "
                  f"(errors {r['audit_plain']['error']} -> {r['audit_fixed']['error']}); units of changed "
                  f"benchmarks compiling {r['compile_plain']}/{r['units_compared']} -> "
                  f"{r['compile_fixed']}/{r['units_compared']}; regressions {len(r['regressions'])}, "
                  f"repairs {len(r['repairs'])}")
            if a.verbose:
                for row in r["regressions"]:
                    print(f"  regression {row['bench']}/{row['unit']}: {row['error']}")
                for row in r["repairs"]:
                    print(f"  repair {row['bench']}/{row['unit']}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 1 if any(r["regressions"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
