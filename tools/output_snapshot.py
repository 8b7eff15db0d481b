#!/usr/bin/env python3
"""Fingerprint what `hipport convert` and `hipport audit --report json` print on the examples, the benchmark corpus
and (when `../shared/` is there) a sample of HeCBench, so that a refactoring can be shown to change no output.

    python3 tools/output_snapshot.py before.json            # on the old code
    python3 tools/output_snapshot.py after.json --compare before.json   # exit 1 on any difference

Each tree is converted with `--diff` (the full converted text, as a diff, with nothing written) and audited with
the JSON report, caches off, in a scratch copy, so the recorded paths are the same in every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HECBENCH = ROOT.parent / "shared" / "corpus" / "hecbench" / "src"
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import build  # noqa: E402

# The JSON report names the tool's version and when it ran; neither is the output under comparison.
_VOLATILE = re.compile(rb'"(?:generated|created|timestamp|date)"\s*:\s*"[^"]*"')


def _trees(scratch: Path, hecbench_limit: int) -> dict[str, Path]:
    trees = {"examples": scratch / "examples"}
    shutil.copytree(ROOT / "examples" / "cuda", trees["examples"])
    trees["benchmark-corpus"] = scratch / "bench"
    build(trees["benchmark-corpus"], scale=1)
    if HECBENCH.is_dir():
        dest = scratch / "hecbench"
        names = sorted(p.name for p in HECBENCH.iterdir() if p.name.endswith("-cuda"))[:hecbench_limit]
        for n in names:
            shutil.copytree(HECBENCH / n, dest / n, symlinks=True)
        trees["hecbench-sample"] = dest
    return trees


def _run(cmd: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True)
    return proc.returncode, proc.stdout, proc.stderr


def snapshot(hecbench_limit: int) -> dict:
    out = {}
    with tempfile.TemporaryDirectory(prefix="hipport-snap-") as tmp:
        scratch = Path(tmp)
        for name, tree in _trees(scratch, hecbench_limit).items():
            rel = tree.relative_to(scratch).as_posix()
            for label, cmd in (
                ("convert --diff", ["hipport", "convert", rel, "--diff", "--no-cache", "--no-hipify-perl", "-j", "2"]),
                ("audit json", ["hipport", "audit", rel, "--report", "json", "-o", "-", "--no-cache", "-j", "2"]),
            ):
                code, stdout, stderr = _run(cmd, scratch)
                stdout = _VOLATILE.sub(b'"volatile": ""', stdout)
                out[f"{name}: {label}"] = {"exit": code, "stdout_sha256": hashlib.sha256(stdout).hexdigest(),
                                           "stdout_bytes": len(stdout)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, metavar="BEFORE")
    ap.add_argument("--hecbench", type=int, default=80, metavar="N", help="HeCBench benchmarks to include (80)")
    args = ap.parse_args()
    snap = snapshot(args.hecbench)
    args.out.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    for key, value in snap.items():
        print(f"{key:40} exit {value['exit']}  {value['stdout_bytes']:>10} bytes  {value['stdout_sha256'][:16]}")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text())
    differ = sorted(k for k in {*before, *snap} if before.get(k) != snap.get(k))
    for k in differ:
        print(f"DIFFERS: {k}: {before.get(k)} -> {snap.get(k)}")
    print("identical" if not differ else f"{len(differ)} outputs differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
