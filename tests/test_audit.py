"""Audit rules against their fixtures: expect/ok annotations, the .fixed outputs, and compiling those with hipcc."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, apply_suggestions, audit_source
from hipport.audit.hazards import load_hazards, parse_version

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"
_ANNOTATION = re.compile(r"//\s*(expect|ok):\s*([a-z0-9-]+)(?:\*(\d+))?")
_OPTIONS = re.compile(r"//\s*audit-options:(.*)")


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.cu") if not p.name.endswith(".fixed.cu"))


def rule_of(path: Path) -> str:
    return path.name.split(".")[0]


def options_of(text: str) -> AuditOptions:
    """`// audit-options: rocm=5.2 arch=gfx90a,gfx1100` in a fixture's first lines."""
    m = _OPTIONS.search(text[:500])
    if not m:
        return AuditOptions()
    kw = dict(item.split("=", 1) for item in m.group(1).split())
    opts = {}
    if "rocm" in kw:
        opts["rocm_version"] = parse_version(kw["rocm"])
    if "arch" in kw:
        opts["offload_arch"] = tuple(kw["arch"].split(","))
    return AuditOptions(**opts)


def expectations(text: str, rule: str) -> tuple[dict[int, int], set[int]]:
    expect, ok = {}, set()
    for n, line in enumerate(text.splitlines(), 1):
        for kind, rid, count in _ANNOTATION.findall(line):
            if rid != rule:
                continue
            if kind == "expect":
                expect[n] = int(count or 1)
            else:
                ok.add(n)
    return expect, ok


FILES = fixture_files()
IDS = [p.name for p in FILES]


