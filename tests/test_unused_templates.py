"""Hazards inside templates nothing in the project instantiates (issue 34): an info saying so, where the project's
sources name the template nowhere but in its own definition; a used template, a non-template function, a header
no translation unit includes, and a template any other text names keep their warnings and errors.

tests/fixtures/false-alarms/unused-templates/ is a whole small program (its Makefile makes the folder the project):
main.cu calls `warp_sum` and `Exchange<T>::gather`, never `warp_max` nor `scatter`."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hipport import project_sources
from test_audit_false_alarms import FLAGGED, findings_of

ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path(__file__).resolve().parent / "fixtures" / "false-alarms" / "unused-templates"
_ANNOTATION = re.compile(r"//\s*(expect|ok):\s*([a-z0-9-]+)")


@pytest.fixture(autouse=True)
def _fresh_project_reads():
    project_sources.forget()  # the tests rewrite projects within one process
    yield
    project_sources.forget()


def _flagged(path: Path) -> dict[tuple[int, str], str]:
    return {(f.line, f.rule_id): f.severity for f in findings_of(path) if f.severity in FLAGGED}


@pytest.mark.parametrize("name", ["warp_ops.h", "main.cu"])
def test_unused_templates_are_infos_and_used_code_keeps_its_findings(name):
    path = FOLDER / name
    marks = [(n, kind, rule) for n, line in enumerate(path.read_text().splitlines(), 1)
             for kind, rule in _ANNOTATION.findall(line)]
    flagged = _flagged(path)
    assert [f"{n}: {rule}" for n, kind, rule in marks if kind == "expect" and (n, rule) not in flagged] == []
    assert [f"{n}: {rule}" for n, kind, rule in marks if kind == "ok" and (n, rule) in flagged] == []


def test_the_info_names_the_template_and_the_project():
    infos = {(f.line, f.rule_id): f.message for f in findings_of(FOLDER / "warp_ops.h") if f.severity == "info"}
    assert infos[16, "warp-loop-32"].endswith(
        "(in `warp_max`, a template nothing under `unused-templates/` uses: never compiled)")
    assert "(in `scatter`," in infos[42, "warp-mask-32bit"]


def _copy(tmp_path: Path, *names: str) -> Path:
    for name in ("Makefile", "warp_ops.h", *names):
        shutil.copy(FOLDER / name, tmp_path / name)
    return tmp_path / "warp_ops.h"


_UNUSED = {(16, "warp-loop-32"), (41, "lane-math-32"), (42, "warp-mask-32bit")}


def test_a_header_no_translation_unit_includes_keeps_its_warnings(tmp_path):
    # A library's header: its users instantiate the templates.
    header = _copy(tmp_path)
    assert _UNUSED <= set(_flagged(header))


@pytest.mark.parametrize("use, kept", [
    ("auto *pick = &warp_max<float>;\n", {(16, "warp-loop-32")}),                  # its address taken
    ("template __device__ float warp_max<float>(float);\n", {(16, "warp-loop-32")}),  # explicit instantiation
    ("template struct Exchange<int>;\n", {(41, "lane-math-32"), (42, "warp-mask-32bit")}),  # every member
    ("#define SCATTER(e, v) (e).scatter(v)\n", {(41, "lane-math-32"), (42, "warp-mask-32bit")}),  # a macro body
    ("__device__ float warp_max(float v, int) { return warp_max<float>(v); }\n",  # a plain function's call
     {(16, "warp-loop-32")}),
    ("template <typename T>\n__device__ T warp_max(T v, T w) {\n  return v > w ? v : w;\n}\n", set()),  # a copy
])
def test_any_other_mention_counts_as_a_use(tmp_path, use, kept):
    header = _copy(tmp_path, "main.cu")
    (tmp_path / "more.cu").write_text('#include "warp_ops.h"\n' + use)
    flagged = set(_flagged(header))
    assert kept <= flagged
    assert not (_UNUSED - kept) & flagged  # the others are still unused


def _audit_cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--rocm-version", "7.2", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_cached_result_that_asked_the_project_is_redone_when_the_project_changes(tmp_path):
    # Each run is a new process, as the pre-commit hook runs it. The header's audit asked whether anything names
    # `warp_max` (no: an info); once main.cu calls it, the cached result is stale though the header is unchanged.
    for f in FOLDER.iterdir():
        shutil.copy(f, tmp_path / f.name)
    cache = tmp_path / "cache"
    first = _audit_cli(tmp_path, "warp_ops.h", "--cache-dir", cache)
    assert first.returncode == 1, first.stderr
    assert "warp_ops.h:16:21: info warp-loop-32" in first.stdout
    again = _audit_cli(tmp_path, "warp_ops.h", "--cache-dir", cache)
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)
    main = tmp_path / "main.cu"
    main.write_text(main.read_text() + "__global__ void max_kernel(float *o) { o[0] = warp_max(o[0]); }\n")
    later = _audit_cli(tmp_path, "warp_ops.h", "--cache-dir", cache)
    assert later.returncode == 1, later.stderr
    assert "warp_ops.h:16:21: warning warp-loop-32" in later.stdout


def test_a_file_whose_audit_asked_nothing_of_the_project_keeps_its_cache_entry_plain(tmp_path):
    # No finding in a template: the entry holds the findings alone, and no walk of the project is needed to use it.
    (tmp_path / "Makefile").write_text("all:\n")
    (tmp_path / "k.cu").write_text("template <typename T> __global__ void k(T *o) { o[threadIdx.x] = 0; }\n")
    cache = tmp_path / "cache"
    run = _audit_cli(tmp_path, "k.cu", "--cache-dir", cache)
    assert run.returncode == 0, run.stderr
    entries = [p for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".")]
    values = [pickle.loads(p.read_bytes()) for p in entries]
    assert values and not any(isinstance(v, tuple) and v and v[0] == "project" for v in values)


def test_the_project_is_the_outermost_folder_with_a_build_file(tmp_path):
    (tmp_path / "programs" / "a" / "sub").mkdir(parents=True)
    (tmp_path / "programs" / "a" / "Makefile").write_text("all:\n")
    (tmp_path / "programs" / "a" / "sub" / "Makefile").write_text("all:\n")
    file = tmp_path / "programs" / "a" / "sub" / "k.cu"
    assert project_sources.project_root(str(file), str(tmp_path)) == str(tmp_path / "programs" / "a")
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    assert project_sources.project_root(str(file), str(tmp_path)) == str(tmp_path)
    # Without a build file anywhere up to the top, the top.
    (tmp_path / "CMakeLists.txt").unlink()
    other = tmp_path / "loose" / "k.cu"
    assert project_sources.project_root(str(other), str(tmp_path)) == str(tmp_path)


def test_what_the_compiler_instantiates_is_what_stays_reported():
    # ROCm 7.2's 64-bit-mask static_assert fires in warp_sum (line 9), gather (36) and the non-template warp_min
    # (24), and not in warp_max (17) nor scatter (44): clang checks a template's calls where it is instantiated.
    from hipcc import real_compile

    r = real_compile(FOLDER / "main.cu", "7.2", ("gfx942",), "-include", "hip/hip_runtime.h")
    assert r.returncode != 0
    requested = set(re.findall(r"warp_ops\.h:(\d+):\d+: note: in instantiation", r.stderr))
    assert requested == {"9", "24", "36"}, r.stderr[-3000:]


def test_another_program_that_includes_the_header_is_part_of_the_project(tmp_path):
    # HeCBench's layout: programs side by side, one reading another's header through its Makefile's `-I`.
    from hipport.audit import AuditOptions, audit_source

    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir(), other.mkdir()
    for name in ("Makefile", "warp_ops.h", "main.cu"):
        shutil.copy(FOLDER / name, mine / name)
    (other / "Makefile").write_text("main: main.cu\n\tnvcc -I../mine -o main main.cu\n")
    (other / "main.cu").write_text('#include "warp_ops.h"\n__global__ void k(float *p) { p[0] = warp_max(p[0]); }\n')
    header = mine / "warp_ops.h"
    options = AuditOptions(rocm_version=(7, 2), project_dir=str(tmp_path))

    def flagged():
        return {(f.line, f.rule_id) for f in audit_source(header.read_bytes(), str(header), options)
                if f.severity in FLAGGED}

    assert (16, "warp-loop-32") in flagged()           # other/main.cu instantiates warp_max
    assert {(41, "lane-math-32"), (42, "warp-mask-32bit")}.isdisjoint(flagged())  # scatter: still nobody's
    (other / "Makefile").write_text("main: main.cu\n\tnvcc -o main main.cu\n")  # no longer reaches mine/
    project_sources.forget()
    assert (16, "warp-loop-32") not in flagged()
