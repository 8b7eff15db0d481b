"""Score hipport and hipify-perl against HIPIFY's own unit tests (the `// CHECK:` lines of tests/unit_tests/).

    python benchmarks/hipify_unit_tests.py DIR [--hipify-perl PATH] [--rocm-version X.Y] [--code DIR] [--show]

DIR holds test files of ROCm/HIPIFY's tests/unit_tests/ (any sub-folders; fetch them yourself, this repository
keeps no copy). Each `.cu`/`.cpp` file with a `// RUN:` line is converted twice, with the options its RUN line asks
for: `hipport convert --stdout` (`--roc` for `-roc`/`--roc`, `--launch-syntax hip` where the CHECK lines expect
`hipLaunchKernelGGL`) and `perl hipify-perl` (`-roc`, `-hip-kernel-execution-syntax`). Then every `CHECK:` and
`CHECK-NEXT:` line is looked for in each output, in order, the way FileCheck does: a substring of one output line,
runs of spaces and tabs equal. Two departures, both on the side of the tools: comment lines of the output are
skipped (hipify-perl renames the CHECK comments themselves), and an `#include` matches by header file name
(`"rocsparse.h"` and `<rocsparse/rocsparse.h>` are equal, the folder layout being the installation's). CHECK-NOT
lines are not scored.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PERL = ROOT.parent / "shared" / "hipify-perl" / "hipify-perl"
CHECK = re.compile(r"//\s*CHECK(?:-NEXT)?:\s?(.*)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def normal(line: str) -> str:
    m = INCLUDE.match(line)
    if m:
        return "#include " + m.group(1).rsplit("/", 1)[-1]
    return " ".join(line.split())


def checks(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        m = CHECK.search(line)
        if m and m.group(1).strip():
            out.append(m.group(1).strip())
    return out


def matched(expected: list[str], output: str) -> list[bool]:
    """Each CHECK line found in order (FileCheck's way: a substring of a line at or after the last match)."""
    lines = [normal(x) for x in output.splitlines() if not x.lstrip().startswith("//")]
    found, at = [], 0
    for want in expected:
        pattern = normal(want)
        hit = next((k for k in range(at, len(lines)) if
                    (lines[k] == pattern if pattern.startswith("#include ") else pattern in lines[k])), None)
        found.append(hit is not None)
        if hit is not None:
            at = hit
    return found


@dataclass
class Score:
    name: str
    roc: bool
    expected: list[str]
    ours: list[bool] = field(default_factory=list)
    perl: list[bool] = field(default_factory=list)


def run_hipport(path: Path, roc: bool, launch: bool, rocm: str, code: Path) -> str:
    cmd = [sys.executable, "-m", "hipport", "convert", "--stdout", "--no-cache", "--no-hipify-perl",
           "--rocm-version", rocm] + (["--roc"] if roc else []) + (["--launch-syntax", "hip"] if launch else [])
    env = {**os.environ, "PYTHONPATH": str(code)}
    r = subprocess.run([*cmd, str(path)], capture_output=True, text=True, errors="replace", cwd=code, env=env)
    return r.stdout if r.returncode in (0, 1) or r.stdout else ""


def run_perl(perl: Path, path: Path, roc: bool, launch: bool, tmp: Path) -> str:
    copy = tmp / path.name
    shutil.copyfile(path, copy)
    flags = ["-quiet-warnings"] + (["-roc"] if roc else []) + (["-hip-kernel-execution-syntax"] if launch else [])
    r = subprocess.run(["perl", str(perl), *flags, str(copy)], capture_output=True, text=True, errors="replace",
                       timeout=600)
    return r.stdout


def score(folder: Path, perl: Path, rocm: str, code: Path = ROOT) -> list[Score]:
    scores = []
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".cu", ".cpp") and p.is_file())
    with tempfile.TemporaryDirectory(prefix="hipify-ut-") as tmp:
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            run = next((x for x in text.splitlines() if "RUN:" in x), None)
            expected = checks(text)
            if run is None or not expected:
                continue
            roc = bool(re.search(r"(?<![\w-])-?-roc\b", run))
            launch = any("hipLaunchKernelGGL" in x for x in expected)
            s = Score(str(path.relative_to(folder)), roc, expected)
            s.ours = matched(expected, run_hipport(path, roc, launch, rocm, code))
            s.perl = matched(expected, run_perl(perl, path, roc, launch, Path(tmp)))
            scores.append(s)
    return scores


def report(scores: list[Score], show: bool) -> str:
    rows = ["| test | --roc | CHECK lines | hipport | hipify-perl | only hipport | only hipify-perl |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    tot = [0, 0, 0, 0, 0]
    for s in scores:
        n, a, b = len(s.expected), sum(s.ours), sum(s.perl)
        oa = sum(x and not y for x, y in zip(s.ours, s.perl))
        ob = sum(y and not x for x, y in zip(s.ours, s.perl))
        for k, v in enumerate((n, a, b, oa, ob)):
            tot[k] += v
        rows.append(f"| {s.name} | {'yes' if s.roc else ''} | {n} | {a} | {b} | {oa} | {ob} |")
    n = tot[0] or 1
    rows.append(f"| **all {len(scores)} files** | | {tot[0]} | {tot[1]} ({100 * tot[1] / n:.1f}%) | "
                f"{tot[2]} ({100 * tot[2] / n:.1f}%) | {tot[3]} | {tot[4]} |")
    if show:
        rows.append("")
        for s in scores:
            for want, a, b in zip(s.expected, s.ours, s.perl):
                if not a:
                    rows.append(f"{s.name}: hipport misses{' (hipify-perl too)' if not b else ''}: `{want}`")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="folder of HIPIFY unit tests (tests/unit_tests or part of it)")
    ap.add_argument("--hipify-perl", type=Path, default=DEFAULT_PERL, help=f"default: {DEFAULT_PERL}")
    ap.add_argument("--rocm-version", default="6.3", help="ROCm release hipport converts for (default 6.3)")
    ap.add_argument("--code", type=Path, default=ROOT, help="hipport checkout to measure (default: this one)")
    ap.add_argument("--show", action="store_true", help="list the CHECK lines hipport does not produce")
    args = ap.parse_args(argv)
    if not args.hipify_perl.is_file():
        ap.error(f"no hipify-perl at {args.hipify_perl}")
    print(report(score(args.folder.resolve(), args.hipify_perl, args.rocm_version, args.code.resolve()), args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
