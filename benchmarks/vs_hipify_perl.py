"""Time a cold `hipport convert` of a tree against hipify-perl on copies of the same tree, side by side in one
run, and the pre-commit paths (one changed file audited, and converted with `--check`). Prints a table; the ratio
is hipify-perl's wall time over hipport's.

    python benchmarks/vs_hipify_perl.py                        # HeCBench's *-cuda folders from ../shared
    python benchmarks/vs_hipify_perl.py --tree DIR --repeat 5  # another tree (e.g. NVIDIA/cuda-samples)
    python benchmarks/vs_hipify_perl.py --code /tmp/old        # another checkout of hipport

hipify-perl runs as its users run it on a tree: `-inplace -quiet-warnings`, on every source, two processes
(`xargs -P2`). hipport runs with as many jobs (`-j 2`), no result cache (`--no-cache`, so every file is
converted), without importing hipify-perl's tables, with its bytecode compiled as an installed package has it.
Each run gets a fresh copy of the tree; the fastest of the repeats counts, since other work on the machine only
ever adds time.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HECBENCH = ROOT.parent / "shared" / "corpus" / "hecbench" / "src"
HIPIFY_PERL = ROOT.parent / "shared" / "hipify-perl" / "hipify-perl"
# What hipify-perl's users hand it: the suffixes hipport converts as sources.
SOURCE_SUFFIXES = (".cu", ".cuh", ".hip", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl")


def copy_tree(tree: Path, dest: Path) -> None:
    cuda = sorted(sub for sub in tree.iterdir() if sub.name.endswith("-cuda") and sub.is_dir())
    if cuda:  # HeCBench: the CUDA versions only, the SYCL, OpenMP and HIP ones are not the input
        for sub in cuda:
            shutil.copytree(sub, dest / sub.name, symlinks=True)
    else:
        shutil.copytree(tree, dest, symlinks=True)


def sources(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file() and not p.is_symlink())


def timed(cmd: list[str], env: dict, cwd: Path, stdin: bytes | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and its children, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, default=HECBENCH, help="the CUDA tree (default: HeCBench's *-cuda)")
    ap.add_argument("--code", type=Path, default=ROOT, help="hipport checkout to measure (default: this one)")
    ap.add_argument("--hipify-perl", type=Path, default=HIPIFY_PERL, dest="hipify_perl")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the fastest counts (default 3)")
    ap.add_argument("--workers", type=int, default=2, help="hipify-perl processes, and hipport's --jobs")
    args = ap.parse_args()
    for what, path in (("--tree", args.tree), ("--hipify-perl", args.hipify_perl)):
        if not path.exists():
            print(f"{path}: not found; give {what}", file=sys.stderr)
            return 2
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve()), "HIPPORT_HIPIFY_PERL": "off"}
    hipport = [sys.executable, "-m", "hipport"]
    perl = shutil.which("perl") or "perl"
    rows: list[tuple[str, int, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="hipport-vs-") as tmp:
        tmp = Path(tmp)
        # An installed hipport has its bytecode compiled; a checkout under PYTHONDONTWRITEBYTECODE compiles every
        # module in every process (a quarter of a second). Bytecode goes to a private folder, not the checkout.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        subprocess.run([*hipport, "audit", "--help"], env=env, cwd=tmp, capture_output=True)
        copy_tree(args.tree, tmp / "tree")
        files = sources(tmp / "tree")
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        best: dict[str, tuple[float, float]] = {}
        for i in range(args.repeat):
            # Alternate who goes first, so a burst of load elsewhere does not always fall on the same one.
            order = ("hipify-perl", "hipport") if i % 2 == 0 else ("hipport", "hipify-perl")
            for name in order:
                work = tmp / f"{name}-{i}"
                shutil.copytree(tmp / "tree", work, symlinks=True)
                if name == "hipport":
                    cmd = [*hipport, "convert", str(work), "-q", "--no-cache", "-j", str(args.workers)]
                    wall, cpu, code = timed(cmd, env, tmp)
                    ok = code in (0, 1)  # 1: findings to look at; the tree is converted
                else:
                    names = b"\0".join(os.fsencode(p) for p in sources(work)) + b"\0"
                    cmd = ["xargs", "-0", "-n", "64", "-P", str(args.workers), perl, str(args.hipify_perl),
                           "-inplace", "-quiet-warnings"]
                    wall, cpu, code = timed(cmd, env, tmp, stdin=names)
                    ok = code == 0
                if not ok:
                    print(f"{name} failed (exit {code}) on {work}", file=sys.stderr)
                    return 1
                shutil.rmtree(work)
                old = best.get(name)
                best[name] = (min(wall, old[0]) if old else wall, min(cpu, old[1]) if old else cpu)
        rows += [(name, len(files), *best[name]) for name in ("hipify-perl", "hipport")]

        # The pre-commit path: one changed file, audited as the hook does it (a cold process each time). A file of
        # the median size among the .cu files: what a commit typically touches. Each run changes it (a comment line
        # more), so its audit is not in the result cache, as for a file just edited; the unchanged file (what the
        # hook costs for the files of a commit it has seen) is timed too. Bare Python's start is the floor.
        kernels = sorted((p for p in files if p.suffix == ".cu"), key=lambda p: p.stat().st_size)
        one = kernels[len(kernels) // 2]
        one_size = one.stat().st_size
        audit = [*hipport, "audit", str(one), "-q"]
        timed(audit, env, tmp)  # the rules and tables in the user cache, as after any earlier run
        runs = max(5, args.repeat)
        changed = []
        for n in range(runs):
            with one.open("ab") as fh:
                fh.write(f"// edit {n}\n".encode())
            changed.append(timed(audit, env, tmp))
        unchanged = [timed(audit, env, tmp) for _ in range(runs)]
        # The `hipport-convert` hook on the same file, changed before each run.
        convert_one = [*hipport, "convert", "--check", str(one), "-q"]
        converted = []
        for n in range(runs):
            with one.open("ab") as fh:
                fh.write(f"// convert edit {n}\n".encode())
            converted.append(timed(convert_one, env, tmp))
        bare = min(timed([sys.executable, "-c", "pass"], env, tmp)[0] for _ in range(runs))

    ratio = rows[0][2] / rows[1][2]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"tree: {args.tree} ({len(files)} sources, {lines:,} lines); {cores} cores, {platform.machine()}, "
          f"Python {platform.python_version()}; fastest of {args.repeat}, {args.workers} workers each")
    print(f"{'':14}{'wall s':>9}{'cpu s':>9}")
    for name, _, wall, cpu in rows:
        print(f"{name:14}{wall:9.2f}{cpu:9.2f}")
    print(f"hipport is {ratio:.1f}x faster than hipify-perl (wall; {rows[0][3] / rows[1][3]:.1f}x in CPU time)")
    def median(times):
        return sorted(t[0] for t in times)[len(times) // 2]

    print(f"hook: audit of one file ({one.name}, {one_size:,} bytes), fastest of {runs}: changed "
          f"{min(h[0] for h in changed):.2f} s wall ({min(h[1] for h in changed):.2f} s CPU; median "
          f"{median(changed):.2f} s), unchanged {min(h[0] for h in unchanged):.2f} s wall (median "
          f"{median(unchanged):.2f} s); `convert --check` of it changed {min(h[0] for h in converted):.2f} s wall "
          f"(median {median(converted):.2f} s); bare `python -c pass` {bare:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
