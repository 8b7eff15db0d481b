"""`hipport rules`, `rules show`, `rules import-hipify-perl`, and `convert --hipify-perl`, as a user runs them."""

import hashlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hipify_perl_sample import SAMPLE

ROOT = Path(__file__).resolve().parents[1]
CUDA = (b"#include <cuda_runtime.h>\n#include <cublas_v2.h>\n#include <cudaNewLib.h>\n"
        b"int main() { float *p; cudaMalloc(&p, 4); cudaBrandNewApi(); cudaThreadSynchronize(); }\n")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def env(shared_cache):
    """A cache of this module's own and no hipify-perl from this machine (ROCm's, or one on PATH)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "HIPPORT_CACHE_DIR": str(shared_cache),
            "HIPPORT_HIPIFY_PERL": "off"}


def hipport(*args, env, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, cwd=cwd, env=env)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "hipify-perl"
    path.write_text(SAMPLE)
    return path


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "x.cu"
    path.write_bytes(CUDA)
    return path


def one_line_error(r, *needles):
    assert r.returncode == 2, r.stderr
    assert r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"hipport: error: "), r.stderr
    assert b"Traceback" not in r.stderr
    for n in needles:
        assert str(n).encode() in r.stderr, (n, r.stderr)


# ---- convert --hipify-perl ---------------------------------------------------------------------------------

def test_convert_uses_hipify_perl_renames_and_keeps_hipport_headers(script, source, env):
    r = hipport("convert", "--hipify-perl", script, "--stdout", source, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "hipMallocOverride(&p, 4)" in out and "hipBrandNewApi()" in out and "hipDeviceSynchronize()" in out
    assert "#include <hip/hip_runtime.h>" in out
    assert "#include <hipblas/hipblas.h>" in out  # hipport's header table, not hipify-perl's flat `hipblas.h`
    assert "#include <hipnewlib/hipnewlib.h>" in out  # a header only hipify-perl knows


def test_without_hipify_perl_the_bundled_rules_apply(script, source, env):
    r = hipport("convert", "--stdout", source, env=env)
    assert r.returncode == 0, r.stderr
    assert b"hipMalloc(&p, 4)" in r.stdout and b"cudaBrandNewApi()" in r.stdout
    r = hipport("convert", "--no-hipify-perl", "--stdout", source, env={**env, "HIPPORT_HIPIFY_PERL": str(script)})
    assert r.returncode == 0 and b"hipMalloc(&p, 4)" in r.stdout


def test_environment_variable(script, source, env):
    r = hipport("convert", "--stdout", source, env={**env, "HIPPORT_HIPIFY_PERL": str(script)})
    assert r.returncode == 0, r.stderr
    assert b"hipMallocOverride(&p, 4)" in r.stdout


def test_found_on_path(script, source, env, tmp_path):
    if Path("/opt/rocm/bin/hipify-perl").is_file():
        pytest.skip("this machine's ROCm hipify-perl comes first")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hipify-perl").write_text(SAMPLE)
    (bindir / "hipify-perl").chmod(0o755)
    env = {**env, "PATH": f"{bindir}{os.pathsep}{env['PATH']}"}
    del env["HIPPORT_HIPIFY_PERL"]
    r = hipport("convert", "--stdout", source, env=env)
    assert r.returncode == 0, r.stderr
    assert b"hipMallocOverride(&p, 4)" in r.stdout


def test_project_setting(script, source, env, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".hipport.toml").write_text('hipify-perl = "hipify-perl"\n')
    r = hipport("convert", "--stdout", source, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert b"hipMallocOverride(&p, 4)" in r.stdout
    (tmp_path / ".hipport.toml").write_text('hipify-perl = "missing-hipify-perl"\n')
    one_line_error(hipport("convert", "--stdout", source, env=env, cwd=tmp_path), "missing-hipify-perl",
                   ".hipport.toml")


def test_user_rules_win_over_hipify_perl(script, source, env, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "team.toml").write_text('[family]\nname = "team"\n[names]\ncudaMalloc = { hip = "teamMalloc" }\n')
    r = hipport("convert", "--hipify-perl", script, "--rules", mine, "--stdout", source, env=env)
    assert r.returncode == 0, r.stderr
    assert b"teamMalloc(&p, 4)" in r.stdout and b"hipBrandNewApi()" in r.stdout


def test_rules_dir_is_cached_by_content_hash_and_reused(script, source, env, tmp_path):
    env = {**env, "HIPPORT_CACHE_DIR": str(tmp_path / "cache")}
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    cached = tmp_path / "cache" / f"hipify-perl-{digest}"
    assert hipport("convert", "--hipify-perl", script, "--stdout", source, env=env).returncode == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in cached.iterdir()}
    assert set(stamps) == {"hipify-perl.toml", "hipify-perl-headers.toml"}
    assert hipport("convert", "--hipify-perl", script, "--stdout", source, env=env).returncode == 0
    assert {p.name: p.stat().st_mtime_ns for p in cached.iterdir()} == stamps
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith("hipify-perl")] == [cached.name]


def test_not_hipify_perl_is_a_one_line_error(source, env, tmp_path):
    junk = tmp_path / "tool.sh"
    junk.write_text("#!/bin/sh\necho hello\n")
    one_line_error(hipport("convert", "--hipify-perl", junk, "--stdout", source, env=env), junk, "not a hipify-perl")
    one_line_error(hipport("convert", "--hipify-perl", tmp_path / "nope", source, env=env), "nope", "not found")
    one_line_error(hipport("convert", "--stdout", source, env={**env, "HIPPORT_HIPIFY_PERL": str(junk)}),
                   junk, "HIPPORT_HIPIFY_PERL")
    assert source.read_bytes() == CUDA


def test_hipify_perl_and_no_hipify_perl_conflict(script, source, env):
    one_line_error(hipport("convert", "--hipify-perl", script, "--no-hipify-perl", source, env=env),
                   "cannot be combined")


# ---- rules import-hipify-perl ------------------------------------------------------------------------------

def test_import_writes_rule_files_and_prints_counts(script, source, env, tmp_path):
    r = hipport("rules", "import-hipify-perl", script, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    rules_dir = tmp_path / "hipify-perl-rules"
    assert sorted(p.name for p in rules_dir.iterdir()) == ["hipify-perl-headers.toml", "hipify-perl.toml"]
    assert "renames                    7: memory 2, thread 2, device 1, library 1, numeric_literal 1" in out
    assert "roc renames                2: library 2" in out
    assert "experimental renames       1: stream 1" in out
    assert "headers                    3 HIP, 1 ROC" in out
    assert "versions                   4 deprecated, 2 removed, 1 experimental" in out
    assert "unsupported                7: by HIP and ROC 3, by HIP only 1, by ROC only 1, device functions 2" in out
    assert "ignored                    1" in out
    data = tomllib.loads((rules_dir / "hipify-perl.toml").read_text())
    assert data["import"]["sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    r = hipport("convert", "--rules", rules_dir, "--stdout", source, env=env)
    assert r.returncode == 0 and b"hipMallocOverride(&p, 4)" in r.stdout


def test_import_output_dir_option(script, env, tmp_path):
    r = hipport("rules", "import-hipify-perl", script, "-o", tmp_path / "a" / "b", env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a" / "b" / "hipify-perl.toml").is_file()


def test_import_errors(env, tmp_path):
    junk = tmp_path / "README"
    junk.write_text("just prose\n")
    one_line_error(hipport("rules", "import-hipify-perl", junk, env=env), junk, "not a hipify-perl")
    one_line_error(hipport("rules", "import-hipify-perl", tmp_path / "missing", env=env), "missing")
    assert not (tmp_path / "hipify-perl-rules").exists()


# ---- rules, rules show ---------------------------------------------------------------------------------------

def test_rules_lists_families_with_counts(env):
    r = hipport("rules", env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    for family in ("runtime", "driver", "device", "cublas", "cusparse", "cudnn", "cub"):
        assert f"\n  {family} " in out, family
    line = next(l for l in out.splitlines() if l.strip().startswith("runtime "))
    assert "names" in line and any(ch.isdigit() for ch in line)
    assert "CUDA headers" in out and "in use:" in out
    assert "hipify-perl" not in out


def test_rules_lists_hipify_perl_and_user_dirs(script, env, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "team.toml").write_text('[family]\nname = "team"\n[names]\nmyCudaThing = { hip = "myHipThing" }\n'
                                    'cudaMalloc = { hip = "teamMalloc" }\n')
    r = hipport("rules", "--hipify-perl", script, "--rules", mine, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert f"hipify-perl {script}" in out
    assert "hipify-perl      14 names,      8 with a HIP name; 4 change a built-in target, 4 new" in out
    assert "headers           3 CUDA headers, 1 new (built-in headers are kept)" in out
    assert f"--rules {mine}:" in out
    assert "team              2 names,      2 with a HIP name; 1 change a built-in target, 1 new" in out
    assert out.index("hipify-perl " + str(script)) < out.index("--rules")


def test_show_a_name(env):
    r = hipport("rules", "show", "cudaMalloc", env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert out.startswith("cudaMalloc  (runtime, Memory Management)")
    assert "HIP:          hipMalloc  (added in HIP 1.5.0)" in out


def test_show_versions_roc_and_unsupported(env):
    out = _show(env, "cudaThreadSynchronize")
    assert "hipDeviceSynchronize" in out and "deprecated in CUDA 10.0" in out
    out = _show(env, "cublasSgemm")
    assert "ROC (--roc):  rocblas_sgemm" in out
    out = _show(env, "cudaDeviceFlushGPUDirectRDMAWrites")
    assert "HIP:          none (unsupported" in out and "added in CUDA 11.3" in out


def test_show_with_hipify_perl_tells_where_it_comes_from(script, env):
    r = hipport("rules", "show", "--hipify-perl", script, "cudaMalloc", env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "HIP:          hipMallocOverride  (added in HIP 1.5.0)" in out
    assert f"from:         hipify-perl {script} (built-in: hipMalloc)" in out
    r = hipport("rules", "--hipify-perl", script, "show", "cudaBrandNewApi", env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "(hipify-perl, memory)" in out and "not in the built-in rules" in out


def _show(env, name):
    r = hipport("rules", "show", name, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def _convert(src: str, rocm: str) -> str:
    from hipport.convert import ConvertOptions, convert_source
    from hipport.rules import load_rules

    version = tuple(int(x) for x in rocm.split("."))
    return convert_source(src.encode(), load_rules(), ConvertOptions(rocm_version=version)).after.decode()


def test_show_tells_the_warp_sync_rewrite_convert_does(env):
    """HIPIFY's table lists no HIP name for `__shfl_down_sync`; convert still rewrites it, and `rules show` says how."""
    out = _show(env, "__shfl_down_sync")
    assert "never renamed" not in out and "none (unsupported" not in out
    assert "before 7.0: `__shfl_down(...)`" in out and "`0xffffffffffffffffull`" in out
    call = "__device__ float f(float v) { return __shfl_down_sync(0xffffffff, v, 1); }\n"
    assert "__shfl_down(v, 1)" in _convert(call, "5.2")
    assert "__shfl_down(v, 1)" in _convert(call, "6.2")  # 6.2's *_sync are opt-in
    assert "__shfl_down_sync(0xffffffffffffffffull, v, 1)" in _convert(call, "7.0")
    out = _show(env, "__ballot_sync")  # not in HIPIFY's table at all
    assert out.startswith("__ballot_sync  (warp built-in, rules/warp.toml)") and "`__ballot(...)`" in out


