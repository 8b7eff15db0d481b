"""Measure hipport on a generated corpus: wall time, lines per second, peak memory of the whole process tree,
and the single-file latency of the pre-commit path. Prints a table and writes benchmarks/RESULTS.md.

    python benchmarks/run.py                 # 1x corpus (>= 500 files, >= 200,000 lines)
    python benchmarks/run.py --scale 10      # also the 10x corpus, to show how cost grows
    python benchmarks/run.py --code DIR      # measure another checkout of hipport (e.g. an older commit)
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import build  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def measure(cmd: list[str], env: dict, cwd: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS of the process tree in MB, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    return wall, peak // 1024, code


_OPTIONS_WITH_VALUE = {"-j", "--rocm-version"}


def _supported(cmd: list[str], env: dict) -> list[str] | None:
    """Drop the options an older checkout does not have, so the same run measures it too."""
    sub = cmd.index("convert") if "convert" in cmd else cmd.index("audit")
    help_text = subprocess.run([*cmd[:sub + 1], "--help"], env=env, capture_output=True, text=True, cwd="/")
    if help_text.returncode != 0:
        return None
    out, skip = [], False
    for k, part in enumerate(cmd):
        if skip:
            skip = False
            continue
        if k > sub and part.startswith("-") and part not in help_text.stdout.split() and \
                not any(w.startswith(part + ",") or w.startswith(part + "/") for w in help_text.stdout.split()):
            skip = part in _OPTIONS_WITH_VALUE
            continue
        out.append(part)
    return out


def one_line_file(path: Path, megabytes: int) -> int:
    """A generated file of one line of ``megabytes`` MB (a constant table, as generators and minifiers write them):
    the case where memory per token, not per line, decides. Returns its size in bytes."""
    values = ", ".join(f"{i % 1000}.{i % 7}" for i in range(megabytes * 1024 * 1024 // 7))
    path.write_bytes(b"#include <cuda_runtime.h>\n__constant__ float table[] = {" + values.encode()
                     + b"}; void f() { cudaFree(0); }\n")
    return path.stat().st_size


def measure_one_line(hipport: list[str], env: dict, tmp: Path, megabytes: int) -> tuple[float, int, float]:
    """(input MB, peak RSS MB, peak / input) of `convert --check` on a one-line file (issue 24: at most 10x)."""
    path = tmp / "one-line.cu"
    size = one_line_file(path, megabytes)
    _, rss, _ = measure([*hipport, "convert", "--check", str(path), "-q", "--no-cache", "--no-hipify-perl"], env, tmp)
    path.unlink()
    return size / (1024 * 1024), rss, rss * 1024 * 1024 / size


def count_lines(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, action="append", help="corpus scale(s) to run (default: 1)")
    parser.add_argument("--code", type=Path, default=ROOT, help="hipport checkout to measure (default: this one)")
    parser.add_argument("--label", default="current", help="name of this measurement in the table")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median wall time counts")
    parser.add_argument("--one-line-mb", type=int, default=28,
                        help="size of the generated one-line file whose peak memory / input size is reported "
                             "(0: skip)")
    parser.add_argument("--only-one-line", action="store_true", help="measure the one-line file only")
    args = parser.parse_args()
    if args.only_one_line:
        args.no_write = True
    scales = args.scale or [1]
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve()), "HIPPORT_HIPIFY_PERL": "off"}
    hipport = [sys.executable, "-m", "hipport"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hipport-bench-") as tmp:
        tmp = Path(tmp)
        # Warm the rule cache once so every timed run pays what a user's second run pays.
        subprocess.run([*hipport, "convert", "--check", str(ROOT / "examples" / "cuda")], env=env,
                       capture_output=True, cwd=tmp)
        memory_line = ""
        if args.one_line_mb:
            size_mb, rss, ratio = measure_one_line(hipport, env, tmp, args.one_line_mb)
            memory_line = (f"one-line file of {size_mb:.1f} MB: `convert --check` peak RSS {rss} MB = {ratio:.1f}x the "
                           "input (peak memory / input size)\n")
            print(memory_line, end="")
            if args.only_one_line:
                return
        for scale in scales:
            corpus = tmp / f"corpus{scale}"
            build(corpus, scale)
            files, lines = count_lines(corpus)
            runs = [
                ("convert", [*hipport, "convert", str(corpus), "-o", str(tmp / f"out{scale}"), "-q",
                             "--rocm-version", "6.3", "--no-hipify-perl", "--no-cache", "-j", str(args.jobs)]),
                ("audit", [*hipport, "audit", str(corpus), "-q", "--no-cache", "-j", str(args.jobs)]),
            ]
            for name, cmd in runs:
                cmd = _supported(cmd, env)
                if cmd is None:
                    continue  # an older checkout without this command
                runs_measured = [measure(cmd, env, tmp) for _ in range(args.repeat)]
                wall = sorted(r[0] for r in runs_measured)[len(runs_measured) // 2]
                rss = max(r[1] for r in runs_measured)
                code = runs_measured[0][2]
                rows.append((args.label, f"{name} {scale}x", files, lines, wall, lines / wall, rss, code))
        one = corpus / "module0000" / "reduction" / "reduction.cu"
        for name, cmd in (("hook: audit 1 file", [*hipport, "audit", str(one), "-q"]),
                          ("hook: convert 1 file", [*hipport, "convert", "--check", str(one), "-q"])):
            cmd = _supported(cmd, env)
            if cmd is None:
                continue
            walls = sorted(measure(cmd, env, tmp)[0] for _ in range(5))
            rows.append((args.label, name, 1, one.read_bytes().count(b"\n"), walls[2], 0, 0, 0))
    header = ("| run | what | files | lines | wall s (median) | lines/s | peak RSS MB |\n"
              "|---|---|---:|---:|---:|---:|---:|\n")
    table = header + "".join(
        f"| {label} | {what} | {files} | {lines} | {wall:.2f} | {lps:,.0f} | {rss} |\n"
        for label, what, files, lines, wall, lps, rss, _ in rows)
    print(table)
    if not args.no_write:
        machine = f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"
        command = "python benchmarks/run.py " + " ".join(sys.argv[1:])
        block = (f"\n## {args.label} ({time.strftime('%Y-%m-%d')}; {machine})\n\n`{command}`\n\n{table}"
                 + (f"\n{memory_line}" if memory_line else ""))
        with args.results.open("a", encoding="utf-8") as fh:
            fh.write(block)
        print(f"appended to {args.results}")


if __name__ == "__main__":
    main()
