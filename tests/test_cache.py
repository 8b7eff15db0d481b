"""The audit's content-hash cache: used on a second run, invalidated by options and rules, safe to share."""

import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hipport.cache import ResultCache, rules_fingerprint
from hipport.model import Finding

ROOT = Path(__file__).resolve().parents[1]
# A lane of 32 beside a shuffle: a lane-math-32 warning (without the shuffle, a group of 32 is right on AMD: info).
KERNEL = b"__global__ void k(int *o, int v) { int lane = threadIdx.x & 31; o[lane] = __shfl_down(v, 1); }\n"


def audit(cwd, *args):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", *map(str, args)], capture_output=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_second_run_reads_the_cache_and_options_start_afresh(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "k.cu").write_bytes(KERNEL)
    first = audit(tmp_path, "k.cu", "--cache-dir", cache, "-q")
    assert first.returncode == 1 and b"lane-math-32" in first.stdout, first.stderr
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert len(entries) == 1
    # Plant a finding only the cache can produce: the second run must report it.
    planted = Finding("lane-math-32", "warning", 1, 1, "planted by the test")
    entries[0].write_bytes(pickle.dumps([planted]))
    # Each run below fails on a warning (exit 1), so its output is the audit's, never an error message.
    replay = audit(tmp_path, "k.cu", "--cache-dir", cache, "-q")
    assert replay.returncode == 1 and b"planted by the test" in replay.stdout, replay.stderr
    fresh = audit(tmp_path, "k.cu", "--cache-dir", cache, "--no-cache", "-q")
    assert fresh.returncode == 1 and b"lane-math-32" in fresh.stdout and b"planted by the test" not in fresh.stdout
    other = audit(tmp_path, "k.cu", "--cache-dir", cache, "--rocm-version", "6.2", "-q")
    assert other.returncode == 1
    assert b"planted by the test" not in other.stdout and b"lane-math-32" in other.stdout
    (tmp_path / "k.cu").write_bytes(KERNEL + b"// edited\n")
    edited = audit(tmp_path, "k.cu", "--cache-dir", cache, "-q")
    assert edited.returncode == 1 and b"lane-math-32" in edited.stdout and b"planted by the test" not in edited.stdout


def test_rule_change_changes_the_fingerprint(tmp_path):
    extra = tmp_path / "team.toml"
    extra.write_text('[family]\nname = "t"\n')
    before = rules_fingerprint([extra])
    extra.write_text('[family]\nname = "t2"\n')
    assert rules_fingerprint([extra]) != before


def test_concurrent_writers_never_leave_a_torn_entry(tmp_path):
    cache = ResultCache("audit", "salt", tmp_path)
    payloads = [[Finding("r", "info", i, 1, "x" * 10000)] for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: cache.put(b"same file", p), payloads))
    got = cache.get(b"same file")
    assert got in payloads
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_unwritable_cache_only_costs_speed(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ResultCache("audit", "salt", blocker)
    cache.put(b"x", [1])
    assert cache.get(b"x") is None


def convert(cwd, *args):
    return subprocess.run([sys.executable, "-m", "hipport", "convert", *map(str, args)], capture_output=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_convert_remembers_files_with_nothing_to_change(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "done.cu").write_bytes(b"#include <hip/hip_runtime.h>\n__global__ void k() {}\n")
    (tmp_path / "todo.cu").write_bytes(b"void f(float *p) { cudaFree(p); }\n")
    r = convert(tmp_path, "--check", ".", "--cache-dir", cache)
    assert r.returncode == 1
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert len(entries) == 1  # done.cu only: a file that would change is not remembered
    planted = Finding("unsupported-api", "warning", 1, 1, "`planted` from the cache", subject="planted")
    entries[0].write_bytes(pickle.dumps(([planted], [], set())))
    r = convert(tmp_path, "--check", ".", "--cache-dir", cache, "-v")
    assert r.returncode == 1 and b"planted" in r.stderr
    r = convert(tmp_path, "--check", ".", "--cache-dir", cache, "-v", "--no-cache")
    assert r.returncode == 1 and b"planted" not in r.stderr and b"todo.cu" in r.stderr
    r = convert(tmp_path, ".", "--cache-dir", cache)  # converts todo.cu in place
    # (a .cu file calling the runtime gets its header: nvcc included cuda_runtime.h itself)
    assert r.returncode == 0 and (tmp_path / "todo.cu").read_bytes() == \
        b"#include <hip/hip_runtime.h>\nvoid f(float *p) { hipFree(p); }\n"
