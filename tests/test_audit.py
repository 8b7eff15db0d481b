"""Audit rules against their fixtures: expect/ok annotations, the .fixed outputs, and compiling those with hipcc.

Each `tests/fixtures/audit/<rule>[.variant].cu` says in its first lines what fixing it means:

* nothing: the audit's patches fix it, and `<name>.fixed.cu` is their output as reviewed by hand against the
  rule's note (its `// reviewed:` header says what was checked; the header is not part of the comparison);
* `// fix: none (why)`: what a person changes is not an edit of the flagged code (new helpers, another
  allocation, a design change). Every finding of the rule must carry no patch, and there is no `.fixed.cu`;
* `// fix: missing (what a person writes)`: a person makes a mechanical edit the audit does not offer.
  `<name>.fixed.cu` is that edit written by hand, and the test comparing the audit's patches with it is a strict
  expected failure until the audit offers them.

A `.fixed.cu` file is never a copy of its input.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, apply_suggestions, audit_source
from hipport.audit.hazards import load_hazards, parse_version

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"
_ANNOTATION = re.compile(r"//\s*(expect|ok):\s*([a-z0-9-]+)(?:\*(\d+))?")
_OPTIONS = re.compile(r"//\s*audit-options:(.*)")
_FIX = re.compile(r"^//\s*fix:\s*(none|missing)\s*\((.+)\)\s*$", re.M)
_REVIEWED = re.compile(rb"\A(?://\s*reviewed:[^\n]*\n)+")


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.cu") if not p.name.endswith(".fixed.cu"))


def rule_of(path: Path) -> str:
    return path.name.split(".")[0]


def fixed_of(path: Path) -> Path:
    return path.with_name(path.name[:-3] + ".fixed.cu")


def fix_of(path: Path) -> tuple[str, str]:
    """("patched", "") or ("none" | "missing", the reason) from the fixture's first lines."""
    m = _FIX.search(path.read_text()[:600])
    return (m.group(1), m.group(2)) if m else ("patched", "")


def expected_fixed(path: Path) -> bytes:
    """The .fixed.cu file without its `// reviewed:` header."""
    data = fixed_of(path).read_bytes()
    m = _REVIEWED.match(data)
    return data[m.end():] if m else data


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
    if "defines" in kw:  # the project's switches for its AMD build (settings' `defines`)
        opts["defines"] = tuple(kw["defines"].split(","))
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


def rule_findings(src: bytes, path: Path) -> list:
    return [f for f in audit_source(src, path.name, options_of(src.decode())) if f.rule_id == rule_of(path)]


FILES = fixture_files()
IDS = [p.name for p in FILES]
PATCHED = [p for p in FILES if fix_of(p)[0] != "none"]


def test_every_rule_has_a_fixture():
    assert set(load_hazards()) <= {rule_of(p) for p in FILES}


def test_every_fixed_file_belongs_to_a_fixture_and_none_is_a_copy():
    for fixed in sorted(FIXTURES.glob("*.fixed.cu")):
        source = fixed.with_name(fixed.name[: -len(".fixed.cu")] + ".cu")
        assert source.exists(), f"{fixed.name}: no fixture"
        assert expected_fixed(source) != source.read_bytes(), \
            f"{fixed.name} equals its input: say `// fix: none (why)` in {source.name} and delete it, or write " \
            f"the fix a person makes and say `// fix: missing (...)`"


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fixture_findings(path: Path):
    rule = rule_of(path)
    assert rule in load_hazards(), f"{path.name}: no rule `{rule}`"
    src = path.read_bytes()
    expect, ok = expectations(src.decode(), rule)
    assert expect and ok, f"{path.name}: needs both expect and ok lines"
    findings = rule_findings(src, path)
    got: dict[int, int] = {}
    for f in findings:
        got[f.line] = got.get(f.line, 0) + 1
    missing = {n: c for n, c in expect.items() if got.get(n, 0) < c}
    noisy = {n: c for n, c in got.items() if c > expect.get(n, 0)}
    assert not missing, f"missing: {rule} expected on lines {sorted(missing)}"
    assert not noisy, "noisy: " + "; ".join(f"line {f.line}: {f.message}" for f in findings if f.line in noisy)
    kind, reason = fix_of(path)
    if kind == "none":
        patched = [f"line {f.line}: {f.message}" for f in findings if f.edits]
        assert not patched, f"{path.name} says `fix: none ({reason})` but these carry a patch: {patched}"
        assert not fixed_of(path).exists(), f"{path.name} says `fix: none`: {fixed_of(path).name} must not exist"
    else:
        assert fixed_of(path).exists(), f"{fixed_of(path).name} is missing"
    if kind == "patched":
        assert any(f.edits for f in findings), f"{path.name}: no finding carries a patch; say `// fix: none (why)`"


def _suggestion_params():
    for p in PATCHED:
        kind, reason = fix_of(p)
        marks = [pytest.mark.xfail(strict=True, reason=f"suggestion missing: {reason}")] if kind == "missing" else []
        yield pytest.param(p, marks=marks, id=p.name)