def test_show_tells_the_call_and_macro_rewrites_convert_does(env):
    out = _show(env, "cudaMemcpyToSymbol")
    assert "HIP:          hipMemcpyToSymbol" in out and "`HIP_SYMBOL(sym)`" in out
    assert "hipMemcpyToSymbol(HIP_SYMBOL(c), h, 4)" in _convert("void g(float *h) { cudaMemcpyToSymbol(c, h, 4); }\n",
                                                                 "6.3")
    assert "cudaMemcpyToSymbol (first argument)" in _show(env, "HIP_SYMBOL")
    assert "a call with 2 arguments becomes `hipEventCreateWithFlags(...)`" in _show(env, "cudaEventCreate")
    out = _show(env, "__CUDA_ARCH__")
    assert "`__HIP_DEVICE_COMPILE__` where only its presence is tested" in out and "cuda-version-macro" in out
    assert _convert("#ifdef __CUDA_ARCH__\nint a;\n#endif\n", "6.3").startswith("#ifdef __HIP_DEVICE_COMPILE__")
    assert "`HIP_INCLUDE_HIP_DRIVER_TYPES_H` in #if" in _show(env, "__DRIVER_TYPES_H__")


def test_show_a_name_only_the_audit_knows(env):
    out = _show(env, "__reduce_add_sync")
    assert "convert:      no rule: left as it is" in out and "warp-builtin-unavailable" in out
    assert "__reduce_add_sync(m, v);" in _convert("__device__ int f(unsigned m, int v) { return __reduce_add_sync(m, v); }\n", "5.2")


