"""Build files convert with the sources (issue 15): every Makefile and CMake rule has a fixture pair written by
hand (`tests/fixtures/build/<make|cmake>/NAME` and `NAME.hip...`), look-alikes stay as they are, a second run
changes nothing, and the command line covers build files in every mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipport.convert.build import convert_build_text
from hipport.convert.build.rules import load_build_rules, parse_cmake_rules, parse_make_rules
from hipport.convert.context import ConvertOptions
from hipport.files import build_file_kind, collect_sources
from hipport.rules import RuleError

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "build"
OPTIONS = ConvertOptions(offload_arch=("gfx90a", "gfx942"))
KINDS = {"make": ".mk", "cmake": ".cmake"}


def _inputs(kind: str) -> list[Path]:
    ext = KINDS[kind]
    return sorted(p for p in (FIXTURES / kind).glob(f"*{ext}") if not p.name.endswith(f".hip{ext}"))


def _expected(path: Path, kind: str) -> Path:
    ext = KINDS[kind]
    return path.with_name(path.name[: -len(ext)] + ".hip" + ext)


CASES = [(kind, p) for kind in KINDS for p in _inputs(kind)]


def _convert(src: bytes, kind: str, options: ConvertOptions = OPTIONS):
    return convert_build_text(src, kind, options, "fixture")


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}/{p.name}" for k, p in CASES])
def test_fixture_converts_to_its_hand_written_form(kind, path):
    expected = _expected(path, kind)
    result, _fired = _convert(path.read_bytes(), kind)
    want = expected.read_bytes() if expected.exists() else path.read_bytes()
    assert result.after.decode() == want.decode()
    again, _ = _convert(result.after, kind)
    assert again.after == result.after, "a second run changed the output"
    assert not again.conversions, "a second run converted something"
    # the hand-written HIP form is itself left alone
    assert _convert(want, kind)[0].after == want


@pytest.mark.parametrize("kind", list(KINDS))
def test_look_alikes_are_not_touched_nor_reported(kind):
    path = FIXTURES / kind / f"noop{KINDS[kind]}"
    result, fired = _convert(path.read_bytes(), kind)
    assert result.after == path.read_bytes()
    assert not result.findings and not result.conversions and not fired


def _fired_by_fixtures(kind: str) -> dict[str, set[str]]:
    return {p.name: _convert(p.read_bytes(), kind)[1] for p in _inputs(kind)}


def test_every_make_rule_has_its_fixture():
    make_rules, _ = load_build_rules()
    fired = _fired_by_fixtures("make")
    for flag in make_rules.flags:
        name = f"{flag.id}.mk"
        assert name in fired, f"flag rule {flag.id} has no fixture tests/fixtures/build/make/{name}"
        assert flag.id in fired[name], f"{name} does not exercise {flag.id}"
    everything = set().union(*fired.values())
    for lib in make_rules.libraries:
        assert f"lib:{lib}" in everything, f"library -l{lib} is in no fixture"
    for rule in ("compiler", "paths", "arch-variable", "rdc-link"):
        assert rule in fired[f"{rule}.mk"], rule


def test_every_cmake_rule_has_a_fixture():
    _, cmake_rules = load_build_rules()
    everything = set().union(*_fired_by_fixtures("cmake").values())
    expected = {"language", "sources", "separable", "drop-property", "packages"}
    expected |= {f"variable:{n}" for n in cmake_rules.variables}
    expected |= {f"property:{n}" for n in cmake_rules.properties}
    expected |= {f"package:{n}" for n in cmake_rules.packages}
    expected |= {f"target:{n}" for n in cmake_rules.targets}
    expected |= {f"command:{n}" for n in cmake_rules.commands}
    expected |= {f"findcuda:{n}" for n in cmake_rules.findcuda if "target" not in cmake_rules.findcuda[n]}
    expected |= {f"target:{e['target']}" for e in cmake_rules.findcuda.values() if "target" in e}
    assert expected <= everything, sorted(expected - everything)
    drops = [p for p in _inputs("cmake") if p.name == "drop-properties.cmake"][0].read_text()
    assert all(name in drops for name in cmake_rules.drop_properties)


def test_findings_name_the_line_and_say_what_is_left():
    src = b"CC = nvcc\nFLAGS = -O2 \\\n  -lineinfo $(foreach a,$(ARCHS),-gencode arch=compute_$(a),code=sm_$(a))\n"
    result, _ = _convert(src, "make")
    by_rule = {(f.rule_id, f.line) for f in result.findings}
    assert ("build-dropped", 3) in by_rule
    assert ("build-untranslated", 3) in by_rule
    assert all(f.col >= 1 for f in result.findings)
    assert {c.category for c in result.conversions} == {"build"}


def test_roc_choices():
    opts = ConvertOptions(roc=True, offload_arch=("gfx90a",))
    make = _convert(b"LIBS = -lcublas -lcurand -lcudnn -lcusparse\n", "make", opts)[0].after
    assert make == b"LIBS = -lrocblas -lrocrand -lMIOpen -lrocsparse\n"
    cmake = _convert(b"find_package(CUDAToolkit REQUIRED)\ntarget_link_libraries(a PRIVATE CUDA::cublas)\n",
                     "cmake", opts)[0].after
    assert cmake == (b"find_package(hip REQUIRED)\nfind_package(rocblas REQUIRED)\n"
                     b"target_link_libraries(a PRIVATE roc::rocblas)\n")


def test_crlf_and_latin1_bytes_are_kept():
    src = b"# caf\xe9\r\nCC = nvcc\r\nFLAGS = -arch=sm_70 \\\r\n  -O2\r\n"
    out = _convert(src, "make")[0].after
    assert out == (b"# caf\xe9\r\nOFFLOAD_ARCH ?= gfx90a,gfx942\r\nCC = hipcc\r\n"
                   b"FLAGS = --offload-arch=$(OFFLOAD_ARCH) \\\r\n  -O2\r\n")


def test_build_file_kind():
    for name in ("Makefile", "makefile", "GNUmakefile", "rules.mk", "sub/dir/Makefile"):
        assert build_file_kind(name) == "make", name
    for name in ("CMakeLists.txt", "FindThing.cmake", "x/CMakeLists.txt"):
        assert build_file_kind(name) == "cmake", name
    for name in ("Makefile.am", "makefile.txt", "CMakeCache.txt", "main.cu", "mk", "cmake"):
        assert build_file_kind(name) is None, name


def test_collect_sources_takes_build_files_only_when_asked(tmp_path):
    (tmp_path / "a.cu").write_text("")
    (tmp_path / "Makefile").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "CMakeLists.txt").write_text("")
    (tmp_path / "sub" / "x.cmake").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert [s.rel.as_posix() for s in collect_sources([tmp_path])] == ["a.cu"]
    got = {s.rel.as_posix(): s.build for s in collect_sources([tmp_path], build_files=True)}
    assert got == {"a.cu": None, "Makefile": "make", "sub/CMakeLists.txt": "cmake", "sub/x.cmake": "cmake"}
    named = collect_sources([tmp_path / "Makefile"], build_files=True)
    assert [s.build for s in named] == ["make"]


@pytest.mark.parametrize(("key", "value", "message"), [
    ("flag", [{"id": "x", "cuda": ["-x"], "kind": "bogus", "hip": "y"}], "`kind` must be one of"),
    ("flag", [{"id": "x", "cuda": ["x"], "hip": "y"}], "starting with `-`"),
    ("flag", [{"id": "x", "cuda": ["-x"]}], "needs `hip` or `values`"),
    ("flag", [{"id": "x", "cuda": ["-x"], "hip": "y"}, {"id": "x", "cuda": ["-z"], "hip": "y"}], "used twice"),
    ("flag", [{"id": "x", "cuda": ["-x"], "hip": "y", "colour": 1}], "unknown key `colour`"),
    ("libraries", {"cublas": {"rocm": "x"}}, "unknown key `rocm`"),
    ("libraries", {"cublas": {"roc": "x"}}, "needs a `note`"),
])
def test_malformed_make_rules_stop_with_one_line(key, value, message):
    _, _ = load_build_rules()
    import tomllib

    data = tomllib.loads((ROOT / "rules" / "build" / "make.toml").read_text())
    data[key] = value
    with pytest.raises(RuleError, match=message) as info:
        parse_make_rules(Path("make.toml"), data)
    assert "\n" not in str(info.value) and "make.toml" in str(info.value)


def test_malformed_cmake_rules_stop_with_one_line():
    import tomllib

    data = tomllib.loads((ROOT / "rules" / "build" / "cmake.toml").read_text())
    data["findcuda"]["CUDA_X_LIBRARY"] = {"target": "nosuch"}
    with pytest.raises(RuleError, match="not in \\[targets\\]"):
        parse_cmake_rules(Path("cmake.toml"), data)


# -- the command line -----------------------------------------------------------------------------------------

def _hipport(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipport", "convert", *args, "--no-cache"], capture_output=True,
                          text=True, cwd=cwd, env=env)


def _project(tmp_path: Path) -> Path:
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "k.cu").write_text("#include <cuda_runtime.h>\nint main() { cudaDeviceSynchronize(); }\n")
    (tree / "Makefile").write_text("CC = nvcc\nk: k.cu\n\t$(CC) -arch=sm_80 --expt-relaxed-constexpr $< -o $@\n")
    (tree / "CMakeLists.txt").write_text("project(k LANGUAGES CXX CUDA)\nadd_executable(k k.cu)\n")
    return tree


def test_convert_in_place_counts_build_changes_and_reports_findings(tmp_path):
    tree = _project(tmp_path)
    r = _hipport(str(tree), "-v", "--offload-arch", "gfx90a", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tree / "Makefile").read_text() == ("OFFLOAD_ARCH ?= gfx90a\nCC = hipcc\nk: k.cu\n"
                                               "\t$(CC) --offload-arch=$(OFFLOAD_ARCH) $< -o $@\n")
    assert (tree / "CMakeLists.txt").read_text() == (
        "project(k LANGUAGES CXX HIP)\nadd_executable(k k.cu)\n"
        "set_source_files_properties(k.cu PROPERTIES LANGUAGE HIP)\n")
    assert "build 6" in r.stderr  # nvcc, -arch, OFFLOAD_ARCH, the dropped flag, the language, the source marking
    assert f"{tree / 'Makefile'}:3:" in r.stderr and "build-dropped" in r.stderr
    assert "added `OFFLOAD_ARCH ?= gfx90a`" in r.stderr
    second = _hipport(str(tree), "--check", "--offload-arch", "gfx90a", cwd=tmp_path)
    assert second.returncode == 0, second.stderr


def test_no_build_files_leaves_them(tmp_path):
    tree = _project(tmp_path)
    before = (tree / "Makefile").read_bytes(), (tree / "CMakeLists.txt").read_bytes()
    r = _hipport(str(tree), "--no-build-files", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ((tree / "Makefile").read_bytes(), (tree / "CMakeLists.txt").read_bytes()) == before
    assert "hipcc" not in (tree / "Makefile").read_text() and "hip" in (tree / "k.cu").read_text()
    assert "build" not in r.stderr


def test_diff_check_and_output_dir_cover_build_files(tmp_path):
    tree = _project(tmp_path)
    before = (tree / "Makefile").read_bytes()
    diff = _hipport(str(tree), "--diff", cwd=tmp_path)
    assert diff.returncode == 0 and "+CC = hipcc" in diff.stdout and "+project(k LANGUAGES CXX HIP)" in diff.stdout
    check = _hipport(str(tree), "--check", cwd=tmp_path)
    assert check.returncode == 1
    out = tmp_path / "out"
    empty = tmp_path / "nohipcc"
    empty.mkdir()
    r = _hipport(str(tree), "-o", str(out), cwd=tmp_path, env={**os.environ, "PATH": str(empty)})
    assert r.returncode == 0, r.stderr
    # no hipcc to ask: the three defaults
    assert (out / "Makefile").read_text().startswith("OFFLOAD_ARCH ?= gfx90a,gfx942,gfx1100\nCC = hipcc\n")
    assert (tree / "Makefile").read_bytes() == before


def test_targets_come_from_the_settings_and_bad_ones_are_refused(tmp_path):
    tree = _project(tmp_path)
    (tmp_path / ".hipport.toml").write_text('offload-arch = ["gfx908", "gfx90a"]\n')
    r = _hipport(str(tree), "--diff", cwd=tmp_path)
    assert "+OFFLOAD_ARCH ?= gfx908,gfx90a" in r.stdout
    bad = _hipport(str(tree), "--offload-arch", "sm_80", cwd=tmp_path)
    assert bad.returncode == 2 and "not an AMD GPU target" in bad.stderr


def test_help_documents_build_file_options():
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    assert "--no-build-files" in r.stdout and "--offload-arch" in r.stdout


def test_audit_does_not_read_build_files(tmp_path):
    tree = _project(tmp_path)
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", str(tree), "--no-cache", "--report", "json",
                        "-o", str(tmp_path / "r.json")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert "Makefile" not in (tmp_path / "r.json").read_text()


def test_readme_table_is_the_rule_data():
    """docs/build-files.md's tables are what tools/build_flags_table.py prints from rules/build/ (run it with
    --write after changing the rules)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_flags_table
    finally:
        sys.path.pop(0)
    block = build_flags_table.readme_block(build_flags_table.PAGE.read_text(encoding="utf-8"))
    assert block is not None, "docs/build-files.md lost its build-tables markers"
    assert block == build_flags_table.tables()


