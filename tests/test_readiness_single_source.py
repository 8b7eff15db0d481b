"""The audit reports' porting readiness for projects that keep CUDA as their main source and build for AMD through
their own compatibility layer (issue 33): the CUDA references that layer serves are AMD work already done, so they
count as automatic (`served`), not as nothing. Every expected figure below is counted by hand from the sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hipport.report.model import AuditReport, FileReport, FindingReport

ROOT = Path(__file__).resolve().parents[1]

COMPAT = b"""#pragma once
#ifdef USE_HIP
#include <hip/hip_runtime.h>
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaStream_t hipStream_t
#else
#include <cuda_runtime.h>
#endif
"""

# No hazard: the thread index only picks an element. Its CUDA references: cudaStream_t, cudaMalloc, cudaMemcpy,
# cudaMemcpyHostToDevice, cudaFree (5 names the header maps) and the runtime header its device code needs.
SCALE = b"""#include "gpu_compat.h"

__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(const float* host, int n, cudaStream_t stream) {
    float* dev;
    cudaMalloc(&dev, n * sizeof(float));
    cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice);
    scale<<<(n + 255) / 256, 256, 0, stream>>>(dev, 2.0f, n);%s
    cudaFree(dev);
}
"""


def audit(tree: Path, *args):
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", "--rocm-version", "7.2", "--cache-dir",
                        str(tree.parent / "cache"), *map(str, args)], capture_output=True, text=True, cwd=tree,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    return r


def json_report(tree: Path, expected_rc: int) -> dict:
    r = audit(tree, ".", "--report", "json", "-o", "-")
    assert r.returncode == expected_rc, r.stderr
    return json.loads(r.stdout)


def write(tree: Path, files: dict[str, bytes]) -> Path:
    tree.mkdir()
    for name, text in files.items():
        (tree / name).write_bytes(text)
    return tree


def by_path(data: dict) -> dict[str, dict]:
    return {f["path"]: f for f in data["files"]}


def test_a_file_its_compat_header_serves_is_ready(tmp_path):
    tree = write(tmp_path / "p", {"gpu_compat.h": COMPAT, "scale.cu": SCALE % b""})
    data = json_report(tree, 0)
    files = by_path(data)
    cu = files["scale.cu"]
    assert cu["converted"] == 0 and cu["findings"] == [] and cu["diff"] == ""
    assert cu["served"] == 6  # the 5 mapped names, and <hip/hip_runtime.h>, which the header includes for AMD
    assert cu["hip_path"] == "includes `gpu_compat.h`, which maps CUDA names for AMD"
    assert cu["readiness"] == 1
    assert files["gpu_compat.h"]["served"] == 0 and files["gpu_compat.h"]["readiness"] == 1
    assert data["totals"]["served"] == 6 and data["totals"]["readiness"] == 1
    assert data["totals"]["files_built_for_amd"] == 2  # the header too: it tests USE_HIP
    assert "serves" in data["readiness_definition"]


def test_the_same_file_without_a_compat_header_counts_its_conversions(tmp_path):
    tree = write(tmp_path / "p", {"scale.cu": (SCALE % b"").replace(b'"gpu_compat.h"', b"<cuda_runtime.h>")})
    data = json_report(tree, 0)
    cu = by_path(data)["scale.cu"]
    assert cu["converted"] == 6 and cu["served"] == 0 and cu["hip_path"] is None
    assert sorted(c["cuda"] for c in cu["conversions"]) == sorted(
        ["cudaStream_t", "cudaMalloc", "cudaMemcpy", "cudaMemcpyHostToDevice", "cudaFree", "cuda_runtime.h"])
    assert cu["readiness"] == 1 and data["totals"]["served"] == 0


def test_a_name_the_compat_header_lacks_is_hand_work_against_what_it_serves(tmp_path):
    # cudaDeviceSynchronize is not mapped: one `single-source` warning (weight 2) against the 6 served: 6 / 8.
    tree = write(tmp_path / "p", {"gpu_compat.h": COMPAT,
                                  "scale.cu": SCALE % b"\n    cudaDeviceSynchronize();"})
    data = json_report(tree, 1)  # a warning: at or above the default --fail-on
    cu = by_path(data)["scale.cu"]
    assert [(x["rule"], x["severity"]) for x in cu["findings"]] == [("single-source", "warning")]
    assert cu["served"] == 6 and cu["converted"] == 0 and cu["manual_work"] == 2
    assert cu["readiness"] == 0.75
    assert 0 < data["totals"]["readiness"] < 1


def test_html_and_markdown_say_the_file_already_builds_for_amd(tmp_path):
    tree = write(tmp_path / "p", {"gpu_compat.h": COMPAT,
                                  "scale.cu": SCALE % b"\n    cudaDeviceSynchronize();"})
    r = audit(tree, ".", "--report", "html", "--report", "markdown", "--output-dir", tmp_path / "out")
    assert r.returncode == 1, r.stderr
    page = (tmp_path / "out" / "hipport-report.html").read_text()
    assert ("already builds for AMD (includes <code>gpu_compat.h</code>, which maps CUDA names for AMD): "
            "6 CUDA references served by its HIP path") in page
    assert '<span id="readiness" class="r-mid">75%</span>' in page
    assert "6 automatic (6 served by the project&rsquo;s own HIP path; files that already build for AMD: 2)" in page
    assert "already builds for AMD (<code>#ifdef USE_HIP</code> at line 2)</span></li>" in page  # the quiet header
    md = (tmp_path / "out" / "hipport-report.md").read_text()
    assert ("**Porting readiness: 75%**. 0 CUDA references convert automatically, 6 more are served already by the "
            "project's own HIP path (files that already build for AMD: 2);") in md
    assert ("| scale.cu (already builds for AMD: includes `gpu_compat.h`, which maps CUDA names for AMD; 6 served) "
            "| 75% | 0 | 1 | 0 | 0 |") in md


def _finding(severity: str) -> FindingReport:
    return FindingReport("lane-math-32", severity, 3, 1, "m", "high", "audit", "x")


def test_the_nvidia_builds_own_file_counts_nothing():
    amd = FileReport("a.cu", "a.cu", conversions=[{"cuda": "cudaFree", "hip": "hipFree", "category": "runtime",
                                                   "line": 1}], served=3, hip_path="`#ifdef USE_HIP` at line 1",
                     findings=[_finding("warning")])
    nvidia = FileReport("vendors/cuda.h", "vendors/cuda.h", other_platform="common.cuh includes it under `#else`",
                        findings=[_finding("error")])
    assert amd.readiness == 4 / 6  # 1 converted + 3 served against one warning
    assert nvidia.readiness == 1
    report = AuditReport([amd, nvidia], {})
    assert report.readiness == 4 / 6 and report.served == 3 and report.files_built_for_amd == 1
