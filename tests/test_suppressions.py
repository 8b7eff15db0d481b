"""`// hipport: ignore` comments in every form a user writes them, and the `unused-suppression` rule that reports the
ones that silence nothing or name no rule (its fixture pair is tests/fixtures/audit/unused-suppression*.cu)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hipport.audit import AuditOptions, apply_suggestions, audit_source

ROOT = Path(__file__).resolve().parents[1]

# Line 2 has two findings (warp-mask-32bit on the mask, lane-math-32 on `& 31`); line 3 one (lane-math-32).
KERNEL = """__global__ void k(int* o) {{
    o[0] = __any_sync(0xffffffff, o[1]) + (threadIdx.x & 31);{same}
    o[2] = threadIdx.x / 32;
}}
"""


def found(src: str | bytes, **options) -> list[tuple[int, str]]:
    data = src.encode() if isinstance(src, str) else src
    return [(f.line, f.rule_id) for f in audit_source(data, "k.cu", AuditOptions(**options))]


def kernel(same: str = "", above: str | None = None) -> str:
    text = KERNEL.format(same=same)
    if above is not None:
        lines = text.splitlines(keepends=True)
        text = "".join([lines[0], above + "\n", *lines[1:]])
    return text


def test_without_a_comment_every_finding_shows():
    assert found(kernel()) == [(2, "warp-mask-32bit"), (2, "lane-math-32"), (3, "lane-math-32")]


def test_bare_comment_silences_every_rule_on_its_line_and_the_next():
    # Trailing line 2: line 2 and line 3 (the line below) are both silenced, as for ignore[...].
    assert found(kernel(same="  // hipport: ignore")) == []
    # On its own line above line 2: lines 2 and 3 move down by one; the comment covers itself and line 3.
    assert found(kernel(above="    // hipport: ignore (tiles of 32)")) == [(4, "lane-math-32")]
    # Block comments and doc comments carry it too; a reason may follow.
    assert found(kernel(same="  /* hipport: ignore: 32-thread tiles */")) == []
    assert found(kernel(above="    /// hipport: ignore")) == [(4, "lane-math-32")]


def test_one_id_silences_that_rule_only():
    assert found(kernel(same="  // hipport: ignore[lane-math-32]")) == [(2, "warp-mask-32bit")]


def test_several_ids():
    assert found(kernel(same="  // hipport: ignore[lane-math-32, warp-mask-32bit]")) == []
    assert found(kernel(same="  // hipport: ignore[warp-mask-32bit,lane-math-32] both by design")) == []


def test_line_above():
    assert found(kernel(above="    // hipport: ignore[warp-mask-32bit]")) == [(3, "lane-math-32"),
                                                                          (4, "lane-math-32")]


def test_unknown_id_is_reported_with_the_rule_meant_and_corrected():
    src = kernel(above="    // hipport: ignore[lane-math32]")
    findings = audit_source(src.encode(), "k.cu")
    assert [(f.line, f.rule_id) for f in findings] == [
        (2, "unused-suppression"), (3, "warp-mask-32bit"), (3, "lane-math-32"), (4, "lane-math-32")]
    (unused,) = [f for f in findings if f.rule_id == "unused-suppression"]
    assert unused.severity == "info" and "`lane-math32` is not a rule id" in unused.message
    # lane-math-32 has a finding under it: the patch writes the id the user meant, which then silences it.
    fixed = apply_suggestions(src.encode(), [unused])
    assert b"// hipport: ignore[lane-math-32]\n" in fixed
    assert found(fixed) == [(3, "warp-mask-32bit"), (4, "lane-math-32")]


def test_unknown_id_without_a_match_is_removed():
    src = kernel(same="  // hipport: ignore[no-such-rule]")
    findings = audit_source(src.encode(), "k.cu")
    (unused,) = [f for f in findings if f.rule_id == "unused-suppression"]
    assert "`no-such-rule` is not a rule id; remove it" in unused.message
    assert apply_suggestions(src.encode(), [unused]) == kernel().encode()


def test_unused_bare_and_unused_ids_are_reported_and_removed():
    src = "__global__ void k(int* o) {\n    // hipport: ignore\n    o[0] = threadIdx.x % warpSize;\n" \
          "    o[1] = 2;  // hipport: ignore[ballot-32bit] old ballot\n}\n"
    findings = audit_source(src.encode(), "k.cu")
    assert [(f.line, f.rule_id, f.severity) for f in findings] == [
        (2, "unused-suppression", "info"), (4, "unused-suppression", "info")]
    assert "silences nothing" in findings[0].message and "`ballot-32bit` silences nothing" in findings[1].message
    assert apply_suggestions(src.encode(), findings) == \
        b"__global__ void k(int* o) {\n    o[0] = threadIdx.x % warpSize;\n    o[1] = 2;\n}\n"


def test_only_the_stale_ids_of_a_list_go():
    src = kernel(same="  // hipport: ignore[ballot-32bit, lane-math-32, inline-ptx]")
    findings = audit_source(src.encode(), "k.cu")
    (unused,) = [f for f in findings if f.rule_id == "unused-suppression"]
    assert "`ballot-32bit`, `inline-ptx` silence nothing" in unused.message
    assert b"// hipport: ignore[lane-math-32]\n" in apply_suggestions(src.encode(), [unused])


def test_a_suppression_used_by_a_rule_not_selected_is_not_unused():
    src = kernel(same="  // hipport: ignore[lane-math-32]")
    assert found(src, select=frozenset({"unused-suppression"})) == []
    assert found(src, ignore=frozenset({"lane-math-32"})) == [(2, "warp-mask-32bit")]


def test_look_alikes_are_not_directives():
    src = ('__global__ void k(int* o) {\n'
           '    // Write `hipport: ignore` or "hipport: ignore[rule]" to silence a finding.\n'
           '    // hipport: ignored before; hipport: ignore-list is not a directive\n'
           '    const char* s = "hipport: ignore";\n'
           '    o[0] = s[0];\n}\n')
    assert found(src) == []


def test_removal_keeps_crlf_and_other_comment_text():
    src = b"__global__ void k(int* o) {\r\n    o[0] = 1; // hipport: ignore\r\n" \
          b"    // TODO: tail; hipport: ignore[lane-math-32]\r\n    o[1] = 2;\r\n}\r\n"
    findings = audit_source(src, "k.cu")
    assert [f.rule_id for f in findings] == ["unused-suppression", "unused-suppression"]
    assert apply_suggestions(src, findings) == \
        b"__global__ void k(int* o) {\r\n    o[0] = 1;\r\n    // TODO: tail;\r\n    o[1] = 2;\r\n}\r\n"


def test_unused_suppression_cannot_be_silenced_by_a_comment():
    # A bare comment above a stale one must not swallow its report (and so count as used itself).
    src = "__global__ void k(int* o) {\n    // hipport: ignore\n    o[0] = 1;  // hipport: ignore[lane-math-32]\n}\n"
    assert found(src) == [(2, "unused-suppression"), (3, "unused-suppression")]


def run_audit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_bare_comment_lets_the_hook_pass_and_stale_ones_are_info(tmp_path):
    flagged = tmp_path / "k.cu"
    flagged.write_text(kernel())
    r = run_audit(flagged, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    flagged.write_text(kernel(same="  // hipport: ignore"))
    r = run_audit(flagged, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 findings in 1 file" in r.stderr
    # Once the code is fixed the comment is stale: an info finding with its patch; it fails only --fail-on info.
    flagged.write_text("__global__ void k(int* o) {\n    o[0] = threadIdx.x % warpSize;  // hipport: ignore\n}\n")
    r = run_audit(flagged, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "info unused-suppression: `hipport: ignore` silences nothing" in r.stdout
    assert "+    o[0] = threadIdx.x % warpSize;" in r.stdout
    assert run_audit(flagged, "--fail-on", "info", cwd=tmp_path).returncode == 1
    assert run_audit(flagged, "--fail-on", "info", "--ignore", "unused-suppression", cwd=tmp_path).returncode == 0


def test_convert_apply_suggestions_removes_stale_comments(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int* o) {\n    // hipport: ignore[warp-loop-32]\n    o[0] = 1;\n}\n")
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--no-cache", "--apply-suggestions", "--select",
                        "unused-suppression", str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert src.read_text() == "#include <hip/hip_runtime.h>\n__global__ void k(int* o) {\n    o[0] = 1;\n}\n"


def test_readme_example_is_silenced_and_flagged_without_its_comments():
    import re

    import docs

    readme = docs.text()
    m = re.search(r"\*\*Suppressions\.\*\*.*?```cpp\n(.*?)```", readme, re.S)
    assert m, "the README's suppression example is gone; update this test with it"
    body = m.group(1)
    src = "__global__ void k(int* o, bool ok) {\n" + body + "    o[lane] = any;\n}\n"
    assert found(src) == []
    bare = re.sub(r"//[^\n]*", "", body)
    assert {rule for _, rule in found("__global__ void k(int* o, bool ok) {\n" + bare + "o[lane] = any;\n}\n")} == \
        {"lane-math-32", "warp-mask-32bit"}
