"""Behaviour on 64 and 32 lanes (issue 34), through benchmarks/behaviour.py's own code.

A few dev-corpus programs with warp-level code (HeCBench) are converted with `--apply-suggestions`, built for
HIP-CPU with 64-lane wavefronts and with 32 (`-DHIP_CPU_WAVEFRONT_SIZE=32`), run, and their output is checked
against what the CUDA original printed on an NVIDIA H200 (benchmarks/behaviour_cuda.json, recorded by
`behaviour.py --record-cuda`): never against anything hipport's output printed. QUICK are the programs that build
and run fastest on the emulator (measured with the benchmark: see docs/measurements.md, "Behaviour on 64 and 32
lanes"); the benchmark runs all of them. Binaries are cached in pytest's cache by the hash of their sources.

The comparison itself (timing lines left out, numbers within a tolerance, verdict lines only for clock-seeded
inputs) and the translation of a Makefile's compile lines are checked on outputs and lines written here by hand.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from needs import need  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("behaviour", ROOT / "benchmarks" / "behaviour.py")
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # its dataclasses look their module up
_SPEC.loader.exec_module(bench)

TBB_HEADERS = (Path("/usr/include/tbb/tbb.h"), Path("/usr/include/oneapi/tbb.h"))
QUICK = ["logprob", "rmsnorm"]


def test_timing_and_device_lines_are_left_out():
    cuda = ("query shape = [2 (num_seqs)]\nAverage execution time of the kernel: 59.445004 (us)\nPASS\n"
            "Total number of compute units: 132\nblock_size   32 | time 0.0171 ms | bandwidth 2.39 GB/s\n")
    emulated = "query shape = [2 (num_seqs)]\nAverage execution time of the kernel: 81234.5 (us)\nPASS\n" \
               "Total number of compute units: 2\n"
    assert bench.result_lines(cuda) == ["query shape = [2 (num_seqs)]", "PASS"]
    assert bench.compare(cuda, emulated) == ""


def test_numbers_compare_within_the_tolerance_and_words_exactly():
    cuda = "Error after iteration 1000 = 3.91151e-05\nChecksums 390451 390431 390449\nverify = PASS\n"
    assert bench.compare(cuda, "Error after iteration 1000 = 3.91160e-05\nChecksums 390451 390431 390449\n"
                               "verify = PASS\n") == ""
    assert bench.compare(cuda, "Error after iteration 1000 = 3.99e-05\nChecksums 390451 390431 390449\n"
                               "verify = PASS\n").startswith("line 1:")
    assert bench.compare(cuda, "Error after iteration 1000 = 3.91151e-05\nChecksums 390451 390431 390449\n"
                               "verify = FAIL\n").startswith("line 3:")
    assert bench.compare(cuda, "Error after iteration 1000 = nan\nChecksums 390451 390431 390449\n"
                               "verify = PASS\n").startswith("line 1:")


def test_a_missing_or_extra_line_differs():
    cuda = "PASS\nPASS\n"
    assert bench.compare(cuda, "PASS\n").startswith("1 result lines, expected 2")
    assert bench.compare(cuda, "PASS\nPASS\nMismatch at index 3: 0.1 0.2\n").startswith("3 result lines")


def test_clock_seeded_programs_compare_their_verdicts_only():
    cuda = "seed: -278642091\nsynthesized segments # 13349\n[PASSED] checking keys\n"
    other_seed = "seed: 12345\nsynthesized segments # 13001\n[PASSED] checking keys\n"
    assert bench.compare(cuda, other_seed, "segsort") == ""
    assert bench.compare(cuda, other_seed, "gc") != ""
    assert bench.compare(cuda, "seed: 1\n[FAILED] checking keys\n", "segsort") != ""


def test_makefile_lines_become_hip_cpu_lines(tmp_path):
    lines = [["-std=c++17", "-Xcompiler", "-Wall", "-arch=sm_90", "-O3", "-I../mis-cuda", "-DUSE_ROCM", "-c",
              "main.cu", "-o", "main.o"],
             ["-std=c++17", "--offload-arch=gfx90a", "-c", "../x-cuda/utils.cpp", "-o", "utils.o"],
             ["-std=c++17", "-O3", "main.o", "utils.o", "-o", "main", "-lm"]]
    out = bench.gxx_lines(lines, tmp_path, 32)
    base = ["g++", "-std=c++17", "-O2", "-w", "-I", str(bench.HIP_CPU / "include"), "-DHIP_CPU_WAVEFRONT_SIZE=32"]
    assert out[0] == base + ["-I../mis-cuda", "-DUSE_ROCM", "-c", "-include", str(bench.PRELUDE), "-x", "c++",
                             "main.cu", "-x", "none", "-o", str(tmp_path / "main.o")]
    assert out[1] == base + ["-c", "../x-cuda/utils.cpp", "-o", str(tmp_path / "utils.o")]
    assert out[2] == base + ["-lm", str(tmp_path / "main.o"), str(tmp_path / "utils.o"), "-o",
                             str(tmp_path / "program"), "-ltbb", "-lpthread"]


def test_a_build_failure_on_what_hip_cpu_lacks_is_an_emulator_limit():
    verdict, _ = bench.classify_build_error("main.cu:9:5: fatal error: cooperative_groups.h: No such file\n")
    assert verdict == "emulator limit"
    verdict, _ = bench.classify_build_error("main.cu:30:12: fatal error: hip/hip_bf16.h: No such file or directory")
    assert verdict == "emulator limit"
    verdict, detail = bench.classify_build_error("main.cu:12:3: error: ‘lane_idx’ was not declared in this scope")
    assert verdict == "does not build" and "lane_idx" in detail


def _need_toolchain() -> None:
    need((bench.HIP_CPU / "include" / "hip" / "hip_runtime.h").is_file(), "../shared/hip-cpu (AMD's HIP CPU runtime)",
         "see ../shared/hip-cpu/README.md, or set HIPPORT_HIP_CPU")
    need(bench.CORPUS.is_dir() and bench.REFERENCE.is_file(), "../shared/corpus/hecbench and ../shared/behaviour",
         "the dev corpus and the CUDA references beside the repository")
    need(shutil.which("g++") and shutil.which("make"), "g++ and make", "apt-get install g++ make")
    need(any(p.is_file() for p in TBB_HEADERS), "libtbb-dev (HIP-CPU runs blocks with it)",
         "apt-get install libtbb-dev")


@pytest.fixture(scope="module")
def cache(request, tmp_path_factory) -> Path:
    _need_toolchain()
    store = getattr(request.config, "cache", None)
    return Path(store.mkdir("behaviour")) if store else tmp_path_factory.mktemp("behaviour")


def test_quick_programs_have_a_recorded_cuda_output():
    cases = {c.name: c for c in bench.cases()} if bench.REFERENCE.is_file() else {}
    need(cases, "../shared/behaviour/cuda-reference.json", "the CUDA references beside the repository")
    for name in QUICK:
        assert cases[name].source == "small", f"{name}: no CUDA output recorded for {bench.SMALL.get(name)}"
        assert bench.prints_a_result(cases[name]), f"{name}: its CUDA output says nothing to check"


@pytest.mark.parametrize("width", bench.WIDTHS)
@pytest.mark.parametrize("name", QUICK)
def test_converted_with_suggestions_computes_what_cuda_computed(cache, name: str, width: int):
    case = next(c for c in bench.cases() if c.name == name)
    outcome = bench.measure(case, cache, timeout=120, widths=(width,), variants=("suggest",))["suggest"][width]
    assert outcome.verdict == "same", f"{name} on {width} lanes: {outcome.verdict}: {outcome.detail}"
