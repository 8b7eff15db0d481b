"""Converted code built with the real ROCm compilers (issue 32): the examples, every convert fixture, the
build-breaker fixtures and the audit's fixed fixtures, converted for ROCm 7.2 and compiled by ROCm 7.2.4's hipcc
with code generation for gfx942 (wave64) and gfx1100 (wave32); converted for 6.4 and compiled by ROCm 6.4.3's.

The compilers are `rocm7-hipcc` / `rocm64-hipcc` from ../shared/tools/rocm_chroot.sh (`.ci/run` installs them);
without them each test skips with its reason, and fails under CI=true. Each set is compiled once, two jobs at a
time (the machine has two cores), and each file is its own test."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hipcc import REAL_ARCHS, real_compile, real_hipcc
from test_fixtures_convert import options_for

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CONVERT = sorted(p for p in (FIXTURES / "convert").glob("*.cu") if not p.name.endswith((".hip.cu", ".noop.cu")))
BREAKERS = sorted(p for p in (FIXTURES / "breakers").glob("*.cu") if not p.name.endswith(".hip.cu"))
EXAMPLE_UNITS = sorted(p.relative_to(ROOT / "examples" / "cuda") for p in (ROOT / "examples" / "cuda").rglob("*")
                       if p.suffix in (".cu", ".cpp"))

# Fixtures whose converted form is not meant to build, and why (each is a finding the fixture shows reported).
NOT_BUILT = {
    "cublas-legacy": "cuBLAS's legacy API has no hipBLAS form; the fixture shows it left and reported",
    "cudnn": "cuDNN is reported use by use, not converted",
    "headers": "includes a local header the fixture does not ship",
    "headers-unmapped": "includes CUDA headers with no HIP counterpart, which it shows reported",
    "miopen-dropout": "MIOpen's `miopenGetLRNDescriptor` takes a mode hipport cannot supply: shown reported",
}
# Scratch space the chroot sees: /tmp is bind-mounted into it.
_SCRATCH = Path(tempfile.gettempdir())


def _compile_all(jobs: dict[str, tuple[Path, str, tuple]]) -> dict[str, subprocess.CompletedProcess]:
    """name -> result of real_compile(path, release, archs), two at a time."""
    def one(item):
        name, (path, release, archs) = item
        return name, real_compile(path, release, archs)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, jobs.items()))


def _convert_fixtures(sources: list[Path], release: tuple, out: Path) -> dict[str, Path]:
    from dataclasses import replace

    rules = load_rules()
    written = {}
    for src in sources:
        options = replace(options_for(src), rocm_version=release)  # the fixture's --roc etc., this release
        result = convert_source(src.read_bytes(), rules, options, path=src.name)
        again = convert_source(result.after, rules, options, path=src.name)
        assert again.after == result.after, f"{src.name}: a second conversion for {release} changed it"
        target = out / src.parent.name / (src.stem + ".hip")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(result.after)
        written[f"{src.parent.name}/{src.stem}"] = target
    return written


@pytest.fixture(scope="module")
def scratch():
    path = Path(tempfile.mkdtemp(prefix="hipport-real-rocm-", dir=_SCRATCH))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _fixture_results(scratch: Path, release: str, archs: tuple) -> dict[str, subprocess.CompletedProcess]:
    real_hipcc(release)
    version = tuple(int(x) for x in release.split("."))
    files = _convert_fixtures(CONVERT + BREAKERS, version, scratch / release)
    jobs = {name: (path, release, archs) for name, path in files.items()
            if name.split("/", 1)[1] not in NOT_BUILT}
    return _compile_all(jobs)


@pytest.fixture(scope="module")
def fixtures_72(scratch):
    return _fixture_results(scratch, "7.2", REAL_ARCHS)


@pytest.fixture(scope="module")
def fixtures_64(scratch):
    # One target: 6.4 guards the release, and gfx942 and gfx1100 are both checked at 7.2.
    return _fixture_results(scratch, "6.4", ("gfx942",))


FIXTURE_IDS = [f"{p.parent.name}/{p.stem}" for p in CONVERT + BREAKERS if p.stem not in NOT_BUILT]


@pytest.mark.parametrize("name", FIXTURE_IDS)
def test_fixture_converted_for_7_2_builds_with_rocm_7_2(fixtures_72, name):
    r = fixtures_72[name]
    assert r.returncode == 0, f"{name} converted for 7.2 does not build for {'/'.join(REAL_ARCHS)}:\n" \
                              f"{r.stderr[-3000:]}"


@pytest.mark.parametrize("name", FIXTURE_IDS)
def test_fixture_converted_for_6_4_builds_with_rocm_6_4(fixtures_64, name):
    r = fixtures_64[name]
    assert r.returncode == 0, f"{name} converted for 6.4 does not build:\n{r.stderr[-3000:]}"


def _examples(scratch: Path, release: str) -> dict[str, subprocess.CompletedProcess]:
    real_hipcc(release)
    out = scratch / f"examples-{release}"
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", str(ROOT / "examples" / "cuda"), "-o", str(out),
                        "-q", "--rocm-version", release, "--offload-arch", ",".join(REAL_ARCHS)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    archs = REAL_ARCHS if release == "7.2" else ("gfx942",)
    return _compile_all({u.as_posix(): (out / u, release, archs) for u in EXAMPLE_UNITS})


@pytest.fixture(scope="module")
def examples_72(scratch):
    return _examples(scratch, "7.2")


@pytest.fixture(scope="module")
def examples_64(scratch):
    return _examples(scratch, "6.4")


@pytest.mark.parametrize("unit", [u.as_posix() for u in EXAMPLE_UNITS])
def test_example_converted_for_7_2_builds_with_rocm_7_2(examples_72, unit):
    r = examples_72[unit]
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("unit", [u.as_posix() for u in EXAMPLE_UNITS])
def test_example_converted_for_6_4_builds_with_rocm_6_4(examples_64, unit):
    r = examples_64[unit]
    assert r.returncode == 0, r.stderr[-3000:]


def test_a_hip_file_written_for_rocm_6_is_brought_to_7_2(scratch):
    """A `.hip` file in a folder, written for ROCm 6 (hipBLAS 2's `hipblasDatatype_t`, `HIPBLAS_R_32F` as the data
    and the compute type): it builds with 6.4.3 and not with 7.2.4; `hipport convert --rocm-version 7.2 DIR`
    rewrites it in place, and then it builds with 7.2.4 for gfx942 and gfx1100, and converting again changes
    nothing."""
    source = FIXTURES / "hip_input" / "gemm-rocm6.hip"
    folder = scratch / "hip-input"
    folder.mkdir()
    work = folder / "gemm.hip"
    shutil.copy(source, work)
    assert real_compile(work, "6.4", ("gfx942",)).returncode == 0
    before = real_compile(work, "7.2", ("gfx942",))
    assert before.returncode != 0 and "hipblasDatatype_t" in before.stderr
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--rocm-version", "7.2", "--no-cache",
                        str(folder)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = work.read_text()
    assert "hipDataType t = HIP_R_32F;" in text and "HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT" in text
    after = real_compile(work, "7.2", REAL_ARCHS)
    assert after.returncode == 0, after.stderr[-3000:]
    again = subprocess.run([sys.executable, "-m", "hipport", "convert", "--rocm-version", "7.2", "--check",
                            "--no-cache", str(folder)], capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 0, again.stderr
