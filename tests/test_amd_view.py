"""The AMD build's view of a file (hipport/audit/amd_view.py): which `#if` branches hipcc never compiles for AMD,
the project's switches from settings and build files, and the audit judging only what the AMD build compiles."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipport.audit.amd_view import AMD_DEFINES, AMD_UNDEFINED, _evaluate, view
from hipport.audit.build_switches import build_defines

ROOT = Path(__file__).resolve().parents[1]
KNOWN = {**AMD_DEFINES, "USE_ROCM": 1}


@pytest.mark.parametrize("cond, value", [
    ("defined(__HIP_PLATFORM_AMD__)", 1),
    ("!defined(USE_ROCM)", 0),
    ("defined __HIPCC__ && !defined(__HIP_PLATFORM_NVIDIA__)", 1),
    ("defined(UNSEEN) || defined(__HIP__)", 1),       # settled by the known side
    ("defined(UNSEEN) && defined(__HIP__)", None),    # not settled: both branches stay
    ("defined(UNSEEN) && defined(__NVCC__)", 0),
    ("!(defined(__HIPCC__) && CUDA_VERSION > 11000)", None),
    ("__HIP_PLATFORM_AMD__ == 1 && USE_ROCM", 1),
    ("defined(__CUDA_ARCH__)", None),                 # the device pass, which the AMD build has too
])
def test_conditions(cond, value):
    assert _evaluate(cond, KNOWN, set(AMD_UNDEFINED)) == value


def test_view_blanks_only_the_branch_amd_never_compiles_and_keeps_offsets():
    src = (b"#ifndef USE_ROCM\n#define WARP 32 \\\n  /* cuda */\n#else\n#define WARP 64\n#endif\n"
           b"#if defined(__HIP_PLATFORM_AMD__)\n#define ON_AMD\n#endif\n#ifdef ON_AMD\nkept\n#else\ngone\n#endif\n"
           b"#ifdef __CUDA_ARCH__\ndevice\r\n#endif\n")
    out = view(src, KNOWN)
    assert len(out) == len(src) and out.count(b"\n") == src.count(b"\n")
    assert b"32" not in out and b"cuda" not in out and b"gone" not in out
    assert b"#define WARP 64" in out and b"kept" in out and b"device\r\n" in out
    assert view(out, KNOWN) == out                 # a second view changes nothing
    plain = b"#if X\nint a;\n#endif\n"
    assert view(plain, KNOWN) is plain             # nothing to judge: the very same bytes


def test_build_defines_reads_makefiles_and_cmake(tmp_path):
    (tmp_path / "Makefile").write_text("CFLAGS += -DUSE_ROCM -DNDEBUG -D CUDA_HOME=/x\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "CMakeLists.txt").write_text("add_compile_definitions(GGML_USE_HIP)\n")
    assert build_defines(str(tmp_path)) == ("GGML_USE_HIP", "USE_ROCM")


def _age(monkeypatch, seconds: float = 3600) -> None:
    """The walk takes place ``seconds`` from now, when nothing in the project changed in the last moments (a
    change time, unlike the modification time, cannot be set back)."""
    later = time.time() + seconds
    monkeypatch.setattr(time, "time", lambda: later)


def test_build_defines_remembers_a_walk_until_a_folder_or_build_file_changes(tmp_path, monkeypatch):
    project, cache = tmp_path / "p", str(tmp_path / "cache")
    (project / "a" / "b").mkdir(parents=True)
    (project / "Makefile").write_text("CFLAGS += -DUSE_ROCM\n")
    (project / "a" / "b" / "x.cu").write_text("int x;\n")
    _age(monkeypatch)
    assert build_defines(str(project), cache_dir=cache) == ("USE_ROCM",)
    real_walk = os.walk

    def no_walk(*args, **kwargs):
        raise AssertionError("walked an unchanged project again")

    monkeypatch.setattr(os, "walk", no_walk)
    assert build_defines(str(project), cache_dir=cache) == ("USE_ROCM",)
    monkeypatch.setattr(os, "walk", real_walk)
    # A build file added deep down: its folder's time changed.
    (project / "a" / "b" / "CMakeLists.txt").write_text("add_compile_definitions(GGML_USE_HIP)\n")
    assert build_defines(str(project), cache_dir=cache) == ("GGML_USE_HIP", "USE_ROCM")
    _age(monkeypatch)
    assert build_defines(str(project), cache_dir=cache) == ("GGML_USE_HIP", "USE_ROCM")
    # A build file edited in place, its size unchanged and its time set back to what it was.
    makefile = project / "Makefile"
    before = makefile.stat()
    makefile.write_text("CFLAGS += -DUSE_HIPX\n")
    assert build_defines(str(project), cache_dir=cache) == ("GGML_USE_HIP", "USE_HIPX")
    _age(monkeypatch, 7200)
    assert build_defines(str(project), cache_dir=cache) == ("GGML_USE_HIP", "USE_HIPX")
    makefile.write_text("CFLAGS += -DUSE_HIPY\n")
    os.utime(makefile, ns=(before.st_atime_ns, before.st_mtime_ns))  # its time set back as it was
    assert build_defines(str(project), cache_dir=cache) == ("GGML_USE_HIP", "USE_HIPY")
    # A build file removed, and a folder hipport skips (`build/`) that gains one: only the first counts.
    (project / "a" / "b" / "CMakeLists.txt").unlink()
    (project / "build").mkdir()
    (project / "build" / "Makefile").write_text("-DUSE_ROCM_BUILD\n")
    assert build_defines(str(project), cache_dir=cache) == ("USE_HIPY",)
    # No cache: the same answer from a walk.
    assert build_defines(str(project)) == ("USE_HIPY",)


def test_build_defines_does_not_remember_a_walk_of_what_just_changed(tmp_path):
    # Changed within the file system's clock tick, a folder could change again with the same times.
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "Makefile").write_text("-DUSE_ROCM\n")
    assert build_defines(str(tmp_path / "p"), cache_dir=str(tmp_path / "cache")) == ("USE_ROCM",)
    assert not list((tmp_path / "cache").rglob("*.pickle"))


def test_build_defines_remembers_a_missing_project_until_it_appears(tmp_path, monkeypatch):
    project, cache = tmp_path / "p", str(tmp_path / "cache")
    _age(monkeypatch)
    assert build_defines(str(project), cache_dir=cache) == ()
    project.mkdir()
    (project / "Makefile").write_text("-DUSE_ROCM\n")
    assert build_defines(str(project), cache_dir=cache) == ("USE_ROCM",)


def test_build_defines_cache_that_is_damaged_is_walked_again(tmp_path, monkeypatch):
    project, cache = tmp_path / "p", tmp_path / "cache"
    project.mkdir()
    (project / "Makefile").write_text("-DUSE_ROCM\n")
    _age(monkeypatch)
    assert build_defines(str(project), cache_dir=str(cache)) == ("USE_ROCM",)
    [stored] = list(cache.rglob("*.pickle"))
    stored.write_bytes(b"\x80garbage")
    assert build_defines(str(project), cache_dir=str(cache)) == ("USE_ROCM",)


SOURCE = (b"#include <hip/hip_runtime.h>\n__device__ float s(float v) {\n#ifndef USE_ROCM\n"
          b"  for (int o = 16; o > 0; o /= 2) v += __shfl_xor(v, o);\n#else\n"
          b"  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor(v, o);\n#endif\n  return v;\n}\n")


def _audit(cwd, target="k.hip"):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", target], capture_output=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_project_switch_from_settings_or_build_files(tmp_path):
    (tmp_path / ".git").mkdir()
    # `AMD_BUILD` is the project's own name (rules/platforms.toml does not give it the AMD build)
    (tmp_path / "k.hip").write_bytes(SOURCE.replace(b"USE_ROCM", b"AMD_BUILD"))
    r = _audit(tmp_path, ".")               # a `.hip` file is a source; no switch known: both branches judged
    assert r.returncode == 1 and b"k.hip:4" in r.stdout, r.stdout + r.stderr
    (tmp_path / "Makefile").write_text("HIPFLAGS = -DAMD_BUILD\n")
    r = _audit(tmp_path)
    assert r.returncode == 0 and b"k.hip:4" not in r.stdout, r.stdout + r.stderr
    (tmp_path / ".hipport.toml").write_text("defines = []\n")   # the settings name the switches: they win
    r = _audit(tmp_path)
    assert r.returncode == 1 and b"k.hip:4" in r.stdout, r.stdout + r.stderr
    (tmp_path / ".hipport.toml").write_text('defines = ["AMD_BUILD"]\n')
    r = _audit(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_amd_builds_own_switches_are_defined_for_it(tmp_path):
    # rules/platforms.toml's AMD names (`USE_ROCM`): a project's HIP build passes them (HeCBench attention-paged-hip:
    # `-DUSE_ROCM`) and convert leaves their other branches as the NVIDIA build's, so the audit does too
    (tmp_path / ".git").mkdir()
    (tmp_path / "k.hip").write_bytes(SOURCE)
    r = _audit(tmp_path)
    assert r.returncode == 0 and b"k.hip:4" not in r.stdout, r.stdout + r.stderr
    (tmp_path / ".hipport.toml").write_text('defines = ["!USE_ROCM"]\n')   # unless the settings say otherwise
    r = _audit(tmp_path)
    assert r.returncode == 1 and b"k.hip:4" in r.stdout, r.stdout + r.stderr
    assert view(SOURCE, dict(AMD_DEFINES)).count(b"__shfl_xor") == 1


def test_included_headers_say_what_they_define_for_amd(tmp_path):
    # DeepSpeed's shape: `ds_kernel_utils.h` defines PTX_AVAILABLE on the NVIDIA path only
    (tmp_path / "utils.h").write_text("#ifndef UTILS_H\n#define UTILS_H\n#ifdef __HIP_PLATFORM_AMD__\n"
                                      "#define WAVE 64\n#else\n#define PTX_AVAILABLE\n#endif\n#endif\n")
    src = (b'#include "utils.h"\n#ifdef PTX_AVAILABLE\nasm("mov.u32 %0, %%laneid;");\n#else\nportable\n#endif\n'
           b"#if WAVE == 64\nwide\n#endif\n")
    out = view(src, dict(AMD_DEFINES), path=str(tmp_path / "k.cu"))
    assert b"laneid" not in out and b"portable" in out and b"wide" in out and len(out) == len(src)
    assert view(src, dict(AMD_DEFINES)) == src      # without the file's path its headers are unknown


def test_a_project_names_what_its_amd_build_never_defines():
    from hipport.audit import AuditOptions, audit_source
    src = (b"__device__ float f(float v) {\n#if USE_SYNC >= 9000\n  return __shfl_xor_sync(0xffffffff, v, 1);\n"
           b"#else\n  return __shfl_xor(v, 1);\n#endif\n}\n")
    assert [f.line for f in audit_source(src, "f.cu") if f.rule_id == "warp-mask-32bit"] == [3]
    assert not audit_source(src, "f.cu", AuditOptions(defines=("!USE_SYNC",)))


def test_cuda_toolkit_versions_are_undefined_for_amd_unless_the_project_defines_them(tmp_path):
    # No ROCm header and no hipcc defines CUDART_VERSION, CUDA_VERSION or CUBLAS_VERSION, and convert leaves them
    # as written: their `>=` branches are the NVIDIA build's.
    from hipport.audit import AuditOptions, audit_source
    src = (b"__device__ float f(float v) {\n#if CUDA_VERSION >= 9000\n  return __shfl_xor_sync(0xffffffff, v, 1);\n"
           b"#else\n  return __shfl_xor(v, 1);\n#endif\n}\n")
    assert not audit_source(src, "f.cu")
    assert [f.line for f in audit_source(src, "f.cu", AuditOptions(defines=("CUDA_VERSION=11000",)))
            if f.rule_id == "warp-mask-32bit"] == [3]
    # a compat header the file includes defines it for the AMD build: the branch is compiled
    (tmp_path / "compat.h").write_text("#pragma once\n#define CUDA_VERSION 11000\n")
    (tmp_path / "f.cu").write_bytes(b'#include "compat.h"\n' + src)
    assert [f.line for f in audit_source((tmp_path / "f.cu").read_bytes(), str(tmp_path / "f.cu"))
            if f.rule_id == "warp-mask-32bit"] == [4]
    out = view(b"#if CUBLAS_VERSION >= 11000 || defined(__HIPCC__)\nkept\n#endif\n#if CUDART_VERSION < 9000\n"
               b"old\n#else\nnew\n#endif\n", KNOWN, set(AMD_UNDEFINED) | {"CUBLAS_VERSION", "CUDART_VERSION"})
    assert b"kept" in out and b"old" in out and b"new" not in out


def test_a_licence_box_of_block_comments_before_an_if_is_read_in_linear_time():
    # miniFE's ThreadPool tests open with ~30 one-line `/* ... */` comments and no include guard; the guard
    # pattern backtracked over every way of grouping them and one file held a worker for minutes.
    box = b"/*" + b" " * 70 + b"*/\n"
    src = box * 40 + b"#include <stdio.h>\n#if defined(__HIP_PLATFORM_AMD__)\nkept\n#else\ngone\n#endif\n"
    out = view(src, KNOWN, path="/nonexistent/t.c")
    assert b"kept" in out and b"gone" not in out


def test_a_macro_defined_only_on_a_dead_branch_is_undefined_after_it():
    """flashinfer's cp_async.cuh: `FLASHINFER_CP_ASYNC_ENABLED` is defined only under `#if (__CUDACC_VER_MAJOR__ >=
    11)`, which the AMD build never compiles, so its `#ifdef` branches (PTX) are dead too; a `-D` of the build keeps
    them."""
    src = (b"#if (__CUDACC_VER_MAJOR__ >= 11)\n#define ASYNC_ENABLED\n#endif\n"
           b"#ifdef ASYNC_ENABLED\nasm(\"cp.async\");\n#else\nplain();\n#endif\n")
    from hipport.audit import AuditOptions, amd_view

    out = amd_view.view(src, amd_view.defines_for(AuditOptions()), amd_view.undefined_for(AuditOptions()))
    assert b"cp.async" not in out and b"plain();" in out
    opts = AuditOptions(defines=("ASYNC_ENABLED",))
    out = amd_view.view(src, amd_view.defines_for(opts), amd_view.undefined_for(opts))
    assert b"cp.async" in out and b"plain();" not in out
