"""The audit's ROCm 7 runtime rules against the real compilers (issue 32): the reviewed fixes of `launch-zero-size`,
`last-error-sticky` and `hiprtc-std-names`, converted for ROCm 7.2, compile with ROCm 7.2.4's hipcc (code generation
for gfx942 and gfx1100); and the hipRTC fixture, built and run, shows what the rule claims: its `std::` sources
compile with ROCm 6.4.3's hipRTC and fail with 7.2.4's, and the patched ones compile with both, except the name
hipRTC never had. No GPU is needed: hipRTC compiles for the target named in its options.

The compilers are `rocm7-hipcc` / `rocm64-hipcc` (../shared/tools/rocm_chroot.sh); without them each test skips
with its reason, and fails under CI=true."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hipcc import real_compile, real_hipcc

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"
RULES = ("launch-zero-size", "last-error-sticky", "hiprtc-std-names")
RTC = FIXTURES / "hiprtc-std-names.cu"


def _converted(source: Path, target: tuple[int, int], where: Path, suffix: str = ".hip") -> Path:
    out = where / (source.name[: -len(".cu")] + suffix)
    out.write_bytes(convert_source(source.read_bytes(), load_rules(), ConvertOptions(rocm_version=target)).after)
    return out


@pytest.mark.parametrize("rule", RULES)
def test_reviewed_fix_builds_with_rocm_7_2(rule, tmp_path):
    path = _converted(FIXTURES / f"{rule}.fixed.cu", (7, 2), tmp_path)
    r = real_compile(path, "7.2")
    assert r.returncode == 0, f"{path.name} does not build with ROCm 7.2.4:\n{r.stderr[-3000:]}"


# What each kernel source of the hipRTC fixture does, by hipRTC release: (the fixture, its reviewed fix).
EXPECTED = {
    "7.2": ({"traits": "failed", "limits": "failed", "own_std": "compiled", "commented": "compiled",
             "widths": "failed"},
            {"traits": "compiled", "limits": "failed", "own_std": "compiled", "commented": "compiled",
             "widths": "compiled"}),
    "6.4": ({"traits": "compiled", "limits": "failed", "own_std": "compiled", "commented": "compiled",
             "widths": "compiled"},
            {"traits": "compiled", "limits": "failed", "own_std": "compiled", "commented": "compiled",
             "widths": "compiled"}),
}


@pytest.mark.parametrize("release", sorted(EXPECTED))
@pytest.mark.parametrize("fixed", (False, True), ids=("fixture", "fixed"))
def test_hiprtc_sources_compile_as_the_rule_says(release, fixed, tmp_path):
    exe = real_hipcc(release)
    source = RTC.with_name("hiprtc-std-names.fixed.cu") if fixed else RTC
    unit = _converted(source, (7, 2) if release == "7.2" else (6, 4), tmp_path, ".cpp")
    program = tmp_path / "rtc"
    build = subprocess.run([exe, "-x", "hip", "-w", unit.name, "-o", program.name, "-lhiprtc"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([exe, "--chroot-exec", f"./{program.name}"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    got = dict(line.split(": ", 1) for line in run.stdout.splitlines() if line.endswith(("compiled", "failed")))
    assert got == EXPECTED[release][fixed], run.stdout + run.stderr[-2000:]
    assert run.returncode == sum(v == "failed" for v in got.values())
