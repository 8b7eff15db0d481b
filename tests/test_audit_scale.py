"""The audit's work grows with the file, not with its square (issue 34): a file of many kernels with warp code
once took a pass over the whole file per kernel. Counted, not timed: every read of a token's text by the checks
(`Context.text[k]`) is one unit of work, and doubling the kernels of a file may at most double it (plus a
margin for the part that does not repeat). benchmarks/audit_scale.py times the same shapes."""

from __future__ import annotations

import pytest

from hipport.audit import AuditOptions, audit_source
from hipport.audit.checks import context as context_module

_PRELUDE = """\
#include <cuda_runtime.h>
#define FULL_MASK 0xffffffff
#define WARP_SIZE 32
__device__ int hits;
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(FULL_MASK, v, offset);
  return v;
}
"""

# One kernel with helpers of its own, in the shapes the checks follow: a reduction taking its mask as a
# parameter, a ballot kept in 32 bits, lane and warp ids of 32, a helper shared by every kernel, an atomic on a
# global, a launch sized in warps from a host function that launches every kernel.
_UNIT = """\
__device__ float reduce_{i}(float val, unsigned mask) {{
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) val += __shfl_down_sync(mask, val, offset);
  return val;
}}
__global__ void kernel_{i}(const float *in, float *out, int n) {{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = tid < n ? in[tid] : 0.0f;
  v = reduce_{i}(v, FULL_MASK) + warp_sum(v);
  unsigned ballot = __ballot_sync(0xffffffff, v > 0.0f);
  if (lane == 0) {{ atomicAdd(out + warp, v); atomicAdd(&hits, __popc(ballot)); }}
}}
"""


def _file(kernels: int) -> bytes:
    launches = "".join(f"  kernel_{i}<<<grid, block>>>(in, out, n);\n" for i in range(kernels))
    host = ("void launch_all(const float *in, float *out, int n) {\n  dim3 block(4 * 32);\n"
            "  dim3 grid((n + block.x - 1) / block.x);\n" + launches + "}\n")
    return (_PRELUDE + "".join(_UNIT.format(i=i) for i in range(kernels)) + host).encode()


class _Counted(list):
    """A token text list that counts the reads of one item."""

    reads = 0

    def __getitem__(self, k):
        _Counted.reads += 1
        return list.__getitem__(self, k)


def _work(monkeypatch, kernels: int, release: tuple[int, int]) -> int:
    original = context_module.Context.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.text = _Counted(self.text)

    monkeypatch.setattr(context_module.Context, "__init__", counting)
    _Counted.reads = 0
    findings = audit_source(_file(kernels), "kernels.cu", AuditOptions(rocm_version=release))
    assert len({f.rule_id for f in findings}) >= 5  # the checks that follow calls and values did run
    return _Counted.reads


@pytest.mark.parametrize("release", [(5, 2), (7, 2)])
def test_doubling_the_kernels_at_most_doubles_the_work(monkeypatch, release):
    work = {n: _work(monkeypatch, n, release) for n in (30, 60, 120)}
    # A pass over the file per kernel made these ratios 3 and more; linear work makes them 2 and a little less.
    assert work[60] <= 2.1 * work[30], work
    assert work[120] <= 2.1 * work[60], work

