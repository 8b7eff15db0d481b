"""Warp-level patches checked by running them on 64 lanes.

Each program in tests/fixtures/wave64/ is CUDA as a porter has it. It is converted twice for ROCm 5.2 with
`--launch-syntax hip` (the forms HIP-CPU has: mask-free warp functions, `hipLaunchKernelGGL`), once as it is and
once with `--apply-suggestions`, and both are compiled with g++ against ../shared/hip-cpu (AMD's HIP CPU runtime:
`warpSize == 64`, wavefront-local warp operations) and run. The expected output is computed here, on the host,
from the same inputs; the first line of each program says whether the unpatched one is wrong or already right on
64 lanes. hipport's own examples/cuda/reduction is run the same way: it checks its result itself.

The programs of one kind are compiled as one translation unit (each in a namespace of its own, `main` renamed),
and the binaries are cached by the hash of their source, so a second run compiles nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from needs import need  # noqa: E402

from hipport.audit.hazards import load_hazards  # noqa: E402
from hipport.semantic import load_semantic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "wave64"
HIP_CPU = Path(os.environ.get("HIPPORT_HIP_CPU", ROOT.parent / "shared" / "hip-cpu"))
TBB_HEADERS = (Path("/usr/include/tbb/tbb.h"), Path("/usr/include/oneapi/tbb.h"))
_OUTCOME = re.compile(r"^// wave64: (wrong|right)-before right-after$", re.M)
# Programs also run on 32 lanes (HIP-CPU's `-DHIP_CPU_WAVEFRONT_SIZE=32`, as RDNA runs HIP): code written for 64
# lanes says so on a second line, and its patch must be right at both widths.
_OUTCOME_32 = re.compile(r"^// wave32: (wrong|right)-before right-after$", re.M)

VALUES = [float(i % 7 + 1) for i in range(256)]  # what every program's main() fills its input with
_SUM = f"{sum(VALUES):g}"

# Program -> (the rules whose patches it runs, the output computed on the host). A patch that rests on a guess
# has confidence medium and is applied only when asked: LEVEL says so for the programs that need it.
PROGRAMS = {
    "halves_macro": ({"warp-loop-32", "lane-math-32"}, "256"),  # 256 ones; issue 21, defect 1
    "together": ({"warp-loop-32", "lane-math-32"}, _SUM),
    # 8 sums of 32 values each (issue 34): right as converted, and still 8 of 32 after the `width` 32 patch.
    "groups_of_32": ({"warp-loop-32", "lane-math-32"}, " ".join(f"{sum(VALUES[g * 32:(g + 1) * 32]):g}"
                                                                for g in range(8))),
    "offsets_16": ({"warp-loop-32"}, _SUM),
    "doubling_32": ({"warp-loop-32"}, _SUM),
    "width_32": ({"warp-loop-32"}, _SUM),
    "lane_ids": ({"lane-math-32"}, _SUM),
    "last_lane": ({"lane-math-32"}, _SUM),
    "qualifiers": ({"lane-math-32"}, _SUM),
    "macro_constant": ({"lane-math-32"}, _SUM),  # issue 21, defect 3: the patched file compiles with g++
    "named_constants": ({"lane-math-32"}, _SUM),  # issue 34: `static const int WS = 32;` and a `constexpr` kWarp
    # Issue 34: written for 64 lanes; also run on 32 (below), where it is wrong until patched.
    "written_for_64": ({"lane-math-64"}, f"{_SUM} 0"),
    "ballot": ({"ballot-32bit"}, f"{sum(v > 3 for v in VALUES)} {sum(int(v) % 2 == 1 for v in VALUES)}"),
    # Issue 34: 32 as the size of a block of data beside warp code (block b scaled by b + 1), and the tail of a block
    # reduction under `if (tid < 32)`: right as converted, and left so (the old medium patches broke both).
    "data_blocks": ({"lane-math-32"}, f"{sum((i // 32 + 1) * v for i, v in enumerate(VALUES)):g}"),
    "first_32_tail": ({"warp-loop-32"}, _SUM),
}

LEVEL = {"last_lane": "medium",  # `lane == 31` is a guess that `lane` counts the lanes of a warp
         "data_blocks": "medium", "first_32_tail": "medium",  # the level the patches they must not get had
         "written_for_64": "medium"}  # lane-math-64's ids: one piece of a 64-lane layout each

# Warp-level rules with a patch that no program here runs, and why.
NOT_RUN = {
    "warp-mask-32bit": "the ROCm 5.2 output has no masks (the mask-free forms HIP-CPU has); a 64-bit mask changes "
                       "nothing a mask-free call computes",
    "warp-builtin-unavailable": "run by every program here: their `*_sync` calls reach HIP-CPU as the mask-free "
                                "forms this rule's patch writes",
    "cg-tile-size": "cooperative groups: HIP-CPU has none",
    "cg-api-unavailable": "cooperative groups: HIP-CPU has none",
    "cg-grid-sync": "cooperative groups (grid sync): HIP-CPU has none",
    "warpsize-constexpr": "a compile-time change (`constexpr` to `const`, array bounds), checked by compiling the "
                          "fixed audit fixtures with hipcc; `qualifiers` runs one such patch",
    "launch-warps-32": "reports a launch shape and carries no patch",
    "cub-warp-width": "hipCUB: HIP-CPU has none; the `<T, 32>` fix is compiled with the real ROCm 7.2 for gfx942 and "
                      "gfx1100 and with 6.4 (tests/test_audit_misses.py)",
}
# Stand-ins convert writes (rules/shims.toml) that shuffle across lanes, not run here either, and why.
SHIMS_NOT_RUN = {
    "cooperative_groups_reduce": "cooperative groups: HIP-CPU has none, so the xor butterfly over a "
                                 "`thread_block_tile<N>` is compiled (tests/fixtures/convert/cg-reduce.hip.cu with "
                                 "HIP 5.2 and ROCm 6.2.2), not run on 64 lanes",
}
# The per-lane arrays of 32 (`warp-loop-32`'s `[32]` to `[64]`, `lane-math-32`'s `[32 * F]`) are not run either:
# unpatched, lanes 32-63 write past the array, which is undefined, not a wrong answer a test can expect.
WARP_RULES = {"warp-loop-32", "lane-math-32", "ballot-32bit", "lane-math-64", *NOT_RUN}


def _need_hip_cpu() -> None:
    need((HIP_CPU / "include" / "hip" / "hip_runtime.h").is_file(), "../shared/hip-cpu (AMD's HIP CPU runtime)",
         "see ../shared/hip-cpu/README.md, or set HIPPORT_HIP_CPU")
    need(shutil.which("g++"), "g++", "apt-get install g++")
    need(any(p.is_file() for p in TBB_HEADERS), "libtbb-dev (HIP-CPU runs blocks with it)",
         "apt-get install libtbb-dev")


def _convert(path: Path, *extra: str) -> str:
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--stdout", "--no-cache", "--rocm-version",
                        "5.2", "--launch-syntax", "hip", *extra, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _batch(sources: dict[str, str]) -> str:
    """One translation unit: the programs' includes once, each program in its namespace, `main(argv[1])` picks."""
    includes, bodies = {"#include <cstring>"}, []
    for name, text in sources.items():
        kept = []
        for line in text.splitlines():
            if line.startswith("#include"):
                includes.add(line)
            else:
                kept.append(line)
        body = re.sub(r"\bint main\(\)", "int run()", "\n".join(kept))
        bodies.append(f"namespace w64_{name} {{\n{body}\n}}  // namespace w64_{name}\n")
    pick = "".join(f'    if (!std::strcmp(argv[1], "{n}")) return w64_{n}::run();\n' for n in sources)
    return "\n".join(sorted(includes)) + "\n" + "\n".join(bodies) + \
        f"\nint main(int argc, char** argv) {{\n    if (argc < 2) return 2;\n{pick}    return 2;\n}}\n"