@pytest.mark.parametrize("path", _suggestion_params())
def test_suggestions_give_the_reviewed_fix(path: Path):
    src = path.read_bytes()
    fixed = apply_suggestions(src, rule_findings(src, path), {rule_of(path)})
    assert fixed == expected_fixed(path), f"wrong: applying the suggestions does not give {fixed_of(path).name}"


@pytest.mark.parametrize("path", PATCHED, ids=[p.name for p in PATCHED])
def test_reviewed_fix_leaves_nothing_to_patch(path: Path):
    """Audited again, the reviewed fix has nothing left that a patch could fix: what the rule still reports there
    carries no patch, and a second round of suggestions changes nothing. For a patched fixture, the findings
    that carried a patch are gone (their lines are the input's: the patches edit within lines)."""
    src, fixed = path.read_bytes(), expected_fixed(path)
    again = rule_findings(fixed, path)
    patchable = [f"line {f.line}: {f.message}" for f in again if f.edits]
    assert not patchable, "the fixed file still has: " + "; ".join(patchable)
    assert apply_suggestions(fixed, again, {rule_of(path)}) == fixed
    if fix_of(path)[0] == "patched":
        unfixable = {f.line for f in rule_findings(src, path) if not f.edits}
        left = [f"line {f.line}: {f.message}" for f in again if f.line not in unfixable]
        assert not left, "fixed file still has: " + "; ".join(left)


# -- the fixed fixtures compile -------------------------------------------------------------------------------
SHIM = FIXTURES / "rocm7_shim.h"
_NO_HIPCC = re.compile(r"//\s*hipcc:\s*no\b")
COMPILED = [p for p in FILES if not _NO_HIPCC.search(p.read_text()[:300])]


@pytest.mark.parametrize("path", COMPILED, ids=[p.name for p in COMPILED])
def test_fixed_fixture_compiles_with_hipcc(path: Path, tmp_path: Path):
    """The .fixed file (for a `fix: none` fixture, the fixture itself: its findings are about run-time behaviour),
    renamed the way `hipport convert` renames it for the fixture's ROCm version, compiles for gfx90a: against
    Debian's HIP 5.2 before 6.2, against ROCm 6.2.2's headers from 6.2 (its 64-bit-mask *_sync built-ins on from
    6.3), and from 7.0 with a shim for what ROCm 7 changed (`__syncwarp`, a warpSize that is not a constant), so the
    fixes are checked against the rules they claim to meet."""
    from hipcc import require_hipcc, syntax_check

    from hipport.convert import ConvertOptions, convert_source
    from hipport.rules import load_rules

    require_hipcc()
    source = fixed_of(path) if fixed_of(path).exists() else path
    options = options_of(path.read_text())
    converted = convert_source(source.read_bytes(), load_rules(),
                               ConvertOptions(rocm_version=options.rocm_version[:2]))
    target = tmp_path / source.name
    target.write_bytes(converted.after)
    extra = ("-include", str(SHIM)) if options.rocm_version >= (7, 0) else ()
    # The configuration the fixture is audited in (`audit-options: defines=USE_ROCM`) is the one it builds in.
    extra += tuple(f"-D{d}" for d in options.defines)
    r = syntax_check(target, *extra, target=options.rocm_version)
    assert r.returncode == 0, f"{source.name} does not compile:\n{r.stderr[-3000:]}"


# -- as a new user would try it ---------------------------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cuda"

# Read from the sources: every line that breaks (or slows) on a 64-lane wavefront, and nothing else.
EXPECTED_EXAMPLE_FINDINGS = {
    "reduction/reduction.cu": {
        (31, "warp-mask-32bit"),   # #define FULL_MASK 0xffffffff, used as the ballot mask
        (35, "warp-loop-32"),      # shuffle loop from offset 16
        (36, "warp-mask-32bit"),   # __shfl_down_sync(0xffffffff, ...)
        # lines 48, 49, 58 (lane & 31, warp / 32, BLOCK / 32): ids of the same logical warp of 32 as line 35's
        # reduction, right on 64 lanes (issue 34): not reported; line 35 says so (info) with a `width` 32 patch
        (73, "lane-math-32"),      # lane = threadIdx.x & 31
        (84, "ballot-32bit"),      # unsigned int ballot = __ballot_sync(...)
        (84, "warp-mask-32bit"),   # ... (FULL_MASK, ...): the call the compiler stops at
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
    src = (b"#include <nowhere.h>\n__global__ void k(int* o) { int lane = threadIdx.x & 31 o[0] = "
           b"__shfl_xor(lane, 1); }}}\n")  # a lane id feeding a warp operation
    assert any(f.rule_id == "lane-math-32" for f in audit_source(src))


def test_describe_rule():
    from hipport.audit import describe_rule

    text = describe_rule("warpsize-constexpr")
    assert text.startswith("warpsize-constexpr") and "error when ROCm >= 7.0" in text
    with pytest.raises(KeyError):
        describe_rule("no-such-rule")
