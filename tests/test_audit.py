"""Audit rules against their fixtures: expect/ok annotations, the .fixed outputs, and compiling those with hipcc."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, apply_suggestions, audit_source
from hipport.hazards import load_hazards, parse_version

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