def test_show_a_stand_in(env):
    out = _show(env, "__syncwarp")
    assert "stand-in definition, rules/shims.toml" in out and "older than 7.0" in out
    assert "warp-builtin-unavailable" in out
    converted = _convert("__device__ void f() { __syncwarp(); }\n", "5.2")
    assert "#define HIPPORT_SHIM___syncwarp" in converted and "__syncwarp();" in converted


def test_show_a_header_and_a_namespace(env):
    r = hipport("rules", "show", "cuda_runtime.h", env=env)
    assert r.returncode == 0 and "HIP:          hip/hip_runtime.h" in r.stdout.decode()
    r = hipport("rules", "show", "cub", env=env)
    assert r.returncode == 0 and "hipcub" in r.stdout.decode()


def test_show_unknown_name_suggests_close_matches(env):
    r = hipport("rules", "show", "cudaMaloc", env=env)
    assert r.returncode == 1
    assert r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr
    assert b"no rule for `cudaMaloc`; did you mean cudaMalloc" in r.stderr
    r = hipport("rules", "show", "cudamalloc", env=env)
    assert r.returncode == 1 and b"did you mean cudaMalloc" in r.stderr
    r = hipport("rules", "show", "qqqqqqqqqqqq", env=env)
    assert r.returncode == 1 and b"nothing close" in r.stderr


def test_show_falls_back_to_audit_rule_ids(env):
    from hipport.audit.hazards import load_hazards

    ids = sorted(load_hazards())
    assert ids  # the README's count is checked in test_readme.py
    for rule_id in ids:
        r = hipport("rules", "show", rule_id, env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode().startswith(rule_id), rule_id
    r = hipport("rules", "show", "warp-mask-64bit", env=env)
    assert r.returncode == 1 and r.stderr.startswith(b"hipport: error: ")


def test_help_documents_every_option(env):
    expected = {
        ("rules",): ("--rules", "--hipify-perl", "--no-hipify-perl", "--config", "Exit status", "show",
                     "import-hipify-perl"),
        ("rules", "show"): ("--rules", "--hipify-perl", "--no-hipify-perl", "--config", "Exit status"),
        ("rules", "import-hipify-perl"): ("--output-dir", "-o", "hipify-perl-rules", "Exit status"),
        ("convert",): ("--hipify-perl", "--no-hipify-perl", "HIPPORT_HIPIFY_PERL"),
    }
    for command, options in expected.items():
        r = hipport(*command, "--help", env={**env, "COLUMNS": "200"})
        assert r.returncode == 0, command
        for option in options:
            assert option.encode() in r.stdout, (command, option)
