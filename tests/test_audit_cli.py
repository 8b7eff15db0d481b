"""`hipport audit` on the command line: output format, exit codes, baselines."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REDUCTION = ROOT / "examples" / "cuda" / "reduction" / "reduction.cu"


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_output_and_exit_code(tmp_path):
    r = run(REDUCTION)
    assert r.returncode == 1
    # block_reduce_sum's ids (lines 48-49) count the 32-lane groups its 16..1 shuffles reduce: right on 64 lanes,
    # one info with a `width` 32 patch (issue 34). block_sum_kernel's `lane == 0` adds a 64-lane ballot per 32 lanes.
    assert f"{REDUCTION}:35:23: info warp-loop-32: shuffle offsets 16..1 with lane/warp ids of 32 lanes" in r.stdout
    assert "+        v += __shfl_down_sync(0xffffffff, v, offset, 32);" in r.stdout
    assert f"{REDUCTION}:48:34: warning lane-math-32" not in r.stdout
    assert f"{REDUCTION}:73:34: warning lane-math-32: `threadIdx.x & 31`" in r.stdout
    assert "-    const int lane = threadIdx.x & 31;" in r.stdout
    assert "+    const int lane = threadIdx.x % warpSize;" in r.stdout
    # The `*_sync` calls convert rewrites for the installed HIP 5.2 are converted work, not two errors (issue 21).
    assert "4 findings (3 warning, 1 info) in 1 file" in r.stderr


def test_fail_on_error_and_clean_file(tmp_path):
    clean = tmp_path / "clean.cu"
    clean.write_text("__global__ void k(int* o) { o[threadIdx.x % warpSize] = 1; }\n")
    assert run(clean).returncode == 0
    assert run(REDUCTION, "--fail-on", "error", "--select", "lane-math-32").returncode == 0
    assert run(REDUCTION, "--fail-on", "error").returncode == 0
    launch = tmp_path / "launch.cu"  # an error the conversion finds (dynamic parallelism) fails the run too
    launch.write_text("__global__ void c(float*p){}\n__global__ void p(float*q){ c<<<1,32>>>(q); }\n")
    assert run(launch, "--fail-on", "error").returncode == 1


def test_usage_errors():
    assert run(REDUCTION, "--select", "nope").returncode == 2
    assert run(REDUCTION, "--rocm-version", "seven").returncode == 2
    assert run(REDUCTION, "--offload-arch", "sm_80").returncode == 2
    assert run("no/such/path.cu").returncode == 2


def test_baseline_survives_edits_above(tmp_path):
    src = tmp_path / "r.cu"
    src.write_bytes(REDUCTION.read_bytes())
    base = tmp_path / "base.json"
    r = run(src, "--write-baseline", base)
    assert r.returncode == 0, r.stderr
    assert sum(e.get("count", 1) for e in json.loads(base.read_text())["findings"]) == 4
    src.write_bytes(b"// a new comment\n// and another\n" + REDUCTION.read_bytes())
    r = run(src, "--baseline", base)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    src.write_bytes(src.read_bytes() + b"__global__ void extra(int* o) { o[threadIdx.x >> 5] = __any(o[0]); }\n")
    r = run(src, "--baseline", base, "-q")
    assert r.returncode == 1
    assert r.stdout.count("lane-math-32") == 1 and "threadIdx.x >> 5" in r.stdout


def test_quiet_and_verbose():
    q = run(REDUCTION, "-q")
    assert q.returncode == 1 and q.stderr == ""
    # -q keeps each finding's first line and drops the source lines, patches and summary of the default output.
    full = run(REDUCTION)
    firsts = [line for line in full.stdout.splitlines() if line.startswith(f"{REDUCTION}:")]
    assert firsts and q.stdout.splitlines() == firsts, q.stdout
    v = run(REDUCTION, "-v")
    assert v.returncode == 1, v.stderr
    assert "[confidence: high]" in v.stdout and "rule: " in v.stdout


def test_help_documents_every_option():
    r = run("--help")
    assert r.returncode == 0, r.stderr
    for option in ("--exclude", "--offload-arch", "--rocm-version", "--select", "--ignore", "--fail-on",
                   "--baseline", "--write-baseline", "--quiet", "--verbose"):
        assert option in r.stdout
