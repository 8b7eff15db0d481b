"""The pre-commit path stays light: `hipport audit FILE -q` on a file already in the result cache imports neither
the checks, nor the conversion, nor rich, the worker pool, --verify or the reports. What a run imports is most of
its time in a fresh process (0.43 s before these were deferred, 0.18 s after, on 2 cores). Likewise `hipport
convert FILE` of one source (the `hipport-convert` hook) loads no build-file, --verify or worker-pool code."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HAZARD = b"""#include <hip/hip_runtime.h>
__global__ void count(const float *x, int *out) {
  unsigned lane = threadIdx.x & 31;
  if (lane == 0) atomicAdd(out, __popcll(__ballot(x[threadIdx.x] > 0)));
}
"""

HEAVY = ("hipport.audit.engine", "hipport.audit.checks.context", "hipport.convert.engine", "hipport.convert.verify",
         "hipport.convert.build", "hipport.report.model", "rich", "multiprocessing", "concurrent.futures", "json")

RUN = """
import sys
from hipport.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    print("exit", exc.code)
print("loaded", *sorted(m for m in {heavy!r} if m in sys.modules))
"""


def _audit(path: Path, cache: Path) -> list[str]:
    env = {**os.environ, "HIPPORT_HIPIFY_PERL": "off", "HIPPORT_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", RUN.format(heavy=HEAVY), "audit", str(path), "-q"],
                          capture_output=True, text=True, env=env, cwd=path.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_a_cached_file_is_audited_without_the_checks_or_the_conversion(tmp_path):
    src = tmp_path / "k.cu"
    src.write_bytes(HAZARD)
    first = _audit(src, tmp_path / "cache")
    assert first[:2] == [f"{src}:3:31: warning lane-math-32: `threadIdx.x & 31` computes a lane index for 32-lane "
                         "warps; use `% warpSize`", "exit 1"]
    assert "hipport.audit.engine" in first[2].split()  # the check can fail: a file not cached runs the checks
    second = _audit(src, tmp_path / "cache")
    assert second == [*first[:2], "loaded"]  # the same finding and exit status, from the cache, and nothing heavy


CONVERT_HEAVY = ("hipport.convert.build", "hipport.convert.verify", "hipport.audit", "rich.progress",
                 "multiprocessing", "concurrent.futures")


def test_converting_one_source_loads_no_build_file_verify_or_worker_code(tmp_path):
    # The `hipport-convert` hook on a changed source: one process, no build file, no --verify.
    src = tmp_path / "k.cu"
    src.write_bytes(b"#include <cuda_runtime.h>\nint main() { cudaFree(0); }\n")
    env = {**os.environ, "HIPPORT_HIPIFY_PERL": "off", "HIPPORT_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", RUN.format(heavy=CONVERT_HEAVY), "convert", "--check", str(src),
                           "-q"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # `--check` names the file that would change, and nothing heavy was needed.
    assert proc.stdout.splitlines() == [str(src), "exit 1", "loaded"]
    (tmp_path / "Makefile").write_text("all:\n\tnvcc -o k k.cu\n")
    proc = subprocess.run([sys.executable, "-c", RUN.format(heavy=CONVERT_HEAVY), "convert", "--check",
                           str(tmp_path), "-q", "-j", "1"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2] == "exit 1" and "hipport.convert.build" in lines[-1].split()  # the check can fail