# A hipcc whose clang knows gfx90a only, as Debian's (clang 15: no gfx942; no device libraries for gfx1100).
FAKE_HIPCC = """#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$*" in *--version*) echo "HIP version: 5.2.21153"; exit 0;; esac
case "$*" in *--offload-arch=gfx90a*) exit 0;; esac
for a in "$@"; do case $a in --offload-arch=*) echo "clang: error: invalid target ID '${a#--offload-arch=}'" >&2;;
esac; done
exit 1
"""


def test_default_targets_are_those_the_installed_hipcc_builds_for_asked_once(tmp_path):
    """Issue 22: a default conversion names only targets this machine's hipcc can build for, so `make` works
    where the Makefile was converted; the answer is cached (a second run does not ask)."""
    tree = _project(tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "hipcc").write_text(FAKE_HIPCC)
    (fake / "hipcc").chmod(0o755)
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{fake}:{os.environ.get('PATH', '')}", "FAKE_LOG": str(log),
           "HIPPORT_CACHE_DIR": str(tmp_path / "cache")}
    for n in range(2):
        out = tmp_path / f"out{n}"
        r = subprocess.run([sys.executable, "-m", "hipport", "convert", str(tree), "-o", str(out)],
                           capture_output=True, text=True, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
        assert (out / "Makefile").read_text().startswith("OFFLOAD_ARCH ?= gfx90a\n")
        assert f"build files target gfx90a: those of hipport's defaults (gfx90a,gfx942,gfx1100) that {fake / 'hipcc'} " \
            "can build for (gfx942: not known to the installed clang; gfx1100: not known to the installed clang)" \
            in r.stderr
        if n == 0:
            asked = log.read_text()
            assert "--offload-arch=gfx942" in asked
    assert log.read_text() == asked  # the second run read the cache


def test_without_build_files_hipcc_is_not_asked(tmp_path):
    tree = _project(tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "hipcc").write_text(FAKE_HIPCC)
    (fake / "hipcc").chmod(0o755)
    log = tmp_path / "log"
    r = _hipport(str(tree / "k.cu"), "--stdout", cwd=tmp_path,
                 env={**os.environ, "PATH": f"{fake}:{os.environ.get('PATH', '')}", "FAKE_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    assert not log.exists()


def test_issue_22_project_makefile_nvcc_only_flags_and_arch_from_nvidia_smi():
    """Issue 22's reproduction: nvcc-only flags are dropped and reported, `-lnvidia-ml` and an architecture
    variable set from `nvidia-smi` are reported (the variable's name stays: a person sets it)."""
    src = (b"GPU_COMPUTE_CAPABILITY = $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d .)\n"
           b"NVCC = nvcc\n"
           b"NVCCFLAGS = -O3 --threads=0 -t=0 --machine 64 -arch=sm_$(GPU_COMPUTE_CAPABILITY)\n"
           b"LDLIBS = -lnvidia-ml -lcudart\n")
    result, _ = _convert(src, "make")
    assert result.after == (b"GPU_COMPUTE_CAPABILITY = $(shell nvidia-smi --query-gpu=compute_cap --format=csv,"
                            b"noheader | tr -d .)\nNVCC = hipcc\n"
                            b"NVCCFLAGS = -O3 --offload-arch=$(GPU_COMPUTE_CAPABILITY)\n"
                            b"LDLIBS = -lnvidia-ml -lamdhip64\n")
    found = {(f.rule_id, f.subject) for f in result.findings}
    assert {("build-dropped", "--threads=0"), ("build-dropped", "-t=0"), ("build-dropped", "--machine 64"),
            ("build-untranslated", "-lnvidia-ml")} <= found
    assert any(r == "build-untranslated" and "nvidia-smi" in s for r, s in found)
