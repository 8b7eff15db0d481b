"""A project's `#define warpSize 32` in a header (HeCBench bm3d's indices.hpp): it rewrites HIP's own headers only in
a translation unit that reads one after it. Every file beside the header that includes it is checked, and the
includers of those that are headers (issue 34)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = "#ifndef IDX_HPP\n#define IDX_HPP\n#define warpSize 32\n#endif\n"
HOST = ('#include <cuda.h>\n#include "idx.hpp"\nint threads(int warps) { return warps * warpSize; }\n')


def _audit(cwd: Path):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", "--rocm-version", "7.2",
                           "--select", "hip-name-collision,warpsize-host", "."],
                          capture_output=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_header_every_includer_reads_after_hips_runtime_collides_with_nothing(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "idx.hpp").write_text(HEADER)
    (tmp_path / "main.cu").write_text(HOST)
    (tmp_path / "all.hpp").write_text('#include <cuda.h>\n#include "idx.hpp"\n#include <vector>\n')
    (tmp_path / "use.cu").write_text('#include "all.hpp"\nint n() { return warpSize; }\n')
    r = _audit(tmp_path)
    assert r.returncode == 0 and b"hip-name-collision" not in r.stdout and b"warpsize-host" not in r.stdout, \
        r.stdout + r.stderr


def test_an_includer_that_reads_a_hip_header_after_it_keeps_the_error(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "idx.hpp").write_text(HEADER)
    (tmp_path / "main.cu").write_text(HOST)
    (tmp_path / "late.cu").write_text('#include "idx.hpp"\n#include <cuda_runtime.h>\n')
    r = _audit(tmp_path)
    assert r.returncode == 1 and b"idx.hpp:3" in r.stdout and b"hip-name-collision" in r.stdout, r.stdout + r.stderr
