"""`hipport audit --verify`: the audited files converted into a temporary copy and compiled with hipcc, the results
in the text, JSON, HTML and Markdown reports, and the exit status (4 when a unit does not compile; 3 wins, 4 wins
over the findings' 1). The real toolchain where installed (need(): skipped locally, failing under CI=true), and
test_verify's fake `hipcc` on PATH for what a test machine cannot show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import require_hipcc
from test_reports import HOSTILE_NAME, Dom
from test_verify import BAD, GOOD, UTIL, _path_without_hipcc, fake_bin  # noqa: F401 (a fixture)

from hipport.convert.verify import Cause, CompileError, UnitResult, VerifyResult
from hipport.report import render
from hipport.report.model import AuditReport, FileReport

ROOT = Path(__file__).resolve().parents[1]


def hipport(*args, env=None, cwd=None):
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          env={**base, **(env or {})}, cwd=cwd)


@pytest.fixture
def tree(tmp_path):
    """good.cu (its header found through -I) compiles; bad.cu, converted for ROCm 7.0, keeps `__shfl_down_sync`,
    which HIP 5.2 lacks."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "src" / "good.cu").write_bytes(GOOD)
    (root / "include" / "util.cuh").write_bytes(UTIL)
    (root / "src" / "bad.cu").write_bytes(BAD)
    return root


def _snapshot(root: Path) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


# -- the real toolchain ----------------------------------------------------------------------------------------

def test_real_hipcc_results_in_every_report(tree, tmp_path):
    require_hipcc()
    before = _snapshot(tree)
    out = tmp_path / "out"
    r = hipport("audit", tree, "--verify", "-I", tree / "include", "--rocm-version", "7.0", "--offload-arch", "gfx90a",
                "--report", "text", "--report", "json", "--report", "html", "--report", "markdown", "-o", f"{out}/",
                "--no-cache")
    assert r.returncode == 4, r.stderr  # the findings' 1 is outranked by a unit that does not compile
    assert _snapshot(tree) == before  # converted into a temporary copy only
    bad, good = str(tree / "src" / "bad.cu"), str(tree / "src" / "good.cu")

    text = (out / "hipport-report.txt").read_text()
    assert "verify: 2 translation units" in text and "1 of 2 do not compile" in text
    assert f"FAILED {bad}\n    {bad}:4:8: error: use of undeclared identifier '__shfl_down_sync'" in text
    assert "cause: HIP 5.2 has no `__shfl_down_sync`" in text
    assert f"FAILED {good}" not in text

    data = json.loads((out / "hipport-report.json").read_text())
    v = data["verify"]
    # Debian's hipcc links ROCm's device libraries for gfx90a: the units are compiled with code generation
    assert v["compiler"] == {"name": "hipcc", "hip_version": "5.2", "platform": "amd", "code_generation": True}
    assert v["targets"] == ["gfx90a"] and v["units"] == 2 and v["units_failed"] == 1
    results = {u["path"]: u for u in v["results"]}
    assert set(results) == {bad, good}
    assert results[good] == {"path": good, "ok": True, "errors": [], "more_errors": 0}
    first = results[bad]["errors"][0]
    assert results[bad]["ok"] is False
    assert (first["path"], first["line"], first["column"]) == (bad, 4, 8)
    assert first["message"] == "use of undeclared identifier '__shfl_down_sync'"
    assert first["cause"]["id"] == "warp-sync-before-6.2" and "--rocm-version 5.2" in first["cause"]["fix"]
    compiles = {f["path"]: f["compiles"] for f in data["files"]}
    assert compiles == {bad: False, good: True, str(tree / "include" / "util.cuh"): None}  # a header: no unit

    dom = Dom((out / "hipport-report.html").read_text())
    assert dom.text_of("verify-units") == "2" and dom.text_of("verify-failed") == "1"
    failed = [a["data-unit"] for t, a in dom.tags if t == "div" and "unit" in a.get("class", "").split()]
    assert failed == [bad]
    assert sum(1 for t, a in dom.tags if t == "span" and a.get("data-verify") == "failed") == 2  # table + section
    assert any(t == "span" and a.get("data-verify") == "ok" for t, a in dom.tags)

    md = (out / "hipport-report.md").read_text()
    summary = [line for line in md.splitlines() if line.startswith("**Does it build?**")]
    assert len(summary) == 1 and "**1 of 2 translation units do not compile**" in summary[0]
    assert f"- {bad}: {bad}:4:8: use of undeclared identifier '__shfl_down_sync'. Cause: HIP 5.2" in md
    assert f"- {good}" not in md


