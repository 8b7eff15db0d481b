"""Definitions a project's compatibility header makes for AMD (`audit/compat.definitions_in`) resolve the names HIP
lacks in a header compiled after it (issue 34: exllamav2's `cache_q.cuh`, included by `cache.cu` after
`compat.cuh`: `__stwb`, `__stcg` and a mask-dropping `__shfl_down_sync`; `q_gemm_kernel.cuh`'s `atomicAdd` on
`half2`). The fixture tests/fixtures/false-alarms/compat-overloads.cu has the header included by the file itself."""

from __future__ import annotations

import sys
from pathlib import Path

from hipport.audit.compat import Definitions, _definitions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_audit_false_alarms import FIXTURES, findings_of  # noqa: E402

BODY = b"""// audit-options: rocm=7.2 defines=USE_ROCM
__device__ void store(half2* out, half2 v, uint4* dst, uint4 x, unsigned int q, unsigned int* q_out)
{
    atomicAdd(out, v);
    __stwb(dst, x);
    q |= (__shfl_down_sync(0x55555555, q, 1) << 8);
    q_out[threadIdx.x] = q;
}
"""
REPORTED = {(4, "atomic-half-type"), (5, "unsupported-api"), (6, "warp-sync-mask")}


def _flagged(path: Path) -> set[tuple[int, str]]:
    return {(f.line, f.rule_id) for f in findings_of(path) if f.severity in ("warning", "error")} & REPORTED


def test_a_header_compiled_after_the_compat_header_sees_its_definitions(tmp_path):
    (tmp_path / "compat.cuh").write_bytes((FIXTURES / "compat-overloads.cuh").read_bytes())
    (tmp_path / "body.cuh").write_bytes(BODY)
    (tmp_path / "kernels.cu").write_bytes(b'#include <cuda_fp16.h>\n#include "compat.cuh"\n#include "body.cuh"\n')
    assert _flagged(tmp_path / "body.cuh") == set()
    # A file that includes it without the compat header before it: that build has HIP's names only.
    (tmp_path / "other.cu").write_bytes(b'#include <cuda_fp16.h>\n#include "body.cuh"\n#include "compat.cuh"\n')
    assert _flagged(tmp_path / "body.cuh") == REPORTED


def test_the_compat_header_for_nvidia_only_resolves_nothing(tmp_path):
    compat = (FIXTURES / "compat-overloads.cuh").read_bytes().replace(b"#if defined(USE_ROCM)", b"#if !defined(USE_ROCM)")
    (tmp_path / "compat.cuh").write_bytes(compat)
    (tmp_path / "body.cuh").write_bytes(BODY)
    (tmp_path / "kernels.cu").write_bytes(b'#include <cuda_fp16.h>\n#include "compat.cuh"\n#include "body.cuh"\n')
    assert _flagged(tmp_path / "body.cuh") == REPORTED


def test_overloads_are_read_from_declarations_not_calls():
    macros, overloads = _definitions(b"__device__ inline void atomicAdd(const half2 *address, half2 val);\n"
                                     b"__device__ void f(half* p) { atomicAdd((half*)p, v); atomicAdd(p, v); }\n"
                                     b"#define __stwb(dst, src) *dst = src\n")
    defs = Definitions(macros, overloads)
    assert defs.macros == {b"__stwb"}
    assert defs.overloads_for(b"atomicAdd", "__half2") and defs.overloads_for(b"atomicAdd", "half2")
    assert not defs.overloads_for(b"atomicAdd", "__half")