def _build(cache: Path, units: dict[str, tuple[str, list[str]]]) -> dict[str, Path]:
    """Compile each unit (text, extra flags) with g++ and HIP-CPU, two at a time, reusing cached binaries."""
    out, jobs = {}, []
    for key, (text, flags) in units.items():
        digest = hashlib.sha256((text + "\0" + " ".join(flags)).encode()).hexdigest()[:20]
        exe = cache / f"{key}-{digest}"
        out[key] = exe
        if exe.is_file():
            continue
        src = cache / f"{key}-{digest}.cpp"
        src.write_text(text)
        cmd = ["g++", "-std=c++17", "-O1", "-x", "c++", "-I", str(HIP_CPU / "include"), *flags, str(src), "-o",
               str(exe) + ".tmp", "-ltbb", "-lpthread"]
        jobs.append((exe, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for exe, job in jobs:
        _, err = job.communicate()
        assert job.returncode == 0, f"g++ failed on {exe.name}.cpp:\n{err[:3000]}"
        os.replace(str(exe) + ".tmp", exe)
    return out


def _cache_dir(request, tmp_path_factory) -> Path:
    """pytest's cache keeps the built programs between runs; without it (`-p no:cacheprovider`) build afresh."""
    store = getattr(request.config, "cache", None)
    return Path(store.mkdir("wave64-exec")) if store else tmp_path_factory.mktemp("wave64-exec")


@pytest.fixture(scope="module")
def programs(request, tmp_path_factory) -> dict[str, Path]:
    _need_hip_cpu()
    cache = _cache_dir(request, tmp_path_factory)
    paths = {name: FIXTURES / f"{name}.cu" for name in PROGRAMS}
    before = {n: _convert(p) for n, p in paths.items()}
    after = {n: _convert(p, "--apply-suggestions", "--suggestion-level", LEVEL.get(n, "high"))
             for n, p in paths.items()}
    return _build(cache, {"before": (_batch(before), []), "after": (_batch(after), [])})


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_every_program_is_listed_and_says_its_outcome():
    assert {p.stem for p in FIXTURES.glob("*.cu")} == set(PROGRAMS)
    for name in PROGRAMS:
        assert _OUTCOME.search((FIXTURES / f"{name}.cu").read_text()[:300]), \
            f"{name}.cu: first line must be `// wave64: wrong-before right-after` (or right-before)"


def test_every_warp_level_rule_is_run_or_says_why():
    covered = set().union(*(rules for rules, _ in PROGRAMS.values()))
    assert WARP_RULES <= set(load_hazards())
    assert not covered & set(NOT_RUN)
    assert WARP_RULES == covered | set(NOT_RUN)


def test_every_lane_shuffling_stand_in_is_run_or_says_why():
    shims = load_semantic().shims or {}
    shuffling = {name for name, shim in shims.items() if "shfl" in shim.code}
    assert shuffling == set(SHIMS_NOT_RUN)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_patch_is_right_on_64_lanes(programs, name: str):
    expected = PROGRAMS[name][1]
    wrong_before = _OUTCOME.search((FIXTURES / f"{name}.cu").read_text()[:300]).group(1) == "wrong"
    before = _run(programs["before"], name)
    after = _run(programs["after"], name)
    assert before.returncode == 0 and after.returncode == 0, before.stderr + after.stderr
    if wrong_before:
        assert before.stdout.strip() != expected, f"{name}: right on 64 lanes before the patch; say right-before"
    else:
        assert before.stdout.strip() == expected, f"{name}: wrong on 64 lanes as it is"
    assert after.stdout.strip() == expected, f"{name}: the patched program is wrong on 64 lanes"


WAVE32 = sorted(n for n in PROGRAMS if _OUTCOME_32.search((FIXTURES / f"{n}.cu").read_text()[:300]))


@pytest.fixture(scope="module")
def programs32(request, tmp_path_factory) -> dict[str, Path]:
    _need_hip_cpu()
    cache = _cache_dir(request, tmp_path_factory)
    paths = {name: FIXTURES / f"{name}.cu" for name in WAVE32}
    before = {n: _convert(p) for n, p in paths.items()}
    after = {n: _convert(p, "--apply-suggestions", "--suggestion-level", LEVEL.get(n, "high"))
             for n, p in paths.items()}
    flags = ["-DHIP_CPU_WAVEFRONT_SIZE=32"]
    return _build(cache, {"before32": (_batch(before), flags), "after32": (_batch(after), flags)})


@pytest.mark.parametrize("name", WAVE32)
def test_patch_is_right_on_32_lanes(programs32, name: str):
    expected = PROGRAMS[name][1]
    wrong_before = _OUTCOME_32.search((FIXTURES / f"{name}.cu").read_text()[:300]).group(1) == "wrong"
    before = _run(programs32["before32"], name)
    after = _run(programs32["after32"], name)
    assert before.returncode == 0 and after.returncode == 0, before.stderr + after.stderr
    assert (before.stdout.strip() != expected) == wrong_before, f"{name} on 32 lanes as it is: {before.stdout}"
    assert after.stdout.strip() == expected, f"{name}: the patched program is wrong on 32 lanes"


def test_issue_21_halves_reduction_computes_256_after_apply_suggestions(programs):
    assert _run(programs["after"], "halves_macro").stdout.strip() == "256"


@pytest.fixture(scope="module")
def reduction(request, tmp_path_factory) -> dict[str, Path]:
    _need_hip_cpu()
    cache = _cache_dir(request, tmp_path_factory)
    units = {}
    for kind, extra in (("reduction-before", []), ("reduction-after", ["--apply-suggestions"])):
        out = tmp_path_factory.mktemp(kind)
        r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--no-cache", "--rocm-version", "5.2",
                            "--launch-syntax", "hip", "--no-build-files", *extra, "-o", str(out),
                            str(ROOT / "examples" / "cuda")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        # The source and the header it includes, so the cache key covers both.
        text = (out / "reduction" / "reduction.cu").read_text()
        header = (out / "common" / "cuda_check.h").read_text()
        units[kind] = (text.replace('#include "../common/cuda_check.h"', header), [])
    return _build(cache, units)


def test_example_reduction_fails_as_converted_and_passes_patched(reduction):
    """As converted it fails on 64 lanes (as on an MI200): its ballot keeps 32 of 64 bits. With the suggestions
    (the ballot widened, and the reduction, lane and warp ids made whole-wavefront together) it passes."""
    before = _run(reduction["reduction-before"], "-n", "100000", "-g", "16")
    assert before.returncode != 0 and "FAILED" in before.stdout, before.stdout
    after = _run(reduction["reduction-after"], "-n", "100000", "-g", "16")
    assert after.returncode == 0 and "PASSED" in after.stdout, after.stdout + after.stderr
