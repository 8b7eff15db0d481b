"""Compile tests on a machine with hipcc but without one library's headers: they skip with the Debian package to
install (and fail under CI=true), instead of failing with a compiler error. Fake include trees, not this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import missing_headers, require_headers

ROOT = Path(__file__).resolve().parents[1]


def fake_roots(tmp_path: Path, *present: str) -> Path:
    root = tmp_path / "include"
    headers = {
        "hip/hip_runtime.h": "#pragma once\n#include <hip/amd_detail/amd_hip_runtime.h>\n",
        "hiprand/hiprand.h": '#pragma once\n#include <hip/hip_runtime.h>\n#include "hiprand/hiprand_hcc.h"\n',
        "hiprand/hiprand_hcc.h": "#pragma once\n#include <rocrand/rocrand.h>\n",
        "hiprand/hiprand_kernel.h": "#pragma once\n#ifdef __HIP_PLATFORM_NVIDIA__\n#include <curand_kernel.h>\n"
                                    "#else\n#include <rocrand/rocrand_kernel.h>\n#endif\n",
        "rocrand/rocrand.h": "#pragma once\n",
        "rocrand/rocrand_kernel.h": "#pragma once\n",
        "hipsparse/hipsparse.h": "#pragma once\n#include <hip/hip_runtime_api.h>\n",
    }
    for name in present:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(headers[name])
    return root


def source(tmp_path: Path, *includes: str) -> Path:
    path = tmp_path / "k.hip.cu"
    path.write_text("".join(f"#include {i}\n" for i in includes) + "__global__ void k() {}\n")
    return path


HIPRAND_WITHOUT_ROCRAND = ("hip/hip_runtime.h", "hiprand/hiprand.h", "hiprand/hiprand_hcc.h",
                           "hiprand/hiprand_kernel.h")


def test_a_library_reached_through_another_is_named_with_its_package(tmp_path):
    roots = [fake_roots(tmp_path, *HIPRAND_WITHOUT_ROCRAND)]
    src = source(tmp_path, "<hip/hip_runtime.h>", "<hiprand/hiprand_kernel.h>", "<hiprand/hiprand.h>", "<vector>",
                 "<curand.h>")
    assert missing_headers([src], roots=roots) == [("rocrand/rocrand.h", "librocrand-dev"),
                                                   ("rocrand/rocrand_kernel.h", "librocrand-dev")]
    everything = [fake_roots(tmp_path, *HIPRAND_WITHOUT_ROCRAND, "rocrand/rocrand.h", "rocrand/rocrand_kernel.h")]
    assert missing_headers([src], roots=everything) == []


def test_own_quoted_headers_are_followed(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "common.h").write_text("#include <hipsparse/hipsparse.h>\n")
    src = source(tmp_path, '"common.h"', '"not_there.h"')
    roots = [fake_roots(tmp_path, "hip/hip_runtime.h")]
    assert missing_headers([src], include_dirs=[tmp_path / "inc"], roots=roots) == [
        ("hipsparse/hipsparse.h", "libhipsparse-dev")]
    assert missing_headers([source(tmp_path, "<hipblas/hipblas.h>")], roots=roots) == [("hipblas/hipblas.h", None)]


def test_skips_locally_and_fails_under_ci(tmp_path, monkeypatch):
    roots = [fake_roots(tmp_path, *HIPRAND_WITHOUT_ROCRAND)]
    src = source(tmp_path, "<hiprand/hiprand.h>")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_headers([src], roots=roots)
    assert "<rocrand/rocrand.h> (Debian package librocrand-dev)" in str(skipped.value)
    assert "apt-get install librocrand-dev" in str(skipped.value)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_headers([src], roots=roots)
    assert "librocrand-dev" in str(failed.value) and "CI=true" in str(failed.value)
    require_headers([source(tmp_path, "<hip/hip_runtime.h>")], roots=roots)  # nothing missing: no skip


def test_a_compile_test_skips_with_the_package_when_rocrand_is_missing(tmp_path):
    """The real compile test for the cuRAND family's HIP form, run by pytest with rocRAND's headers hidden: skipped,
    with the reason, locally; failed under CI=true. (Without hipcc it skips for hipcc, which it names instead.)"""
    roots = fake_roots(tmp_path, *HIPRAND_WITHOUT_ROCRAND)
    base = {k: v for k, v in os.environ.items() if k != "CI"}
    base["HIPPORT_TEST_INCLUDE_ROOTS"] = str(roots)
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               "tests/test_fixtures_convert.py::test_family_hip_form_compiles[curand]"]
    local = subprocess.run(command, cwd=ROOT, env=base, capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "1 skipped" in local.stdout, local.stdout
    hipcc_missing = "hipcc is missing" in local.stdout
    assert hipcc_missing or "librocrand-dev" in local.stdout, local.stdout
    ci = subprocess.run(command, cwd=ROOT, env={**base, "CI": "true"}, capture_output=True, text=True, timeout=300)
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert ("hipcc" if hipcc_missing else "librocrand-dev") in ci.stdout, ci.stdout
