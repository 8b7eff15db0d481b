"""How the audit's cost grows with the number of kernels in one file (issue 34): generate a `.cu` file of N kernels
with warp code (shuffle reductions, ballots, lane and warp ids, device helpers called from the kernels, launches
sized in warps), audit it, and convert it, each in a fresh process. Prints seconds, the growth ratio of the audit
from 400 to 800 kernels (2.0 is linear), and the audit's time over convert's on the same file.

    python benchmarks/audit_scale.py                     # 400 and 800 kernels
    python benchmarks/audit_scale.py --mb 27             # and a file of about 27 MB
    python benchmarks/audit_scale.py --code /tmp/old     # another checkout of hipport
    python benchmarks/audit_scale.py --rocm-version 7.2  # both commands for another release (other checks run)
    python benchmarks/audit_scale.py --write DIR         # only write the files (for profiling)

Both commands run as a user runs them on one file: `--no-cache`, one job, the rule tables already in the user
cache (a first run that is not timed). The fastest of the repeats counts: other work on the machine only adds time.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PRELUDE = """\
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define FULL_MASK 0xffffffff
#define WARP_SIZE 32
#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_down_sync(FULL_MASK, v, offset);
  return v;
}

template <int WIDTH = 32>
__device__ float warp_max(float v, unsigned mask) {
  for (int o = WIDTH / 2; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(mask, v, o, WIDTH));
  return v;
}

"""

# One unit per kernel: its own helpers (the generated code's usual shape: a reduction per operator) and a kernel
# that calls them and the shared ones; {i} numbers them.
_UNIT = """\
__device__ float reduce_{i}(float val, unsigned mask) {{
  #pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
    val += __shfl_down_sync(mask, val, offset);
  return val;
}}

__device__ int vote_{i}(int pred) {{
  unsigned ballot = __ballot_sync(0xffffffff, pred);
  int lane = threadIdx.x & 31;
  return __popc(ballot & ((1u << lane) - 1));
}}

__global__ void kernel_{i}(const float *__restrict__ in, float *out, int *counts, int n) {{
  __shared__ float partial[WARPS_PER_BLOCK];
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  float v = tid < n ? in[tid] * {i}.0f : 0.0f;
  v = reduce_{i}(v, FULL_MASK);
  float m = warp_max<32>(v, FULL_MASK);
  float s = warp_sum(v);
  int rank = vote_{i}(v > 0.0f);
  if (lane == 0) partial[warp] = v + m + s;
  __syncthreads();
  if (warp == 0) {{
    float w = lane < WARPS_PER_BLOCK ? partial[lane] : 0.0f;
    w = reduce_{i}(w, FULL_MASK);
    if (lane == 0) atomicAdd(out + blockIdx.x, w);
  }}
  if (__any_sync(FULL_MASK, rank > {i} % 7)) atomicAdd(counts, 1);
  if (warpSize == 32 && lane < 16) out[tid] = __shfl_sync(0xffffffff, v, lane + 16);
}}

"""

_HOST_HEAD = """\
void launch_all(const float *in, float *out, int *counts, int n) {
  dim3 block(WARPS_PER_BLOCK * 32);
  dim3 grid((n + block.x - 1) / block.x);
"""
_LAUNCH = "  kernel_{i}<<<grid, block>>>(in, out, counts, n);\n"
_HOST_TAIL = """\
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) printf("%s\\n", cudaGetErrorString(err));
}
"""


def generate(kernels: int) -> str:
    """A `.cu` file of ``kernels`` kernels, each with two helpers of its own, and one host function launching all."""
    parts = [_PRELUDE]
    parts += [_UNIT.format(i=i) for i in range(kernels)]
    parts.append(_HOST_HEAD)
    parts += [_LAUNCH.format(i=i) for i in range(kernels)]
    parts.append(_HOST_TAIL)
    return "".join(parts)


def kernels_for_bytes(size: int) -> int:
    one = len(generate(2)) - len(generate(1))
    return max(1, size // one)


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and its children, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, nargs="+", default=[400, 800], help="kernel counts (default 400 800)")
    ap.add_argument("--mb", type=float, default=0, help="also a file of about this many MB")
    ap.add_argument("--code", type=Path, default=ROOT, help="hipport checkout to measure (default: this one)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest counts (default 2)")
    ap.add_argument("--rocm-version", dest="rocm", help="ROCm release both commands target (default: theirs, "
                    "the installed HIP's)")
    ap.add_argument("--write", type=Path, help="only write the generated files to this folder")
    args = ap.parse_args()
    counts = list(args.kernels)
    if args.mb:
        counts.append(kernels_for_bytes(int(args.mb * 1_000_000)))
    if args.write:
        args.write.mkdir(parents=True, exist_ok=True)
        for n in counts:
            (args.write / f"kernels_{n}.cu").write_text(generate(n))
        return 0
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve()), "HIPPORT_HIPIFY_PERL": "off"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    hipport = [sys.executable, "-m", "hipport"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hipport-scale-") as tmp:
        tmp = Path(tmp)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        warm = tmp / "warm.cu"
        warm.write_text(generate(1))
        timed([*hipport, "audit", str(warm), "-q", "--no-cache"], env, tmp)  # rule tables into the user cache
        for n in counts:
            path = tmp / f"kernels_{n}.cu"
            path.write_text(generate(n))
            size = path.stat().st_size
            best: dict[str, tuple[float, float]] = {}
            target = ["--rocm-version", args.rocm] if args.rocm else []
            for name, cmd in (("audit", [*hipport, "audit", str(path), "-q", "--no-cache", "-j", "1", *target]),
                              ("convert", [*hipport, "convert", str(path), "-q", "--no-cache", "-j", "1", *target,
                                           "-o", str(tmp / "out.hip")])):
                for _ in range(args.repeat):
                    wall, cpu, code = timed(cmd, env, tmp)
                    if code not in (0, 1):
                        print(f"{name} failed (exit {code}) on {path}", file=sys.stderr)
                        return 1
                    old = best.get(name, (wall, cpu))
                    best[name] = (min(wall, old[0]), min(cpu, old[1]))
            rows.append((n, size, *best["audit"], *best["convert"]))
            print(f"  {n} kernels: audit {best['audit'][0]:.2f} s, convert {best['convert'][0]:.2f} s",
                  file=sys.stderr, flush=True)
        bare = min(timed([sys.executable, "-c", "pass"], env, tmp)[0] for _ in range(3))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores, {platform.machine()}, Python {platform.python_version()}; fastest of {args.repeat}; "
          f"each a fresh process (bare `python -c pass`: {bare:.2f} s); ROCm target: {args.rocm or 'default'}")
    print(f"{'kernels':>8}{'bytes':>13}{'audit s':>9}{'cpu':>8}{'convert s':>11}{'cpu':>8}{'audit/convert':>15}")
    for n, size, audit, audit_cpu, convert, convert_cpu in rows:
        print(f"{n:>8}{size:>13,}{audit:9.2f}{audit_cpu:8.2f}{convert:11.2f}{convert_cpu:8.2f}"
              f"{audit / convert:15.1f}")
    by_n = {n: (audit, cpu) for n, _, audit, cpu, _, _ in rows}
    if 400 in by_n and 800 in by_n:
        print(f"audit growth 400 -> 800 kernels: {by_n[800][0] / by_n[400][0]:.2f}x wall, "
              f"{by_n[800][1] / by_n[400][1]:.2f}x CPU (2.00 is linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
