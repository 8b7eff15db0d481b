"""One set of findings (issue 21, defects 4 and 5): what the conversion leaves for a person is a finding of
`hipport audit` in every output (text listing and count, exit status, baseline, --select/--ignore, suppressions,
`rules show`, every report with its description), and what the conversion rewrites by itself is not hand work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, audit_source, describe_rule
from hipport.audit.hazards import load_all_rules, load_findings, load_hazards
from hipport.convert import ConvertOptions, convert_source
from hipport.report import render
from hipport.report.model import AuditReport, FileReport, FindingReport, rule_table
from hipport.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
# The reproduction: a kernel launched from a kernel (dynamic parallelism), an error convert reports.
LAUNCH = "__global__ void c(float*p){}\n__global__ void p(float*q){ c<<<1,32>>>(q); }\n"
# An all-lanes 32-bit mask: convert writes the mask-free call before ROCm 6.2 and the 64-bit mask from it.
XOR = "__global__ void k(float*x){ float v=x[threadIdx.x]; v+=__shfl_xor_sync(0xFFFFFFFF, v, 1); x[threadIdx.x]=v; }\n"


def audit(*args, cwd: Path):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_device_launch_is_listed_and_fails_the_run(tmp_path):
    (tmp_path / "dl.cu").write_text(LAUNCH)
    r = audit("dl.cu", "--rocm-version", "7.0", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("dl.cu:2:30: error device-launch: ")
    assert r.stderr == "1 finding (1 error) in 1 file\n"
    assert audit("dl.cu", "--rocm-version", "7.0", "--fail-on", "error", "-q", cwd=tmp_path).returncode == 1


def test_baseline_select_ignore_and_suppressions_know_convert_findings(tmp_path):
    (tmp_path / "dl.cu").write_text(LAUNCH)
    r = audit("dl.cu", "--rocm-version", "7.0", "--write-baseline", "base.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [e["rule"] for e in json.loads((tmp_path / "base.json").read_text())["findings"]] == ["device-launch"]
    r = audit("dl.cu", "--rocm-version", "7.0", "--baseline", "base.json", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "" and "1 in the baseline not shown" in r.stderr
    r = audit("dl.cu", "--rocm-version", "7.0", "--ignore", "device-launch", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    r = audit("dl.cu", "--rocm-version", "7.0", "--select", "device-launch,shim-added", cwd=tmp_path)
    assert r.returncode == 1 and "device-launch" in r.stdout, r.stderr

    quiet = LAUNCH.replace("(q); }", "(q); }  // hipport: ignore[device-launch] the child runs on the host later")
    (tmp_path / "dl.cu").write_text(quiet)
    r = audit("dl.cu", "--rocm-version", "7.0", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr  # silenced, and no unused-suppression
    (tmp_path / "dl.cu").write_text(quiet.replace("ignore[device-launch]", "ignore[device-lanch]"))
    r = audit("dl.cu", "--rocm-version", "7.0", "-q", cwd=tmp_path)
    assert r.returncode == 1
    assert "error device-launch" in r.stdout
    assert "`device-lanch` is not a rule id; `device-launch` has a finding here" in r.stdout


def test_text_listing_and_every_report_count_the_same(tmp_path):
    (tmp_path / "mix.cu").write_text(
        "#include <cuda_runtime.h>\n" + LAUNCH +
        "__global__ void k(float*x){ unsigned b = __ballot_sync(~0u, x[0] > 0); x[1] = b; }\n"
        "void h(){ cudaProfilerInitialize(0, 0, 0); }\n")
    r = audit("mix.cu", "--rocm-version", "7.0", "--report", "text", "--report", "json", "--report", "sarif",
              "--report", "markdown", "--output-dir", "out", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    text = (tmp_path / "out" / "hipport-report.txt").read_text()
    listed = sorted(re.findall(r"^mix\.cu:\d+:\d+: \w+ ([a-z0-9-]+):", text, re.M))
    assert "device-launch" in listed and "removed-api" in listed and "ballot-32bit" in listed, text
    data = json.loads((tmp_path / "out" / "hipport-report.json").read_text())
    assert sorted(f["rule"] for x in data["files"] for f in x["findings"]) == listed
    assert data["totals"]["findings"] == len(listed)
    sarif = json.loads((tmp_path / "out" / "hipport-report.sarif").read_text())
    assert sorted(x["ruleId"] for x in sarif["runs"][0]["results"]) == listed
    md = (tmp_path / "out" / "hipport-report.md").read_text()
    assert f"{len(listed)} findings" in md.splitlines()[0]


@pytest.mark.parametrize("rocm", ["5.2", "7.0"])
def test_what_convert_rewrites_is_converted_not_hand_work(tmp_path, rocm):
    (tmp_path / "x.cu").write_text(XOR)
    r = audit("x.cu", "--rocm-version", rocm, "--report", "text", "--report", "json", "--output-dir", "out",
              cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "out" / "hipport-report.txt").read_text() == ""
    totals = json.loads((tmp_path / "out" / "hipport-report.json").read_text())["totals"]
    assert totals["findings"] == 0 and totals["converted_by_category"]["warp"] == 1 and totals["readiness"] == 1


def test_a_stand_in_convert_writes_is_no_error_but_a_partial_mask_stays(tmp_path):
    (tmp_path / "s.cu").write_text(
        "__global__ void k(int*x){ x[threadIdx.x]=1; __syncwarp(); x[0]=2; __syncwarp(0x0000ffff); }\n")
    r = audit("s.cu", "--rocm-version", "5.2", "-q", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert [line.split(": ")[1] for line in r.stdout.splitlines()] == ["info shim-added",
                                                                       "warning warp-builtin-unavailable"], r.stdout
    assert "partial mask" in r.stdout and " error " not in r.stdout


def test_what_convert_cannot_rewrite_stays_hand_work(tmp_path):
    # Look-alikes of the case above: no mask-free form to write (`__match_any_sync` before 7.0), and a mask in a
    # 32-bit variable, which convert does not rewrite.
    (tmp_path / "m.cu").write_text(
        "__global__ void k(int*x){ unsigned long long b = __match_any_sync(0xffffffffu, x[0]); x[0] = b > 1; }\n")
    r = audit("m.cu", "--rocm-version", "5.2", "-q", cwd=tmp_path)
    assert r.returncode == 1 and "error warp-builtin-unavailable: `__match_any_sync`" in r.stdout, r.stdout
    (tmp_path / "v.cu").write_text(XOR.replace("__global__ void k(float*x){",
                                               "__global__ void k(float*x){ unsigned m = 0xFFFFFFFF;")
                                   .replace("(0xFFFFFFFF,", "(m,"))
    r = audit("v.cu", "--rocm-version", "7.0", "-q", cwd=tmp_path)
    assert r.returncode == 1 and "error warp-mask-32bit:" in r.stdout, r.stdout


# --- every rule id any code path can emit is known to every path that takes one ---------------------------------

_ID = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+"
_CONST = re.compile(rf"^(_?[A-Z][A-Z0-9_]*)\s*=\s*\"({_ID})\"", re.M)
# The rule argument of the calls that make findings: the first of `ctx.report(...)`, `ctx.finding(...)`,
# `Finding(...)`, the second of the build files' `ctx.report(offset, RULE, ...)`, the fourth of
# `_guard(ctx, d, GUARD, rule, ...)` (convert/redefinitions.py).
_CALL = re.compile(r"\b(?:report|finding|Finding)\(\s*([^,()]+?)\s*,|\b_guard\(ctx, d, \w+, \"(" + _ID + r")\""
                   r"|\b(?:ctx|self)\.report\([^,()]+, ([A-Z_]+),")
# renames._unsupported builds its id as f"{what}-api", `what` being one of these two.
_BUILT_IDS = {"removed-api", "unsupported-api"}


def emitted_ids() -> set[str]:
    """Rule ids in the code that makes findings (hipport/audit, hipport/convert), constants resolved."""
    ids = set(_BUILT_IDS)
    texts = [p.read_text() for d in ("audit", "convert") for p in sorted((ROOT / "hipport" / d).rglob("*.py"))]
    shared = {}  # names imported from another module (convert/build/common.py's UNTRANSLATED, ...)
    for text in texts:
        shared.update(_CONST.findall(text))
    for text in texts:
        consts = {**shared, **dict(_CONST.findall(text))}  # a module's own `RULE` first
        for m in _CALL.finditer(text):
            if m.group(2):
                ids.add(m.group(2))
                continue
            arg = m.group(1) or m.group(3)
            for literal in re.findall(rf"\"({_ID})\"", arg):
                ids.add(literal)
            for name in re.findall(r"\b_?[A-Z][A-Z0-9_]*\b", arg):
                if name in consts:
                    ids.add(consts[name])
    return ids


def fixture_ids() -> set[str]:
    """Rule ids the convert and audit fixtures actually produce, the audit given each file's conversion."""
    rules = load_rules()
    ids = set()
    for path in sorted((ROOT / "tests" / "fixtures" / "convert").glob("*.cu")):
        src = path.read_bytes()
        for rocm in ((5, 2), (7, 0)):
            result = convert_source(src, rules, ConvertOptions(rocm_version=rocm), str(path))
            ids |= {f.rule_id for f in result.findings}
    for path in sorted((ROOT / "tests" / "fixtures" / "audit").glob("*.cu")):
        src = path.read_bytes()
        conversion = convert_source(src, rules, ConvertOptions(rocm_version=(7, 0)), str(path))
        ids |= {f.rule_id for f in audit_source(src, str(path), AuditOptions(rocm_version=(7, 0)), conversion)}
    return ids


