"""Issue 24: the rough edges a new user hit, each kept as a regression test (the defect's number in the name)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import stat

import pytest
from click.testing import CliRunner

from hipport.cli import main


def _ctypes_call_interrupted_by_sigint() -> None:
    """What a Ctrl-C landing inside a libclang call looks like: the handler raises while ctypes converts an
    argument, and ctypes hands back ArgumentError (a plain Exception) in its place."""
    class Arg:
        @classmethod
        def from_param(cls, value):
            os.kill(os.getpid(), signal.SIGINT)
            return value

    fn = ctypes.CDLL(None).abs
    fn.argtypes = [Arg]
    fn.restype = ctypes.c_int
    fn(1)


def test_1_ctrl_c_inside_a_ctypes_call_exits_130_not_internal_error(tmp_path, monkeypatch):
    import hipport.convert.runner as runner

    def engine(*args, **kwargs):
        _ctypes_call_interrupted_by_sigint()
        raise AssertionError("the signal did not arrive")

    monkeypatch.setattr(runner, "convert_source", engine)
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_bytes(b"void f() { cudaFree(0); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path), "--no-cache", "-j1", "--no-hipify-perl"])
    assert result.exit_code == 130, result.output
    assert "internal error" not in result.output
    assert (tmp_path / "b.cu").read_bytes() == b"void f() { cudaFree(0); }\n"


def test_1_a_real_engine_bug_still_costs_one_file(tmp_path, monkeypatch):
    import hipport.convert.runner as runner

    def engine(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(runner, "convert_source", engine)
    (tmp_path / "a.cu").write_bytes(b"void f() { cudaFree(0); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path), "--no-cache", "-j1", "--no-hipify-perl"])
    assert result.exit_code == 3, result.output
    assert "internal error (ValueError: a bug)" in result.output


BAD_NAME = os.fsdecode(b"bad\xff.cu")
BAD_SOURCE = b"#include <cuda_runtime.h>\nint main(){cudaFree(0);}\n"
# One finding on every target, so every report format names the file (not a `*_sync` call with an all-lanes
# mask: convert rewrites that itself, so it is converted work, not a finding).
# (A lane of 32 beside a shuffle: without one, groups of 32 threads are right on AMD and only an info.)
HAZARD = b"#include <cuda_runtime.h>\n__global__ void k(int *o) { o[0] = __shfl(1, threadIdx.x & 31); }\n"


def test_2_a_file_name_that_is_not_utf8_diffs_with_its_own_bytes(tmp_path, monkeypatch):
    (tmp_path / BAD_NAME).write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", ".", "--diff", "--no-hipify-perl"])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert b"--- a/bad\xff.cu\n+++ b/bad\xff.cu\n" in result.stdout_bytes
    assert b"+#include <hip/hip_runtime.h>\n" in result.stdout_bytes


def test_9_the_diff_of_an_absolute_path_has_a_and_b_prefixes(tmp_path):
    (tmp_path / "w.cu").write_bytes(BAD_SOURCE)
    result = CliRunner().invoke(main, ["convert", str(tmp_path / "w.cu"), "--diff", "--no-hipify-perl"])
    assert result.exit_code == 0, result.output
    assert f"--- a/{tmp_path}/w.cu\n+++ b/{tmp_path}/w.cu\n" in result.output


@pytest.mark.parametrize("fmt", ["json", "html", "sarif", "markdown", "text"])
def test_2_audit_reports_name_a_file_whose_name_is_not_utf8(tmp_path, monkeypatch, fmt):
    (tmp_path / BAD_NAME).write_bytes(HAZARD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["audit", ".", "-v", "--rocm-version", "5.2", "--report", fmt,
                                       "-o", "out.report"])
    assert result.exit_code == 1, result.output  # the finding fails the run; no traceback (that exits 1 too)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "auditing bad\\xff.cu\n" in result.output
    text = (tmp_path / "out.report").read_bytes().decode("utf-8")  # every format stays valid UTF-8
    if fmt == "json":
        assert [f["path"] for f in json.loads(text)["files"]] == ["bad\\xff.cu"]
    elif fmt == "sarif":
        assert "bad\\\\xff.cu" in text  # the backslash escaped once more inside a JSON string
    else:
        assert "bad\\xff.cu" in text


def test_2_and_9_verbose_convert_names_each_file_on_one_line(tmp_path, monkeypatch):
    (tmp_path / BAD_NAME).write_bytes(BAD_SOURCE)
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    (deep / "w.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", ".", "-v", "--check", "--no-hipify-perl"], terminal_width=80)
    assert result.exit_code == 1, result.output
    assert "would change: bad\\xff.cu\n" in result.output
    assert f"would change: {'d' * 90}/w.cu\n" in result.output


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_3_convert_to_an_output_directory_keeps_each_source_mode(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name, mode in (("a.cu", 0o664), ("b.cu", 0o755), ("c.cu", 0o640)):
        (src / name).write_bytes(BAD_SOURCE)
        os.chmod(src / name, mode)
    result = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out"), "-q", "--no-hipify-perl"])
    assert result.exit_code == 0, result.output
    assert [_mode(tmp_path / "out" / n) for n in ("a.cu", "b.cu", "c.cu")] == [0o664, 0o755, 0o640]


def test_3_new_files_follow_the_umask_baseline_and_imported_rules(tmp_path, monkeypatch):
    from hipify_perl_sample import SAMPLE

    old = os.umask(0o002)
    try:
        import hipport.files as files
        monkeypatch.setattr(files._Umask, "value", None)  # read again under this umask
        monkeypatch.chdir(tmp_path)
        (tmp_path / "h.cu").write_bytes(HAZARD)
        result = CliRunner().invoke(main, ["audit", "h.cu", "--rocm-version", "5.2", "--write-baseline", "base.json"])
        assert result.exit_code == 0, result.output
        assert _mode(tmp_path / "base.json") == 0o664
        (tmp_path / "hipify-perl").write_text(SAMPLE)
        result = CliRunner().invoke(main, ["rules", "import-hipify-perl", "hipify-perl", "-o", "rules"])
        assert result.exit_code == 0, result.output
        assert sorted(_mode(p) for p in (tmp_path / "rules").iterdir()) == [0o664, 0o664]
        (tmp_path / "proj").mkdir()
        result = CliRunner().invoke(main, ["init", "proj"])
        written = [p for p in (tmp_path / "proj").rglob("*") if p.is_file()]
        assert result.exit_code == 0 and written, result.output
        assert {_mode(p) for p in written} == {0o664}
    finally:
        os.umask(old)


LAUNCH = b"#include <cuda_runtime.h>\n__global__ void k() {}\nvoid f() { k<<<1, 32>>>(); }\n"


def test_5_settings_are_found_from_the_input_not_the_current_directory(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".hipport.toml").write_text('launch-syntax = "hip"\n')
    (proj / "w.cu").write_bytes(LAUNCH)
    (tmp_path / ".hipport.toml").write_text('launch-syntax = "cuda"\n')  # the current folder's: not the input's
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "proj/w.cu", "--stdout", "--no-hipify-perl"])
    assert result.exit_code == 0, result.output
    assert "hipLaunchKernelGGL(k, dim3(1), dim3(32), 0, 0);" in result.output
    # audit too: proj's settings are read (a bad value in them is named), the current folder's are not.
    (proj / ".hipport.toml").write_text('launch-syntax = "neither"\n')
    (proj / "h.cu").write_bytes(HAZARD)
    result = CliRunner().invoke(main, ["audit", "proj/h.cu"])
    assert result.exit_code == 2, result.output
    assert f"{proj / '.hipport.toml'}: `launch-syntax` must be" in result.output


def test_5_inputs_beside_different_settings_are_one_clear_error(tmp_path, monkeypatch):
    for name, syntax in (("a", "hip"), ("b", "cuda")):
        (tmp_path / name).mkdir()
        (tmp_path / name / ".hipport.toml").write_text(f'launch-syntax = "{syntax}"\n')
        (tmp_path / name / "w.cu").write_bytes(LAUNCH)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "a", "b", "--check", "--no-hipify-perl"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "different settings" in result.output and "--config" in result.output
    assert (tmp_path / "a" / "w.cu").read_bytes() == LAUNCH


def test_5_init_of_a_subfolder_writes_the_hook_at_the_repository_root_and_the_hook_finds_the_settings(
        tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    (gpu / "h.cu").write_bytes(HAZARD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init", "gpu", "--rocm-version", "6.2"])
    assert result.exit_code == 0, result.output
    assert not (gpu / ".pre-commit-config.yaml").exists()
    hook = (tmp_path / ".pre-commit-config.yaml").read_text()
    assert r"files: ^gpu/.*\.(cu|" in hook
    # What pre-commit runs, from the repository root: gpu's settings and baseline apply.
    result = CliRunner().invoke(main, ["audit", "gpu/h.cu"])
    assert result.exit_code == 0, result.output
    assert "1 in the baseline not shown" in result.output


def test_4_a_folder_reached_through_a_symlink_is_named_not_skipped_in_silence(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "x.cu").write_bytes(b"#include <cuda_runtime.h>\n")
    (tmp_path / "t" / "ld").symlink_to("../o")
    (tmp_path / "t" / "in").mkdir()
    (tmp_path / "t" / "again").symlink_to("in")  # inside the tree: its files are reached anyway, nothing to say
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "t", "-v", "--no-hipify-perl"])
    assert result.exit_code == 3, result.output
    assert (f"t/ld: symlink to the directory {tmp_path / 'o'}, outside the input tree; not followed without "
            "--follow-symlinks") in result.output
    assert "again" not in result.output
    result = CliRunner().invoke(main, ["convert", "t", "--follow-symlinks", "--check", "--no-hipify-perl"])
    assert result.exit_code == 1, result.output  # followed: o/x.cu is converted


def test_6_a_launch_left_in_cuda_syntax_is_said(tmp_path):
    (tmp_path / "w.cu").write_bytes(b"#include <cuda_runtime.h>\n__global__ void k() {}\nvoid f() { k<<<1>>>(); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path / "w.cu"), "--check", "-v", "--launch-syntax", "hip",
                                       "--no-hipify-perl"])
    assert result.exit_code == 1, result.output
    assert "w.cu:3:13: warning launch-not-rewritten: `<<<...>>>` kept" in result.output
    result = CliRunner().invoke(main, ["rules", "show", "launch-not-rewritten"])
    assert result.exit_code == 0 and "CUDA syntax" in result.output, result.output


def test_7_cuda_malloc_host_with_flags_is_not_a_call_of_unknown_shape(tmp_path):
    (tmp_path / "w.cu").write_bytes(b"#include <cuda_runtime.h>\nvoid f(size_t n) { float *p; "
                                    b"cudaMallocHost(&p, n, cudaHostAllocWriteCombined); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path / "w.cu"), "-v", "--no-hipify-perl"])
    assert result.exit_code == 0, result.output
    assert "call-shape-unknown" not in result.output and "by hand" not in result.output
    assert b"hipHostMalloc(&p, n, hipHostMallocWriteCombined);" in (tmp_path / "w.cu").read_bytes()


@pytest.mark.parametrize("setting, says", [
    ('rocm-version = "abc"', '`rocm-version`: `abc` is not a ROCm release'),
    ('offload-arch = "sm_80"', "`offload-arch`: `sm_80` is not an AMD GPU target"),
    ('offload-arch = ["gfx90a", "sm_80"]', "`offload-arch`: `sm_80` is not an AMD GPU target"),
])
@pytest.mark.parametrize("command", ["convert", "audit"])
def test_9_a_bad_setting_names_the_settings_file(tmp_path, monkeypatch, setting, says, command):
    (tmp_path / ".hipport.toml").write_text(setting + "\n")
    (tmp_path / "a.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [command, "a.cu"])
    assert result.exit_code == 2, result.output
    assert result.output == f"hipport: error: {tmp_path / '.hipport.toml'}: {says}" + result.output.split(says)[1]
    assert len(result.output.splitlines()) == 1


def test_9_write_baseline_says_one_finding(tmp_path, monkeypatch):
    (tmp_path / "h.cu").write_bytes(HAZARD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["audit", "h.cu", "--write-baseline", "base.json"])
    assert result.exit_code == 0, result.output
    assert "wrote 1 finding to base.json" in result.output


def _import_graph() -> dict[str, set[str]]:
    """Module -> the hipport modules it imports, wherever the import stands (lazy and TYPE_CHECKING ones too);
    `from hipport.audit import helpers` is an edge to the submodule, not to the package."""
    import ast

    from test_layering import PACKAGE, _module_name

    modules = {_module_name(p, PACKAGE): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add(sub if sub in modules else node.module)
        graph[name] = {t for t in edges if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_10_no_import_circle_lazy_and_type_checking_imports_included():
    graph = _import_graph()
    assert graph["hipport.audit.helpers"] and graph["hipport.convert.usernames"]  # the reader sees imports
    assert _cycles(graph) == []


def test_10_the_circle_check_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_8_lexing_a_one_line_file_holds_no_second_copy_of_its_tokens():
    """Python's own peak while converting a one-line 1 MB table stays under 10x the file (it was 15x and more:
    every token struct copied twice over). libclang's memory is outside this count; benchmarks/run.py reports
    the whole process's (peak RSS / input size)."""
    import tracemalloc

    from hipport.convert import ConvertOptions
    from hipport.convert.engine import convert_source
    from hipport.rules import load_rules

    rules = load_rules([])
    values = ", ".join(f"{i % 1000}.{i % 7}" for i in range(1024 * 1024 // 7))
    src = (b"#include <cuda_runtime.h>\n__constant__ float table[] = {" + values.encode()
           + b"}; void f() { cudaFree(0); }\n")
    tracemalloc.start()
    try:
        result = convert_source(src, rules, ConvertOptions(), "one-line.cu")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.after.endswith(b"void f() { hipFree(0); }\n")
    assert peak < 10 * len(src), f"{peak / len(src):.1f}x the input"


def test_9_rules_show_suggests_each_name_once():
    result = CliRunner().invoke(main, ["rules", "show", "cudaMaloc"])
    assert result.exit_code == 1, result.output
    suggested = result.output.split("did you mean ")[1].rstrip("?\n").split(", ")
    assert "cudaMallocHost" in suggested and len(suggested) == len(set(suggested))


def test_9_the_html_chart_has_room_for_the_longest_rule_id(tmp_path, monkeypatch):
    import re

    # `__match_any_sync` has no HIP form before ROCm 7.0: a `warp-builtin-unavailable` row, the longest id.
    (tmp_path / "h.cu").write_bytes(b"#include <cuda_runtime.h>\n__global__ void k(unsigned *m, int v) "
                                    b"{ *m = __match_any_sync(0xffffffffffffffffull, v); }\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["audit", "h.cu", "--rocm-version", "5.2", "--report", "html", "-o", "r.html"])
    assert result.exit_code in (0, 1), result.output
    chart = (tmp_path / "r.html").read_text().split('aria-labelledby="chart-rules-title"')[1].split("</svg>")[0]
    labels = re.findall(r'<text x="(\d+)" y="\d+" text-anchor="end" class="lbl">([^<]+)</text>', chart)
    assert "warp-builtin-unavailable" in {rule for _, rule in labels}
    for x, rule in labels:
        assert int(x) >= 7 * len(rule), (x, rule)  # right-aligned at x: the text needs x pixels to its left


@pytest.mark.parametrize("setting, says", [
    ('rules = ["nodir"]', "{d}/nodir: rule folder not found (the `rules` setting of {d}/.hipport.toml)"),
    ('hipify-perl = "nowhere"', "{d}/nowhere: hipify-perl not found (no such file) (the `hipify-perl` setting of "
                                "{d}/.hipport.toml)"),
])
@pytest.mark.parametrize("command", ["convert", "audit"])
def test_9_a_missing_rules_folder_stops_audit_as_it_stops_convert(tmp_path, monkeypatch, setting, says, command):
    (tmp_path / ".hipport.toml").write_text(setting + "\n")
    (tmp_path / "a.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [command, "a.cu"])
    assert result.exit_code == 2, result.output
    assert result.output == f"hipport: error: {says.format(d=tmp_path)}\n"
    assert (tmp_path / "a.cu").read_bytes() == BAD_SOURCE


def test_9_convert_rules_option_names_a_missing_folder(tmp_path, monkeypatch):
    (tmp_path / "a.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "a.cu", "--rules", "nodir", "--no-hipify-perl"])
    assert result.exit_code == 2, result.output
    assert result.output == "hipport: error: nodir: rule folder not found (--rules)\n"


def test_9_compiler_errors_of_a_file_name_with_a_newline_name_that_unit(tmp_path):
    from hipport.convert.verify import load_causes, parse_errors

    odd, plain = tmp_path / "a\nb.cu", tmp_path / "b.cu"
    shown = {str(odd): "src/a\nb.cu", str(plain): "src/b.cu"}
    out = f"{odd}:2:13: error: use of undeclared identifier 'x'\n1 error generated.\n"
    errors = parse_errors(out, tmp_path, shown, tmp_path / "copy", load_causes(), {})
    assert [(e.path, e.line, e.col, e.message) for e in errors] == [
        ("src/a\nb.cu", 2, 13, "use of undeclared identifier 'x'")]


def test_9_verify_compiles_and_names_a_unit_whose_name_holds_a_newline(tmp_path):
    import subprocess
    import sys

    from hipcc import HIPCC

    if HIPCC is None:
        pytest.skip("needs hipcc")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.h").write_bytes(b"#pragma once\nint helper();\n")
    (tmp_path / "a\nb.cu").write_bytes(b'#include <cuda_runtime.h>\n#include "sub/h.h"\n'
                                       b"int main() { helper(); undefined_thing(); cudaFree(0); }\n")
    (tmp_path / "b.cu").write_bytes(b'#include <cuda_runtime.h>\n#include "sub/h.h"\n'
                                    b"int main() { helper(); cudaFree(0); }\n")
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", ".", "--check", "--verify", "-v",
                        "--no-hipify-perl", "--offload-arch", "gfx90a"], cwd=tmp_path, capture_output=True)
    err = r.stderr.decode()
    assert r.returncode == 4, err
    assert "1 of 2 do not compile" in err, err
    assert ("  FAILED a\\nb.cu\n    a\\nb.cu:3:24: error: use of undeclared identifier 'undefined_thing'\n"
            in err), err
    assert "  ok b.cu\n" in err and "Traceback" not in err


def test_9_no_deprecated_click_get_text_stream():
    """Click 9 removes `click.get_text_stream`; `sys.stdout`/`sys.stderr` are what it returned."""
    import pathlib

    import hipport

    root = pathlib.Path(hipport.__file__).parent
    users = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if "get_text_stream(" in p.read_text(encoding="utf-8")]
    assert users == []


def test_9_check_quiet_names_each_file_that_would_change(tmp_path, monkeypatch):
    (tmp_path / "a.cu").write_bytes(BAD_SOURCE)
    (tmp_path / "b.cpp").write_bytes(b"int plain;\n")  # a .cu file would get the runtime include nvcc gave it
    (tmp_path / "c.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", ".", "--check", "-q", "--no-hipify-perl", "--no-cache"])
    assert result.exit_code == 1, result.output
    assert result.stdout == "a.cu\nc.cu\n"
    assert result.stderr == ""
    assert (tmp_path / "a.cu").read_bytes() == BAD_SOURCE
    result = CliRunner().invoke(main, ["convert", "b.cpp", "--check", "-q", "--no-hipify-perl"])
    assert result.exit_code == 0 and result.output == "", result.output


@pytest.mark.parametrize("args, setting, installed, says", [
    (["--rocm-version", "6.2"], 'rocm-version = "6.0"\n', (5, 2), "targeting ROCm 6.2 (--rocm-version)"),
    ([], 'rocm-version = "6.0"\n', (5, 2), "targeting ROCm 6.0 (the `rocm-version` setting of {d}/.hipport.toml)"),
    ([], "", (5, 2), "targeting ROCm 5.2 (the installed HIP)"),
    ([], "", None, "targeting ROCm 7.2 (no HIP installed: the newest release hipport knows)"),
])
def test_9_the_convert_summary_says_which_rocm_release_it_targeted_and_why(tmp_path, monkeypatch, args, setting,
                                                                           installed, says):
    import hipport.rocm as rocm

    monkeypatch.setattr(rocm, "detect_installed", lambda: installed)
    (tmp_path / ".hipport.toml").write_text(setting)
    (tmp_path / "a.cu").write_bytes(BAD_SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "a.cu", "--check", "--no-hipify-perl", "--no-cache", *args])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[:2] == ["hipport: 1 file scanned, 1 would change, 2 references converted",
                                             "  " + says.format(d=tmp_path)]
    quiet = CliRunner().invoke(main, ["convert", "a.cu", "--check", "-q", "--no-hipify-perl", "--no-cache", *args])
    assert quiet.exit_code == 1 and "targeting" not in quiet.output, quiet.output