def test_real_hipcc_settings_include_dirs_and_release_that_builds(tree):
    """Converted for the installed release with the settings' `include-dirs`: both compile, the audit's own exit
    status (1: the findings) stands."""
    require_hipcc()
    (tree / ".hipport.toml").write_text('include-dirs = ["include"]\noffload-arch = ["gfx90a"]\n')
    r = hipport("audit", ".", "--verify", "--rocm-version", "5.2", "--no-cache", cwd=tree)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "verify: 2 translation units" in r.stdout and "all 2 compile" in r.stdout


# -- fake toolchains --------------------------------------------------------------------------------------------

def test_without_hipcc_one_line_exit_2_and_no_report(tree, tmp_path):
    r = hipport("audit", tree, "--verify", "--report", "json", "-o", tmp_path / "r.json",
                env={"PATH": _path_without_hipcc(tmp_path)})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--verify needs hipcc" in lines[0]
    assert r.stdout == "" and not (tmp_path / "r.json").exists()


def test_fake_hipcc_exit_codes_and_include_dirs(tree, fake_bin, tmp_path):
    """4 when a unit fails (over the findings' 1), 3 when a file could not be read (over 4), 0 when everything
    compiles and nothing is found; -I reaches hipcc, pointing into the converted copy."""
    log = tmp_path / "log.jsonl"
    env = {"PATH": str(fake_bin), "FAKE_HIPCC_LOG": str(log)}
    (tree / "src" / "bad.cu").write_bytes(b"__global__ void r() { BREAK(__ballot_sync); }\n")
    r = hipport("audit", tree, "--verify", "--offload-arch", "gfx90a,gfx942", "-I", tree / "include", "--no-cache",
                env=env)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "gfx942 skipped (not known to the installed clang)" in r.stdout
    assert "cause: user code defines `atomicMax`, which HIP already declares" in r.stdout
    compiled = [json.loads(line)["args"] for line in log.read_text().splitlines()]
    compiled = [a for a in compiled if "-###" not in a and "--version" not in a]
    assert sorted(Path(a[-1]).name for a in compiled) == ["bad.cu", "good.cu"]
    for args in compiled:
        assert "-fsyntax-only" in args and "--offload-arch=gfx90a" in args
        # The copy's root, then the include folder in the converted copy, then as it is.
        copy, *includes = [a[2:] for a in args if a.startswith("-I")]
        assert includes == [f"{copy}/include", str(tree / "include")] and not copy.startswith(str(tree))
        assert not args[-1].startswith(str(tree))  # a temporary copy, never the user's file

    (tree / "src" / "blob.cu").write_bytes(b"\x00\x01binary\x00" * 10)
    r = hipport("audit", tree, "--verify", "--offload-arch", "gfx90a", "--no-cache", env=env)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "1 of 2 do not compile" in r.stdout  # the unreadable file is not compiled; the others are

    (tree / "src" / "blob.cu").unlink()
    (tree / "src" / "bad.cu").unlink()
    (tree / "src" / "good.cu").write_bytes(b"__global__ void k(int* o) { o[threadIdx.x % warpSize] = 1; }\n")
    r = hipport("audit", tree, "--verify", "--offload-arch", "gfx90a", "--no-cache", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "it compiles" in r.stdout


def test_fake_hipcc_quiet_json_to_stdout_and_usage(tree, fake_bin, tmp_path):
    env = {"PATH": str(fake_bin)}
    (tree / "src" / "bad.cu").write_bytes(b"__global__ void r() { BREAK(x); }\n")
    bad = tree / "src" / "bad.cu"
    r = hipport("audit", tree, "--verify", "-q", "--offload-arch", "gfx90a", "--no-cache", env=env)
    assert r.returncode == 4
    assert [line for line in r.stdout.splitlines() if "compile" in line] == [
        f"does not compile: {bad}: {bad}:2:23: use of undeclared identifier 'x'"]
    # JSON on stdout stays JSON: the verify listing goes to stderr when no text report is asked for.
    r = hipport("audit", tree, "--verify", "--report", "json", "--offload-arch", "gfx90a", "--no-cache", env=env)
    assert r.returncode == 4, r.stderr
    data = json.loads(r.stdout)
    assert data["verify"]["units_failed"] == 1 and "1 of 2 do not compile" in r.stderr
    r = hipport("audit", tree, "--verify", "--write-baseline", tmp_path / "b.json", env=env)
    assert r.returncode == 2 and "cannot be combined" in r.stderr
    r = hipport("audit", tree, "--verify", "--offload-arch", "gfx942", env=env)
    assert r.returncode == 2 and "no target the installed hipcc can compile for" in r.stderr


def test_without_verify_the_json_says_null(tree):
    r = hipport("audit", tree, "--report", "json", "-o", "-", "--no-cache")
    data = json.loads(r.stdout)
    assert data["verify"] is None and all(f["compiles"] is None for f in data["files"])


# -- rendering --------------------------------------------------------------------------------------------------

def _report_with(message: str, name: str) -> AuditReport:
    cause = Cause("c-id", None, "the <cause>", "the <fix> `code`")
    failed = UnitResult(name, False, [CompileError(name, 3, 7, message, cause, "the <cause>", "the <fix> `code`")],
                        more=2)
    ok = UnitResult("fine.cu", True)
    files = [FileReport(name, name, 10, 100), FileReport("fine.cu", "fine.cu", 5, 50)]
    return AuditReport(files, {}, ("gfx90a",), "5.2",
                       verify=VerifyResult(("gfx90a",), {"gfx942": "not known"}, [], [failed, ok], (5, 2)))


def test_hostile_errors_are_text_in_html_and_markdown():
    message = "expected ';' </script><script>alert(1)</script> <b>x</b> | {{ y }}"
    report = _report_with(message, HOSTILE_NAME)
    page = render("html", report).decode()
    dom = Dom(page)
    assert sum(1 for t, _ in dom.tags if t == "script") == 1
    assert not any(t in ("b", "i") for t, _ in dom.tags)
    text = "".join(dom.text)
    assert message in text and HOSTILE_NAME in text and "the <cause>" in text
    assert dom.text_of("verify-units") == "2" and dom.text_of("verify-failed") == "1"
    # A unit that does not compile is never folded into the "nothing to convert" list.
    assert not any(t == "li" and a.get("data-path") == HOSTILE_NAME.lower() for t, a in dom.tags)
    md = render("markdown", report).decode()
    assert "<script>" not in md and "<b>" not in md and "&lt;script&gt;" in md
    line = next(x for x in md.splitlines() if x.startswith("- "))
    assert "&#124;" in line and "(+2 more errors)" in line
    data = json.loads(render("json", report))
    assert data["verify"]["results"][0]["errors"][0]["message"] == message
    assert data["verify"]["skipped_targets"] == {"gfx942": "not known"}
    assert [f["compiles"] for f in data["files"]] == [False, True]
    # Every key is documented.
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    v = data["verify"]
    error = v["results"][0]["errors"][0]
    keys = {"verify", "compiles", *v, *v["compiler"], *v["results"][0], *error, *error["cause"]}
    assert sorted(k for k in keys if f"`{k}`" not in doc and f'"{k}"' not in doc) == []
