"""`hipport audit` honours the project settings (`.hipport.toml` / `[tool.hipport]`); flags win."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = b"__global__ void a(int *o) { int lane = threadIdx.x & 31; o[lane] = __shfl(1, lane); }\n"
NEW = b"__global__ void b(int *o) { int warp = threadIdx.x / 32; o[warp] = __ballot(1) != 0; }\n"


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_baseline_fail_on_and_exclude_come_from_settings(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "old.cu").write_bytes(OLD)
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "v.cu").write_bytes(NEW)
    assert run(tmp_path, "audit", ".", "--write-baseline", "base.json").returncode == 0
    (tmp_path / ".hipport.toml").write_text('baseline = "base.json"\nexclude = ["vendor"]\nfail-on = "warning"\n')
    r = run(tmp_path, "audit", ".")
    assert r.returncode == 0, r.stdout + r.stderr
    assert b"in the baseline not shown" in r.stderr
    (tmp_path / "new.cu").write_bytes(NEW)
    r = run(tmp_path, "audit", "new.cu", "old.cu")
    assert r.returncode == 1 and b"new.cu:1" in r.stdout and b"old.cu" not in r.stdout
    (tmp_path / ".hipport.toml").write_text('baseline = "base.json"\nfail-on = "error"\n')
    assert run(tmp_path, "audit", "new.cu").returncode == 0
    assert run(tmp_path, "audit", "new.cu", "--fail-on", "warning").returncode == 1


def test_offload_arch_and_rocm_version_from_settings(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "t.cu").write_bytes(b"#include <hip/hip_cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
                                    b"__global__ void k() { auto t = cg::tiled_partition<64>(cg::this_thread_block()); }\n")
    (tmp_path / ".hipport.toml").write_text('offload-arch = ["gfx90a"]\n')
    wave64_only = run(tmp_path, "audit", "t.cu", "-q")
    (tmp_path / ".hipport.toml").write_text('offload-arch = ["gfx90a", "gfx1100"]\n')
    with_wave32 = run(tmp_path, "audit", "t.cu", "-q")
    assert wave64_only.returncode == 0 and wave64_only.stdout == b"", wave64_only.stderr
    assert with_wave32.returncode == 1 and b"error cg-tile-size" in with_wave32.stdout, with_wave32.stderr
    flag = run(tmp_path, "audit", "t.cu", "-q", "--offload-arch", "gfx942")
    assert flag.returncode == 0 and flag.stdout == b"", flag.stderr


def test_bad_setting_is_one_line(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "t.cu").write_bytes(OLD)
    (tmp_path / ".hipport.toml").write_text('fail-on = "sometimes"\n')
    r = run(tmp_path, "audit", "t.cu")
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"fail-on" in r.stderr
