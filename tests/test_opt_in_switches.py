"""An opt-in switch nothing defines (`#ifdef PTX` with a portable `#else`, HeCBench warpexchange, bscan, quantAQLM):
the audit asks the project's build files (every `-D`) and the run's files (every `#define`) whether some
configuration defines it; only then is the PTX branch worth an `inline-ptx` error (issue 34)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = ("__device__ unsigned lane_id() {\n  unsigned id;\n#ifdef PTX\n"
          "  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(id));\n#else\n  id = threadIdx.x % warpSize;\n#endif\n"
          "  return id;\n}\n")
MAIN = '#include <cuda_runtime.h>\n#include "lane.cuh"\n__global__ void k(unsigned* o) { o[threadIdx.x] = lane_id(); }\n'


def _audit(cwd: Path):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", "--select", "inline-ptx", "."],
                          capture_output=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_ptx_under_a_switch_nothing_defines_is_not_compiled(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "lane.cuh").write_text(HEADER)
    (tmp_path / "main.cu").write_text(MAIN)
    r = _audit(tmp_path)
    assert r.returncode == 0 and b"inline-ptx" not in r.stdout, r.stdout + r.stderr


def test_a_build_option_that_passes_the_switch_keeps_the_error(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "lane.cuh").write_text(HEADER)
    (tmp_path / "main.cu").write_text(MAIN)
    (tmp_path / "Makefile").write_text("ifeq ($(PTX),yes)\n  CFLAGS += -DPTX\nendif\n")
    r = _audit(tmp_path)
    assert r.returncode == 1 and b"lane.cuh:4" in r.stdout and b"inline-ptx" in r.stdout, r.stdout + r.stderr


def test_an_includer_that_defines_the_switch_keeps_the_error(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "lane.cuh").write_text(HEADER)
    (tmp_path / "main.cu").write_text("#define PTX\n" + MAIN)
    r = _audit(tmp_path)
    assert r.returncode == 1 and b"lane.cuh:4" in r.stdout, r.stdout + r.stderr