def test_9_every_fixture_finding_message_is_at_most_300_characters(rules):
    """The project's standard for a message, over every audit and convert finding of the fixtures (with each
    fixture's own options and at ROCm 5.2, where the most is missing)."""
    from pathlib import Path

    from test_audit import options_of
    from test_fixtures_convert import options_for

    from hipport.audit import AuditOptions, audit_source
    from hipport.convert import ConvertOptions, convert_source

    fixtures = Path(__file__).resolve().parent / "fixtures"
    too_long = []
    for path in sorted([*(fixtures / "audit").glob("*.cu"), *(fixtures / "convert").glob("*.cu")]):
        src = path.read_bytes()
        audits = [options_of(src.decode("latin-1")), AuditOptions(rocm_version=(5, 2))]
        converts = [options_for(path) if path.parent.name == "convert" else ConvertOptions(),
                    ConvertOptions(rocm_version=(5, 2))]
        findings = [f for o in audits for f in audit_source(src, path.name, o)]
        findings += [f for o in converts for f in convert_source(src, rules, o, path.name).findings]
        too_long += [(path.name, f.rule_id, len(f.message)) for f in findings if len(f.message) > 300]
    assert sorted(set(too_long)) == []


def test_8_a_file_lexed_in_pieces_gives_the_tokens_of_one_lex():
    """Big files are lexed a piece at a time (scan.lex) to bound libclang's memory; a comment, string or raw
    string cut by a piece's end must come out whole, so tiny pieces give exactly the tokens of one lex."""
    from hipport.scan import lex

    tricky = (b'/* a block comment that runs over several pieces ' + b"x" * 300 + b' */\n'
              b'const char* s = "a string ' + b"y" * 200 + b'";\n'
              b'const char* r = R"delim(raw ) " still raw ' + b"z" * 150 + b')delim";\n'
              b'#define LONG(a, b) \\\n  ((a) + \\\n   (b))\n'
              b'// a line comment ' + b"w" * 250 + b'\n'
              b'int x = 0x1f + 1e-3f + \'c\' + u8"u"[0];\n' * 20 + b"/* never closed")
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples" / "cuda"
    sources = [tricky, *(p.read_bytes() for p in sorted(examples.rglob("*.cu")))]
    for src in sources:
        whole = lex(src)
        pieces = lex(src, piece=257, margin=64)  # pieces smaller than many of the tokens above
        assert (pieces.kinds, pieces.starts, pieces.ends) == (whole.kinds, whole.starts, whole.ends)
