#!/usr/bin/env python3
"""Build files on real code: how many HeCBench benchmarks `make` builds with hipcc after `hipport convert`,
against the Makefiles the benchmarks' authors ported to HIP by hand, measured the same way.

For each benchmark of the sample, in a scratch copy of the corpus's `src/` (the benchmark's folder copied, every
other folder linked, so `-I../include` and `../NAME-sycl/` paths resolve as in the corpus):

* converted: `NAME-cuda/` is converted with its Makefile (`hipport convert DIR --no-cache`: default options, so
  the targets are those the installed hipcc builds for; `--offload-arch` passes one), then `make -k` runs in it;
* hand port: `make -k` runs in a copy of `NAME-hip/` as it is.

Both with Debian's hipcc (`HIP_PLATFORM=amd`, `HCC_AMDGPU_TARGET=gfx90a` for Makefiles that name no target,
`ROCM_PATH=/usr`). A benchmark *builds* when `make` succeeds (every object compiled and the program linked); it
*compiles* when the only errors are the linker's (Debian lacks hipBLAS, hipFFT, hipSOLVER, hipCUB...). Nothing
is run.

    python3 benchmarks/hecbench_build.py                     # the default sample (every 19th benchmark: 20)
    python3 benchmarks/hecbench_build.py --every 1 -j 2      # all 375 (hours)
    python3 benchmarks/hecbench_build.py --json out.json -v  # per-benchmark results, failures listed
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
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
DEFAULT_SRC = ROOT.parent / "shared" / "corpus" / "hecbench" / "src"
_LINK_ERROR = re.compile(r"undefined reference|cannot find -l|ld returned|linker command failed|ld: ")
_ERROR = re.compile(r"\berror\b", re.I)


def scratch_tree(src: Path, into: Path) -> Path:
    """``into/src`` with a link to every folder of the corpus's src/."""
    tree = into / "src"
    tree.mkdir(parents=True)
    for entry in src.iterdir():
        (tree / entry.name).symlink_to(entry)
    return tree


def place(tree: Path, src: Path, folder: str) -> Path:
    """Replace the link to ``folder`` by a copy of it (make writes objects there)."""
    dst = tree / folder
    dst.unlink()
    shutil.copytree(src / folder, dst, symlinks=True)
    for path in [dst, *dst.rglob("*")]:  # the corpus is read-only; make writes objects, hipport rewrites sources
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return dst


def run_make(directory: Path, timeout: int) -> dict:
    env = {**os.environ, "HIP_PLATFORM": "amd", "HCC_AMDGPU_TARGET": "gfx90a"}
    t0 = time.time()
    try:
        r = subprocess.run(["make", "-k", "ROCM_PATH=/usr"], cwd=directory, capture_output=True, text=True,
                           env=env, timeout=timeout)
        out, code = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired:
        out, code = "timeout", -1
    errors = [line for line in out.splitlines() if _ERROR.search(line) and "warning" not in line.lower()
              and not line.startswith("make")]
    compile_errors = [line for line in errors if not _LINK_ERROR.search(line)]
    return {"built": code == 0, "compiled": code == 0 or (code > 0 and not compile_errors and bool(errors)),
            "first_error": (compile_errors or errors or [out.strip()[-200:]])[0][:300] if code != 0 else "",
            "seconds": round(time.time() - t0, 1)}


def measure(name: str, src: Path, conv_tree: Path, hand_tree: Path, timeout: int, arch: str | None) -> dict:
    conv = place(conv_tree, src, f"{name}-cuda")
    c = subprocess.run([sys.executable, "-m", "hipport", "convert", str(conv), "-q", "--no-cache",
                        *(["--offload-arch", arch] if arch else [])], capture_output=True, text=True, cwd=ROOT,
                       timeout=timeout)
    result = {"bench": name, "convert_exit": c.returncode}
    result["converted"] = run_make(conv, timeout)
    result["hand"] = run_make(place(hand_tree, src, f"{name}-hip"), timeout)
    shutil.rmtree(conv)
    shutil.rmtree(hand_tree / f"{name}-hip")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--every", type=int, default=19, help="take every Nth benchmark in name order (default 19)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many benchmarks")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900, help="seconds for one make")
    ap.add_argument("--offload-arch", help="targets for the converted Makefiles (default: hipport's default)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    src = a.src.resolve()
    if not src.is_dir():
        print(f"{src}: no HeCBench corpus here (--src)", file=sys.stderr)
        return 2
    names = sorted(d.name[:-5] for d in src.iterdir() if d.name.endswith("-cuda") and (src / f"{d.name[:-5]}-hip").is_dir()
                   and (d / "Makefile").is_file() and (src / f"{d.name[:-5]}-hip" / "Makefile").is_file())
    sample = names[:: a.every]
    if a.limit:
        sample = sample[: a.limit]
    work = Path(tempfile.mkdtemp(prefix="hecbench-build-"))
    try:
        conv_tree, hand_tree = scratch_tree(src, work / "converted"), scratch_tree(src, work / "hand")
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            results = list(pool.map(lambda n: measure(n, src, conv_tree, hand_tree, a.timeout, a.offload_arch), sample))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = len(results)
    summary = {side: {k: sum(r[side][k] for r in results) for k in ("built", "compiled")}
               for side in ("converted", "hand")}
    both = sum(r["converted"]["built"] and r["hand"]["built"] for r in results)
    if a.json:
        a.json.write_text(json.dumps({"benchmarks": total, "every": a.every, "summary": summary,
                                      "built_by_both": both, "results": results}, indent=1))
    if a.verbose:
        for r in results:
            for side in ("converted", "hand"):
                if not r[side]["built"]:
                    print(f"{r['bench']:24} {side:9} {'compiles, link fails' if r[side]['compiled'] else 'fails'}: "
                          f"{r[side]['first_error']}")
    for side, label in (("converted", "hipport convert (sources + Makefile)"), ("hand", "hand-ported Makefile")):
        s = summary[side]
        print(f"{label:38} built {s['built']}/{total}, compiled (link errors only) {s['compiled']}/{total}")
    print(f"built by both: {both}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