def test_every_rule_has_a_fixture():
    assert set(load_hazards()) <= {rule_of(p) for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fixture(path: Path):
    rule = rule_of(path)
    assert rule in load_hazards(), f"{path.name}: no rule `{rule}`"
    src = path.read_bytes()
    text = src.decode()
    options = options_of(text)
    expect, ok = expectations(text, rule)
    assert expect and ok, f"{path.name}: needs both expect and ok lines"
    findings = [f for f in audit_source(src, path.name, options) if f.rule_id == rule]
    got: dict[int, int] = {}
    for f in findings:
        got[f.line] = got.get(f.line, 0) + 1
    missing = {n: c for n, c in expect.items() if got.get(n, 0) < c}
    noisy = {n: c for n, c in got.items() if c > expect.get(n, 0)}
    assert not missing, f"missing: {rule} expected on lines {sorted(missing)}"
    assert not noisy, "noisy: " + "; ".join(f"line {f.line}: {f.message}" for f in findings if f.line in noisy)
    fixed_path = path.with_name(path.name[:-3] + ".fixed.cu")
    fixed = apply_suggestions(src, findings, {rule})
    assert fixed_path.exists(), f"{fixed_path.name} is missing"
    assert fixed == fixed_path.read_bytes(), f"wrong: applying the suggestions does not give {fixed_path.name}"
    # Findings without an edit stay; every finding that carried an edit is gone from the fixed file.
    unfixable = {f.line for f in findings if not f.edits}
    again = [f for f in audit_source(fixed, fixed_path.name, options) if f.rule_id == rule]
    left = [f for f in again if f.line not in unfixable]
    assert not left, "fixed file still has: " + "; ".join(f"line {f.line}: {f.message}" for f in left)
    assert apply_suggestions(fixed, again, {rule}) == fixed, "a second round of suggestions changed the fixed file"


# -- the fixed fixtures compile -------------------------------------------------------------------------------
SHIM = FIXTURES / "rocm7_shim.h"
_NO_HIPCC = re.compile(r"//\s*hipcc:\s*no\b")
COMPILED = [p for p in FILES if not _NO_HIPCC.search(p.read_text()[:300])]


@pytest.mark.parametrize("path", COMPILED, ids=[p.name for p in COMPILED])
def test_fixed_fixture_compiles_with_hipcc(path: Path, tmp_path: Path):
    """The .fixed file, renamed the way `hipport convert` renames it for the fixture's ROCm version, compiles for
    gfx90a. With ROCm 6.2 or later as the target, a shim gives Debian's HIP 5.2 the 64-bit-mask *_sync built-ins
    and the non-constant warpSize of ROCm 7, so the fixes are checked against the rules they claim to meet."""
    from hipcc import require_hipcc, syntax_check

    from hipport.convert import ConvertOptions, convert_source
    from hipport.rules import load_rules

    require_hipcc()
    fixed = path.with_name(path.name[:-3] + ".fixed.cu")
    options = options_of(path.read_text())
    converted = convert_source(fixed.read_bytes(), load_rules(), ConvertOptions(rocm_version=options.rocm_version[:2]))
    target = tmp_path / fixed.name
    target.write_bytes(converted.after)
    extra = ("-include", str(SHIM)) if options.rocm_version >= (6, 2) else ()
    r = syntax_check(target, *extra)
    assert r.returncode == 0, f"{fixed.name} does not compile:\n{r.stderr[-3000:]}"


# -- as a new user would try it ---------------------------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cuda"

# Read from the sources: every line that breaks (or slows) on a 64-lane wavefront, and nothing else.
EXPECTED_EXAMPLE_FINDINGS = {
    "reduction/reduction.cu": {
        (31, "warp-mask-32bit"),   # #define FULL_MASK 0xffffffff, used as the ballot mask
        (35, "warp-loop-32"),      # shuffle loop from offset 16
        (36, "warp-mask-32bit"),   # __shfl_down_sync(0xffffffff, ...)
        (48, "lane-math-32"),      # lane = threadIdx.x & 31
        (49, "lane-math-32"),      # warp = threadIdx.x / 32
        (58, "lane-math-32"),      # BLOCK / 32 warps per block
        (73, "lane-math-32"),      # lane = threadIdx.x & 31
        (84, "ballot-32bit"),      # unsigned int ballot = __ballot_sync(...)
        (86, "ballot-32bit"),      # __popc(ballot)
    },
    "histogram/histogram.cu": {
        (79, "atomic-float-add"),  # float atomicAdd on cudaMalloc memory: CAS loop; unsafeAtomicAdd applies
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED_EXAMPLE_FINDINGS))
def test_examples_audit(name: str):
    src = (EXAMPLES / name).read_bytes()
    got = {(f.line, f.rule_id) for f in audit_source(src, name)}
    assert got == EXPECTED_EXAMPLE_FINDINGS[name]


def test_examples_fixed_reduction_is_clean():
    src = (EXAMPLES / "reduction/reduction.cu").read_bytes()
    fixed = apply_suggestions(src, audit_source(src))
    assert audit_source(fixed) == []


def test_suppression_comment():
    src = b"""__global__ void k(int* o) {
    int lane = threadIdx.x & 31;  // hipport: ignore[lane-math-32]
    // hipport: ignore[ballot-32bit, lane-math-32]
    unsigned b = __ballot(threadIdx.x & 31);
    int w = threadIdx.x / 32;
    o[0] = lane + b + w;
}
"""
    assert [(f.line, f.rule_id) for f in audit_source(src)] == [(5, "lane-math-32")]


def test_select_and_ignore():
    src = (EXAMPLES / "reduction/reduction.cu").read_bytes()
    only = audit_source(src, options=AuditOptions(select=frozenset({"ballot-32bit"})))
    assert {f.rule_id for f in only} == {"ballot-32bit"}
    rest = audit_source(src, options=AuditOptions(ignore=frozenset({"ballot-32bit", "lane-math-32"})))
    assert {f.rule_id for f in rest} == {"warp-mask-32bit", "warp-loop-32"}


def test_hip_sources_are_audited_too():
    src = b"""__global__ void k(float* o) {
    float v = o[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down(v, off);
    unsigned b = __ballot(v > 0);
    o[0] = v + __popc(b) + (threadIdx.x % warpSize) + __popcll(__ballot(1));
}
"""
    assert [(f.line, f.rule_id) for f in audit_source(src)] == [
        (3, "warp-loop-32"), (4, "ballot-32bit"), (5, "ballot-32bit")]


def test_severity_follows_rocm_version():
    src = b"__global__ void k(float* o) { __shared__ float s[warpSize]; o[0] = s[0]; }\n"
    new = audit_source(src, options=AuditOptions(rocm_version=(7, 0)))
    old = audit_source(src, options=AuditOptions(rocm_version=(6, 4)))
    assert [f.severity for f in new] == ["error"] and [f.severity for f in old] == ["warning"]


def test_unparsable_file_still_gets_token_findings():
    src = b"#include <nowhere.h>\n__global__ void k(int* o) { int lane = threadIdx.x & 31 o[0] = lane; }}}\n"
    assert any(f.rule_id == "lane-math-32" for f in audit_source(src))


def test_describe_rule():
    from hipport.audit import describe_rule

    text = describe_rule("warpsize-constexpr")
    assert text.startswith("warpsize-constexpr") and "error when ROCm >= 7.0" in text
    with pytest.raises(KeyError):
        describe_rule("no-such-rule")