def test_every_emitted_rule_id_has_a_record():
    known = load_all_rules()
    code = emitted_ids()
    assert code - set(known) == set(), "ids the code emits with no rules/hazards or rules/findings record"
    assert {"device-launch", "redefines-hip", "overload-merged", "build-untranslated", "shim-added"} <= code
    assert fixture_ids() - set(known) == set()
    assert set(load_hazards()) | set(load_findings()) == set(known)


def test_every_rule_id_is_known_to_select_ignore_suppressions_and_reports(tmp_path):
    ids = sorted(load_all_rules())
    (tmp_path / "clean.cu").write_text("__global__ void k(int* o) { o[threadIdx.x % warpSize] = 1; }\n")
    for option in ("--select", "--ignore"):
        r = audit("clean.cu", option, ",".join(ids), cwd=tmp_path)
        assert r.returncode == 0, r.stderr

    # A suppression naming any id is judged "silences nothing", never "not a rule id".
    src = "".join(f"int x{k};  // hipport: ignore[{rid}]\n" for k, rid in enumerate(ids)).encode()
    messages = [f.message for f in audit_source(src, "s.cu", AuditOptions())]
    assert not [m for m in messages if "is not a rule id" in m], messages
    assert any("cannot be silenced" in m for m in messages)  # unused-suppression itself, as before

    table = rule_table(load_all_rules())
    file = FileReport("a.cu", "a.cu", lines=len(ids))
    for k, rid in enumerate(ids, 1):
        info = table[rid]
        assert info.summary and info.note and info.summary != rid, rid
        file.findings.append(FindingReport(rid, info.severity, k, 1, "m", "high", info.source, "x"))
    report = AuditReport([file], table, ("gfx90a",), "7.0")
    sarif = json.loads(render("sarif", report))
    descriptors = {d["id"]: d for d in sarif["runs"][0]["tool"]["driver"]["rules"]}
    for rid in ids:
        assert descriptors[rid]["shortDescription"]["text"].strip(), rid
        assert descriptors[rid]["fullDescription"]["text"].strip(), rid
    md = render("markdown", report).decode()
    for rid in ids:
        row = next(line for line in md.splitlines() if line.startswith(f"| `{rid}` |"))
        assert row.rstrip(" |").split("|")[-1].strip(), row


def test_rules_show_knows_every_convert_finding():
    for rid in sorted(load_findings()):
        assert describe_rule(rid).startswith(f"{rid} (convert): ")
    for rid in ("device-launch", "overload-merged", "shim-added"):
        r = subprocess.run([sys.executable, "-m", "hipport", "rules", "show", rid], capture_output=True, text=True,
                           cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"{rid} (convert): ")
