"""Headers that only excluded files include are out of the AMD build too (CTranslate2's HIP build drops
`awq/*_gpu.cu`, and with them `awq/dequantize.cuh`): `hipport audit --exclude` leaves them out, says so on one line,
and keeps a header another file includes or that no file includes."""

import os
import subprocess
import sys
from pathlib import Path

from hipport.excluded_includes import only_excluded_include

ROOT = Path(__file__).resolve().parents[1]
PTX = '__device__ int f(int x) { int y; asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x)); return y; }\n'


def tree(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "awq.cuh").write_text("#pragma once\n" + PTX)
    (tmp_path / "ops" / "deep.cuh").write_text('#pragma once\n#include "awq.cuh"\n')
    (tmp_path / "ops" / "awq_gpu.cu").write_text('#include "deep.cuh"\n#include "shared.cuh"\n')
    (tmp_path / "ops" / "shared.cuh").write_text("#pragma once\n" + PTX.replace("f(", "g("))
    (tmp_path / "ops" / "kept.cu").write_text('#include "shared.cuh"\n')
    (tmp_path / "ops" / "lone.cuh").write_text("#pragma once\n" + PTX.replace("f(", "h("))
    return tmp_path


def test_only_headers_every_includer_of_which_is_excluded(tmp_path):
    ops = tree(tmp_path) / "ops"
    kept = [str(ops / n) for n in ("awq.cuh", "deep.cuh", "kept.cu", "lone.cuh", "shared.cuh")]
    why = only_excluded_include(kept, [str(ops / "awq_gpu.cu")])
    assert sorted(Path(p).name for p in why) == ["awq.cuh", "deep.cuh"]
    assert only_excluded_include(kept, []) == {}


def test_audit_leaves_them_out_and_says_so(tmp_path):
    ops = tree(tmp_path) / "ops"
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", "--rocm-version", "7.2", "--exclude", "awq_gpu.cu",
                        str(ops)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1, r.stderr  # the inline PTX of shared.cuh and lone.cuh is an error
    flagged = {Path(line.split(":")[0]).name for line in r.stdout.splitlines() if "inline-ptx" in line}
    assert flagged == {"shared.cuh", "lone.cuh"}
    assert "left out: 2 headers only excluded files include (first: " in r.stderr
    plain = subprocess.run([sys.executable, "-m", "hipport", "audit", "--rocm-version", "7.2", str(ops)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert plain.returncode == 1
    assert {Path(line.split(":")[0]).name for line in plain.stdout.splitlines() if "inline-ptx" in line} == {
        "shared.cuh", "lone.cuh", "awq.cuh"}


def macro_tree(tmp_path):
    """CTranslate2's shape: `utils.h`, which every file includes, wraps cuDNN in `CUDNN_CHECK`; only the excluded
    `conv_cudnn.cu` expands it, and `utils.cc` does only on the NVIDIA platform's branch."""
    (tmp_path / "utils.h").write_text(
        "#pragma once\n"
        "#define CUDNN_CHECK(ans) \\\n"
        "  { cudnnStatus_t status = (ans); \\\n"
        "    if (status != CUDNN_STATUS_SUCCESS) throw status; }\n"
        "#define BLAS_CHECK(ans) \\\n"
        "  { cudnnStatus_t status = (ans); (void)status; }\n"
        "#define UNUSED_CHECK(ans) \\\n"
        "  { cudnnStatus_t status = (ans); (void)status; }\n")
    (tmp_path / "conv_cudnn.cu").write_text('#include "utils.h"\nvoid f() { CUDNN_CHECK(cudnnCreate(0)); }\n')
    (tmp_path / "utils.cc").write_text('#include "utils.h"\n#ifndef __HIP_PLATFORM_AMD__\nvoid g() { CUDNN_CHECK(0); }\n'
                                       '#endif\nvoid h() { BLAS_CHECK(0); }\n')
    return tmp_path


def test_a_macro_only_excluded_files_expand_is_out_of_the_build(tmp_path):
    # Look-alikes: BLAS_CHECK, which a kept file expands, and UNUSED_CHECK, which nothing expands (a header's
    # macro for its users), keep their findings; without --exclude CUDNN_CHECK keeps its own.
    root = macro_tree(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "hipport", "audit", "--rocm-version", "7.2", "--fail-on", "error"]
    r = subprocess.run([*base, "--exclude", "conv_cudnn.cu", str(root)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = {int(line.split(":")[1]) for line in r.stdout.splitlines()
             if line.startswith(str(root / "utils.h")) and "unsupported-api" in line}
    assert lines == {6, 8}, r.stdout
    plain = subprocess.run([*base, str(root)], capture_output=True, text=True, env=env)
    assert plain.returncode == 0, plain.stderr
    assert {int(line.split(":")[1]) for line in plain.stdout.splitlines()
            if line.startswith(str(root / "utils.h")) and "unsupported-api" in line} == {3, 4, 6, 8}
