"""No data loss (issue 8, items 2 and 4): kill `hipport convert` at random moments and check every file is byte for
byte either its original or its fully converted content; after SIGINT/SIGTERM no temporary file is left and the
exit status is 130/143 with one line and no traceback; after SIGKILL a re-run removes the temporary files the
killed run left and completes the job.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hipport.files as files
from hipport.convert import ConvertOptions
import hipport.convert.runner as runner
from hipport.convert.runner import Interrupted, convert_one, convert_tree
from hipport.files import collect_sources, remove_stale_temps

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cuda"
# Fixed options so the in-process expectation and the command agree whatever is installed on the machine.
CLI_OPTIONS = ["--no-hipify-perl", "--rocm-version", "7.0", "-q"]


def start(tree: Path, jobs: int, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hipport", "convert", *CLI_OPTIONS, "--jobs", str(jobs), tree],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def build_tree(root: Path, rng: random.Random) -> None:
    """~300 files: the examples many times over, CUDA-heavy generated files (a few of 1-2 MB), files without CUDA,
    CRLF and Latin-1 ones, spread over nested directories."""
    examples = [p for p in EXAMPLES.rglob("*") if p.suffix in (".cu", ".cuh", ".h", ".cpp")]
    unit = (b"// kernel %d: r\xe9sum\xe9\n__global__ void k%d(float *p, int n) {\n"
            b"  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1.0f;\n}\n"
            b"void h%d(float *d, size_t n) {\n  cudaMalloc(&d, n); cudaMemset(d, 0, n);\n"
            b"  cudaDeviceSynchronize(); cudaFree(d);\n}\n")
    n = 0
    for d in range(12):
        sub = root / f"mod{d}" / ("inner" if d % 3 else "")
        sub.mkdir(parents=True, exist_ok=True)
        for _ in range(25):
            kind = rng.random()
            if kind < 0.45:
                src = rng.choice(examples).read_bytes()
                name = f"ex{n}{rng.choice(['.cu', '.cuh', '.cpp'])}"
            elif kind < 0.75:
                src = b"#include <cuda_runtime.h>\n" + b"".join(unit % (i, i, i) for i in range(rng.randint(5, 300)))
                name = f"gen{n}.cu"
            elif kind < 0.9:
                src = b"// no CUDA here\nint add%d(int a, int b) { return a + b; }\n" % n * rng.randint(1, 50)
                name = f"plain{n}.cpp"
            else:
                src = b"#include <cuda.h>\r\nvoid f%d() { cuInit(0); }\r\n// \xe9t\xe9\r\n" % n * rng.randint(1, 40)
                name = f"crlf{n}.h"
            (sub / name).write_bytes(src)
            n += 1
    for i in range(3):  # a few large ones
        (root / f"large{i}.cu").write_bytes(
            b"#include <cuda_runtime.h>\n" + b"".join(unit % (j, j, j) for j in range(4000 * (i + 1))))


@pytest.fixture(scope="module")
def kill_tree(tmp_path_factory, rules):
    base = tmp_path_factory.mktemp("kill")
    original = base / "original"
    build_tree(original, random.Random(8))
    before = {s.rel: s.path.read_bytes() for s in collect_sources([original])}
    options = ConvertOptions()
    after = {s.rel: convert_one(s, rules, options)[0].after for s in collect_sources([original])}
    assert all(v is not None for v in after.values())
    assert 250 <= len(before) <= 350 and sum(before[k] != after[k] for k in before) > 150
    # One uninterrupted run: its result is the engine's, and its duration bounds the kill delays.
    full = base / "full"
    shutil.copytree(original, full, symlinks=True)
    t0 = time.monotonic()
    p = start(full, 2, base)
    _, err = p.communicate(timeout=600)
    duration = time.monotonic() - t0
    assert p.returncode == 0, err
    assert {s.rel: s.path.read_bytes() for s in collect_sources([full])} == after
    return base, original, before, after, duration


def check_intact(tree: Path, before: dict, after: dict) -> tuple[int, int]:
    """Every file wholly old or wholly new; returns (new, old) counts."""
    new = old = 0
    got = {s.rel: s.path.read_bytes() for s in collect_sources([tree])}
    assert got.keys() == before.keys()
    for rel, data in got.items():
        if data == after[rel] and data != before[rel]:
            new += 1
        elif data == before[rel]:
            old += 1
        else:
            pytest.fail(f"{rel}: neither the original nor the converted content ({len(data)} bytes)")
    return new, old


# (signal, sent to the whole process group like Ctrl-C or a killed session, or to the main process like `kill`)
PLANS = [(signal.SIGKILL, True), (signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGTERM, True),
         (signal.SIGKILL, False), (signal.SIGINT, False)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_killed_at_random_moments_every_file_is_old_or_new_and_a_rerun_finishes(kill_tree, jobs):
    base, original, before, after, duration = kill_tree
    rng = random.Random(1000 + jobs)
    tree = base / f"run-j{jobs}"
    shutil.copytree(original, tree, symlinks=True)
    progress = []
    changed_total = sum(before[k] != after[k] for k in before)
    last_new = 0
    for sig, group in PLANS:
        left_before = set(tree.rglob("*" + files.TEMP_SUFFIX))  # by an earlier SIGKILL; removed by a full run
        p = start(tree, jobs, base)
        time.sleep(rng.uniform(0.05, duration))
        try:
            (os.killpg if group else os.kill)(p.pid, sig)
        except ProcessLookupError:
            pass
        _, err = p.communicate(timeout=120)
        if not group and sig == signal.SIGKILL:  # orphaned workers may still finish a file or two
            time.sleep(1.0)
        new, old = check_intact(tree, before, after)
        progress.append((sig.name, p.returncode, new))
        temps = set(tree.rglob("*" + files.TEMP_SUFFIX)) - left_before  # left by this run
        text = err.decode(errors="replace")
        if sig == signal.SIGKILL:
            assert p.returncode in (-signal.SIGKILL, 0)
        elif p.returncode == -sig or (p.returncode == 1 and "KeyboardInterrupt" in text):
            # The signal came during Python's start-up or exit, outside hipport's handlers: Python's default
            # behaviour, while nothing is being written (files intact, checked above).
            assert not temps, temps
            assert new in (last_new, changed_total), (text, new, last_new)
        else:
            assert not temps, temps
            assert "Traceback" not in text, text
            if p.returncode != 0:  # 0: it had finished before the signal came
                assert p.returncode == 128 + sig, (p.returncode, text)
                if text.strip().splitlines() == [f"hipport: interrupted by {sig.name}"]:
                    # SIGINT while hipport was still loading, before convert began: nothing written.
                    assert new == last_new, (text, new, last_new)
                else:
                    assert text.strip().splitlines() == [
                        f"hipport: interrupted by {sig.name}; every file is wholly old or wholly new; run again to "
                        "finish"], text
        last_new = new
        if new == changed_total:
            shutil.rmtree(tree)  # done already: start again from the originals for the next kill
            shutil.copytree(original, tree, symlinks=True)
            last_new = 0
    # A final run completes the job and leaves no temporary file behind (stale ones of killed runs removed).
    p = start(tree, jobs, base)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert {s.rel: s.path.read_bytes() for s in collect_sources([tree])} == after
    assert not list(tree.rglob("*" + files.TEMP_SUFFIX))
    print(f"jobs={jobs} full run {duration:.1f}s; kills (signal, status, files new): {progress}")


# -- deterministic pieces ---------------------------------------------------------------------------------------

def test_sigterm_during_a_write_finishes_that_write_then_stops(tmp_path, rules, monkeypatch):
    root = tmp_path / "t"
    root.mkdir()
    for name in ("a.cu", "b.cu", "c.cu"):
        (root / name).write_bytes(b"void f() { cudaFree(0); }\n")
    real_fsync = os.fsync
    calls = []

    def fsync(fd):  # the signal comes while the first converted file is being written
        calls.append(fd)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(runner, "BATCH_FILES", 1)  # files are written a batch at a time: here a file at a time
    with pytest.raises(Interrupted) as info:
        convert_tree(collect_sources([root]), rules, ConvertOptions(), write="inplace")
    assert info.value.signum == signal.SIGTERM and info.value.exit_code == 143
    assert [r.path for r in info.value.results] == [str(root / "a.cu")]  # raised as the write of a.cu completed
    assert (root / "a.cu").read_bytes() == b"#include <hip/hip_runtime.h>\nvoid f() { hipFree(0); }\n"   # finished, not abandoned
    assert (root / "b.cu").read_bytes() == (root / "c.cu").read_bytes() == b"void f() { cudaFree(0); }\n"
    assert not list(root.glob("*.hipport-tmp"))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_sigint_between_files_stops_before_the_next(tmp_path, rules, monkeypatch):
    root = tmp_path / "t"
    root.mkdir()
    for name in ("a.cu", "b.cu"):
        (root / name).write_bytes(b"void f() { cudaFree(0); }\n")
    old = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(runner, "BATCH_FILES", 1)  # between batches of files: here between files

    def after_first(source, result):
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Interrupted) as info:
        convert_tree(collect_sources([root]), rules, ConvertOptions(), write="inplace", on_result=after_first)
    assert info.value.exit_code == 130
    assert (root / "a.cu").read_bytes() == b"#include <hip/hip_runtime.h>\nvoid f() { hipFree(0); }\n"
    assert (root / "b.cu").read_bytes() == b"void f() { cudaFree(0); }\n"
    assert signal.getsignal(signal.SIGINT) is old  # handlers restored


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_rerun_removes_temp_files_of_dead_runs_only(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "k.cu").write_bytes(b"void f() { cudaFree(0); }\n")
    stale = root / f".k.cu.{dead_pid()}.ab12cd34.hipport-tmp"
    live = root / f".k.cu.{os.getpid()}.zz12cd34.hipport-tmp"   # a run still going (this process)
    unrelated = root / ".k.cu.notapid.hipport-tmp"
    for p in (stale, live, unrelated):
        p.write_bytes(b"half")
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", *CLI_OPTIONS, root], capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert not stale.exists() and live.exists() and unrelated.exists()
    assert remove_stale_temps([root]) == []


def test_temp_file_names_are_recognised(tmp_path):
    """write_atomic's temporary names match what remove_stale_temps looks for, even for very long names."""
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(Path(src).name)
        real_replace(src, dst)

    long_name = "x" * 200 + ".cu"
    import unittest.mock as mock

    with mock.patch.object(files.os, "replace", replace):
        files.write_atomic(tmp_path / long_name, b"data")
    assert files._TEMP_NAME.match(seen[0]) and f".{os.getpid()}." in seen[0]


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat_line = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_worker_killed_from_outside_names_the_files_and_does_not_hang(kill_tree):
    """The OOM killer takes one worker: the run ends (no hang, no traceback) with exit 3, each file it cannot vouch
    for named; every file is intact and a re-run completes the job."""
    base, original, before, after, duration = kill_tree
    tree = base / "worker-death"
    shutil.copytree(original, tree, symlinks=True)
    p = start(tree, 2, base)
    deadline = time.monotonic() + 30
    while len(children(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(min(1.0, duration / 3))
    os.kill(children(p.pid)[0], signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    text = err.decode()
    assert "Traceback" not in text, text
    if p.returncode != 0:  # 0: the killed worker had no work left
        assert p.returncode == 3, text
        lines = text.strip().splitlines()
        assert lines and all(line.startswith("error: ") and "a worker process died" in line for line in lines), text
    check_intact(tree, before, after)
    p = start(tree, 2, base)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert {s.rel: s.path.read_bytes() for s in collect_sources([tree])} == after
    shutil.rmtree(tree)
