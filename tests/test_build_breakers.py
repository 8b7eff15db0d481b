"""Build-breakers: code nvcc compiles whose plain HIP rename does not build with HIP-Clang (issue 14). Each class has
a fixture pair in tests/fixtures/convert (input, HIP form written by hand, compiled with hipcc there); here, what
the summary counts and reports for each."""

from __future__ import annotations

from pathlib import Path

from hipport.convert import ConvertOptions, convert_source
from hipport.convert.summary import summarize

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"
OPTIONS = ConvertOptions(rocm_version=(6, 3))


def _convert(rules, name: str):
    return convert_source((FIXTURES / name).read_bytes(), rules, OPTIONS, path=name)


def test_register_is_dropped_and_counted(rules):
    result = _convert(rules, "register.cu")
    assert b"register" not in result.after.split(b"\n", 1)[1]  # the first line is a comment about it
    summary = summarize([result])
    assert summary.conversions["c++17"] == 6
    again = convert_source(result.after, rules, OPTIONS)
    assert again.after == result.after and not [c for c in again.conversions if c.category == "c++17"]


def test_cooperative_groups_header_gets_the_runtime_first(rules):
    result = _convert(rules, "cg-order.cu")
    text = result.after.decode()
    assert text.index("hip/hip_runtime.h") < text.index("hip/hip_cooperative_groups.h")
    assert text.count("hip/hip_runtime.h") == 1  # the runtime include further down went: it would repeat
    # A runtime include in another conditional block does not count: the cooperative-groups one gets its own.
    src = (b"#ifdef A\n#include <cuda_runtime.h>\n#endif\n#include <cooperative_groups.h>\n"
           b"__global__ void k() {}\n")
    out = convert_source(src, rules, OPTIONS).after
    assert out == (b"#ifdef A\n#include <hip/hip_runtime.h>\n#endif\n#include <hip/hip_runtime.h>\n"
                   b"#include <hip/hip_cooperative_groups.h>\n__global__ void k() {}\n")
    assert convert_source(out, rules, OPTIONS).after == out


def test_host_alloc_override_is_data_with_provenance(rules, tmp_path):
    from hipport.rules import load_rules

    assert rules.names["cudaHostAlloc"].hip == "hipHostMalloc"
    assert rules.overrides["cudaHostAlloc"][0] == "hipHostAlloc"  # HIPIFY's, kept for `rules show`
    # An imported hipify-perl table repeating HIPIFY's name does not undo the override; a --rules folder does.
    imported = tmp_path / "perl"
    imported.mkdir()
    (imported / "perl.toml").write_text('[family]\nname = "hipify-perl"\n[import]\nfrom = "x"\n'
                                        '[names]\ncudaHostAlloc = { hip = "hipHostAlloc" }\n')
    assert load_rules([imported], use_cache=False).names["cudaHostAlloc"].hip == "hipHostMalloc"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "m.toml").write_text('[family]\nname = "mine"\n[names]\ncudaHostAlloc = { hip = "hipHostAlloc" }\n')
    assert load_rules([mine], use_cache=False).names["cudaHostAlloc"].hip == "hipHostAlloc"


def test_malformed_override_is_one_line(tmp_path, monkeypatch):
    import shutil

    from hipport import rules as rules_module

    fake = tmp_path / "rules"
    shutil.copytree(rules_module.builtin_rules_dir(), fake)
    (fake / "overrides.toml").write_text('[names.cudaHostAlloc]\nhip = "hipHostMalloc"\n')
    monkeypatch.setattr(rules_module, "builtin_rules_dir", lambda: fake)
    try:
        rules_module.load_rules(use_cache=False)
    except rules_module.RuleError as exc:
        assert "needs exactly `hip`, `source` and `why`" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a malformed override loaded")
