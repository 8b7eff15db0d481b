"""`--verify --hipcc` with the real ROCm 7.2.4 compiler (`rocm7-hipcc`, ../shared/tools/rocm_chroot.sh): units are
compiled with code generation for the targets named, so what only code generation sees (a kernel's `__shared__`
memory over the target's LDS) fails the run; the settings' `defines` reach hipcc; and a header beside an audited
file outside /tmp is found although the compiler runs in a chroot that sees /tmp and the top folder of its working
directory only; `doctor --hipcc` tells each wrapper's ROCm release and its `*_sync` built-ins. Without the compiler
each test skips with its reason, and fails under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hipcc import real_hipcc

ROOT = Path(__file__).resolve().parents[1]

OK = b"""#include <cuda_runtime.h>
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
"""
# 80,000 bytes of shared memory: a syntax check passes it, gfx942's code generation refuses it (64 KiB of LDS).
BIG_LDS = b"""#include <cuda_runtime.h>
__global__ void big(float* o) {
    __shared__ float s[20000];
    s[threadIdx.x] = o[threadIdx.x];
    __syncthreads();
    o[threadIdx.x] = s[19999 - threadIdx.x];
}
"""
NEEDS_DEFINES = b"""#include <cuda_runtime.h>
#include "helper.cuh"
#ifndef USE_SCALE
#error "the AMD build defines USE_SCALE"
#endif
#ifdef CUDA_VERSION
#error "the AMD build never defines CUDA_VERSION"
#endif
__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = twice(x[i]) * USE_SCALE; }
"""
HELPER = b"#pragma once\n__device__ inline float twice(float x) { return 2.0f * x; }\n"


def hipport(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)


def test_codegen_finds_what_a_syntax_check_does_not(tmp_path):
    exe = real_hipcc("7.2")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.cu").write_bytes(OK)
    (tmp_path / "src" / "lds.cu").write_bytes(BIG_LDS)
    r = hipport("convert", tmp_path / "src", "--check", "--verify", "--hipcc", exe, "--rocm-version", "7.2",
                "--offload-arch", "gfx942,gfx1100")
    assert r.returncode == 4, r.stderr
    assert "verify: 2 translation units, hipcc (HIP 7.2, HIP_PLATFORM=amd, code generation) for gfx942,gfx1100: " \
           "1 of 2 do not compile" in r.stderr
    lds = tmp_path / "src" / "lds.cu"
    assert f"FAILED {lds}\n    {lds}:2:17: error: local memory (80000) exceeds limit (65536) in 'big(float*)'" \
        in r.stderr
    assert "cause: the `__shared__` memory of `big(float*)` (80000 bytes)" in r.stderr
    # the same text passes a syntax check: only code generation finds it
    copy = tmp_path / "lds.hip"
    copy.write_bytes(BIG_LDS.replace(b"cuda_runtime.h", b"hip/hip_runtime.h"))
    syntax = subprocess.run([exe, "-x", "hip", "--offload-arch=gfx942", "-fsyntax-only", copy.name], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert syntax.returncode == 0, syntax.stderr


def test_audit_verify_defines_and_a_header_beside_a_file_outside_tmp():
    """The tree lies beside the repository (not under /tmp): the audited file is compiled from a copy in /tmp,
    its header found beside the original, with the settings' defines as -D / -U."""
    exe = real_hipcc("7.2")
    top = tempfile.mkdtemp(prefix="hipport-verify-test-", dir=ROOT.parent)
    try:
        project = Path(top)
        (project / "src").mkdir()
        (project / "src" / "a.cu").write_bytes(NEEDS_DEFINES)
        (project / "src" / "helper.cuh").write_bytes(HELPER)
        (project / ".hipport.toml").write_text('defines = ["USE_SCALE=3", "!CUDA_VERSION"]\n')
        r = hipport("audit", "src/a.cu", "--verify", "--hipcc", exe, "--offload-arch", "gfx942", "--no-cache",
                    cwd=project)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "hipcc (HIP 7.2, HIP_PLATFORM=amd, code generation) for gfx942: it compiles" in r.stdout
        (project / ".hipport.toml").write_text('defines = ["!CUDA_VERSION"]\n')  # USE_SCALE no longer defined
        r = hipport("audit", "src/a.cu", "--verify", "--hipcc", exe, "--offload-arch", "gfx942", "--no-cache",
                    cwd=project)
        assert r.returncode == 4, r.stdout + r.stderr
        assert 'error: "the AMD build defines USE_SCALE"' in r.stdout
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("release, state", [("7.2", "default"), ("6.4", "opt-in")])
def test_doctor_names_the_wrappers_release_and_warp_sync_state(release, state):
    exe = real_hipcc(release)
    r = hipport("doctor", "--hipcc", exe, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["hipcc"] == exe and data["platform"] == "amd"
    assert data["hipcc_rocm"] == release and data["hipcc_rocm_source"] == "`hipcc --version`"
    assert data["warp_sync"] == state
