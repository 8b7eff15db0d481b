"""Reading an installed hipify-perl: parsing, the generated rule files, merging over the bundled rules, finding
the script and caching its rules by content hash."""

import hashlib
import os
import tomllib
from pathlib import Path

import pytest
from hipify_perl_sample import SAMPLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hipport import hipify_perl as hp
from hipport.hipify_perl import (
    HipifyPerlError,
    find_hipify_perl,
    hipify_perl_rules_dir,
    parse_hipify_perl,
    read_hipify_perl,
    to_rule_files,
)
from hipport.rules import _parse_rules, load_rules


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """No machine hipify-perl, and a cache of our own."""
    monkeypatch.setenv("HIPPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HIPPORT_HIPIFY_PERL", raising=False)
    monkeypatch.setattr(hp, "DEFAULT_LOCATION", tmp_path / "no-rocm" / "hipify-perl")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "hipify-perl"
    path.write_text(SAMPLE)
    return path


@pytest.fixture(scope="module")
def parsed():
    return parse_hipify_perl(SAMPLE)


def test_renames_first_subst_wins_and_categories_kept(parsed):
    assert parsed.renames["cudaMalloc"] == ("hipMallocOverride", "memory")  # Perl's first subst already renamed it
    assert parsed.renames["CUDA_ARRAY3D_2DARRAY"] == ("hipArrayLayered", "numeric_literal")
    assert parsed.renames["cudaThreadExit"] == ("hipDeviceReset", "thread")
    assert "subst" not in parsed.renames and "weird name" not in parsed.renames
    assert parsed.skipped == ['subst("weird name", "x", "memory");']


def test_include_substs_become_headers_with_slashes_unescaped(parsed):
    assert parsed.headers["cuda_runtime.h"] == ("hip/hip_runtime.h", "include_cuda_main_header")
    assert parsed.headers["cudaNewLib.h"] == ("hipnewlib/hipnewlib.h", "include")
    assert parsed.roc_headers == {"cublas_v2.h": ("rocblas.h", "include_cuda_main_header")}
    assert "cuda_runtime.h" not in parsed.renames


def test_roc_and_experimental_tables(parsed):
    assert parsed.roc == {"cublasSgemm": ("rocblas_sgemm", "library"),
                          "cublasFancyOnlyRoc": ("rocblas_fancy", "library")}
    assert parsed.experimental == {"cudaStreamGetCaptureInfo_v3": ("hipStreamGetCaptureInfo_v3", "stream")}


def test_version_hashes(parsed):
    assert parsed.deprecated == {"cudaThreadSynchronize": "10.0", "cudaThreadExit": "10.0",
                                 "cusparseXcsrsort_bufferSizeExt": "unknown", "cudaNotKnownAnywhere": "11.0"}
    assert parsed.removed == {"cudaThreadExit": "12.0", "cudaBindTexture": "12.0"}
    assert parsed.experimental_funcs == {"cudaStreamGetCaptureInfo_v3": "6.5.0"}


def test_unsupported_lists(parsed):
    assert parsed.unsupported == {
        "cudaBindTexture": "unsupported", "cudaGraphicsGLRegisterBuffer": "unsupported",
        "cudaTotallyUnsupported": "unsupported", "cublasFancyOnlyRoc": "unsupported-hip",
        "cudaMalloc": "unsupported-roc", "__nv_weird_intrinsic": "unsupported-device", "_Pow_int": "unsupported-device",
    }


def test_rule_entries(parsed):
    names, versions, headers = parsed.rule_entries()
    assert names["cudaMalloc"] == {"hip": "hipMallocOverride", "section": "memory"}
    assert names["cudaThreadExit"] == {"hip": "hipDeviceReset", "section": "thread", "cuda_deprecated": "10.0",
                                       "cuda_removed": "12.0"}
    assert names["cublasSgemm"] == {"hip": "hipblasSgemm", "roc": "rocblas_sgemm", "section": "library"}
    assert names["cublasFancyOnlyRoc"] == {"roc": "rocblas_fancy", "section": "library"}
    assert names["cudaStreamGetCaptureInfo_v3"]["experimental"] == "6.5.0"
    assert "hip" not in names["cudaTotallyUnsupported"] and "hip" not in names["_Pow_int"]
    assert names["cudaBindTexture"] == {"section": "unsupported (hipify-perl)", "cuda_removed": "12.0"}
    # In a version hash only: a same-name API, never made "unsupported" by the import.
    assert versions == {"cusparseXcsrsort_bufferSizeExt": {"cuda_deprecated": "unknown"},
                        "cudaNotKnownAnywhere": {"cuda_deprecated": "11.0"}}
    assert headers["cuda_runtime.h"] == {"hip": "hip/hip_runtime.h"}
    assert headers["cublas_v2.h"] == {"hip": "hipblas.h", "roc": "rocblas.h"}


def test_counts(parsed):
    c = parsed.counts()
    assert c[("rename", "memory")] == 2 and c[("rename", "numeric_literal")] == 1
    assert c[("roc rename", "library")] == 2 and c[("experimental rename", "stream")] == 1
    assert c[("header", "hip")] == 3 and c[("header", "roc")] == 1
    assert c[("unsupported", "unsupported-device")] == 2 and c[("ignored", "lines")] == 1


@pytest.fixture
def generated(tmp_path, parsed):
    out = tmp_path / "hp-rules"
    to_rule_files(parsed, out, "/opt/rocm/bin/hipify-perl", "0" * 64)
    return out


def test_generated_files_are_valid_toml(generated):
    files = sorted(p.name for p in generated.iterdir())
    assert files == ["hipify-perl-headers.toml", "hipify-perl.toml"]
    data = tomllib.loads((generated / "hipify-perl.toml").read_text())
    assert data["import"] == {"from": "hipify-perl", "source": "/opt/rocm/bin/hipify-perl", "sha256": "0" * 64}
    assert data["family"]["name"] == "hipify-perl"


def test_generated_rules_load_and_merge_over_the_bundled_ones(generated):
    builtin = load_rules([], use_cache=False)
    rules = load_rules([generated], use_cache=False)
    n = rules.names
    # A plain rename overrides the bundled target; family, section and versions stay hipport's.
    assert builtin.names["cudaMalloc"].hip == "hipMalloc"
    assert n["cudaMalloc"].hip == "hipMallocOverride" and n["cudaMalloc"].family == "runtime"
    assert n["cudaMalloc"].section == builtin.names["cudaMalloc"].section
    assert n["cudaMalloc"].versions["hip_added"] == builtin.names["cudaMalloc"].versions["hip_added"]
    # Bundled as unsupported, renamed by this hipify-perl.
    assert builtin.names["cudaDeviceFlushGPUDirectRDMAWrites"].hip is None
    assert n["cudaDeviceFlushGPUDirectRDMAWrites"].hip == "hipDeviceFlushGPUDirectRDMAWrites"
    # Listed as unsupported by hipify-perl while hipport knows a HIP name: the name is kept.
    assert n["cudaGraphicsGLRegisterBuffer"].hip == builtin.names["cudaGraphicsGLRegisterBuffer"].hip
    # New names: renamed, or reported as unsupported, under the hipify-perl family.
    assert (n["cudaBrandNewApi"].hip, n["cudaBrandNewApi"].family) == ("hipBrandNewApi", "hipify-perl")
    assert n["cudaTotallyUnsupported"].hip is None and n["cudaTotallyUnsupported"].target(roc=False) is None
    assert n["cublasFancyOnlyRoc"].target(roc=True) == "rocblas_fancy"
    assert n["cublasSgemm"].roc == "rocblas_sgemm"
    # Versions merge; an "unknown" never replaces a known one; version-only names are not created.
    assert n["cudaThreadExit"].versions["cuda_removed"] == "12.0"
    assert n["cusparseXcsrsort_bufferSizeExt"].hip == builtin.names["cusparseXcsrsort_bufferSizeExt"].hip
    assert "cudaNotKnownAnywhere" not in n
    assert n["cudaStreamGetCaptureInfo_v3"].versions["experimental"] == "6.5.0"
    assert rules.family_counts["hipify-perl"] == sum(1 for r in n.values() if r.family == "hipify-perl")
    # Headers only fill gaps: hipport's table (folder layout) stays.
    assert rules.headers["cublas_v2.h"] == builtin.headers["cublas_v2.h"]
    assert rules.headers["cudaNewLib.h"].hip == "hipnewlib/hipnewlib.h"


def test_user_rules_after_hipify_perl_win(generated, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "team.toml").write_text('[family]\nname = "team"\n[names]\ncudaMalloc = { hip = "teamMalloc" }\n')
    (mine / "headers.toml").write_text('[headers]\n"cudaNewLib.h" = { hip = "team/newlib.h" }\n')
    rules = load_rules([generated, mine], use_cache=False)
    assert rules.names["cudaMalloc"].hip == "teamMalloc"
    assert rules.headers["cudaNewLib.h"].hip == "team/newlib.h"


def test_odd_strings_survive_the_toml_round_trip(tmp_path):
    text = SAMPLE.replace('"memory");\n    subst("cudaMalloc", "hipIgnoredSecond"',
                          '"mem\\"o\\\\ry \u00e9\\t");\n    subst("cudaMalloc", "hipIgnoredSecond"')
    parsed = parse_hipify_perl(text)
    assert parsed.renames["cudaMalloc"][1] == 'mem"o\\ry \u00e9\t'
    to_rule_files(parsed, tmp_path / "out", 'C:\\odd "path"\x7f', "x")
    rules = load_rules([tmp_path / "out"], use_cache=False)
    assert rules.names["cudaBrandNewApi"].hip == "hipBrandNewApi"


@pytest.mark.parametrize("text", [
    "",
    "#!/usr/bin/env python3\nprint('hello')\n",
    "#!/usr/bin/perl\nsub simpleSubstitutions {\n}\n",
    "#!/usr/bin/perl\nsub rocSubstitutions {\n    subst(\"cublasSgemm\", \"rocblas_sgemm\", \"library\");\n}\n",
    "\x00\x01\x02ELF binary junk\xff",
])
def test_not_hipify_perl_is_one_line_error_naming_the_path(text):
    with pytest.raises(HipifyPerlError) as exc:
        parse_hipify_perl(text, "/some/where/tool")
    msg = str(exc.value)
    assert msg.startswith("/some/where/tool: not a hipify-perl script") and "\n" not in msg


def test_read_errors_name_the_path(tmp_path):
    for path, expected in ((tmp_path / "missing", "not found"), (tmp_path, "is a directory")):
        with pytest.raises(HipifyPerlError, match=expected) as exc:
            read_hipify_perl(path)
        assert str(exc.value).startswith(str(path))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(SAMPLE)), junk=st.text(max_size=40), at=st.integers(0, len(SAMPLE)))
def test_damaged_scripts_parse_or_raise_but_never_crash(cut, junk, at, tmp_path_factory):
    text = SAMPLE[:at] + junk + SAMPLE[at:cut] if at < cut else SAMPLE[:cut] + junk
    try:
        parsed = parse_hipify_perl(text, "x")
    except HipifyPerlError:
        return
    out = tmp_path_factory.mktemp("out")
    to_rule_files(parsed, out)
    _parse_rules(sorted(out.glob("*.toml")))  # whatever was read, the files it writes load


@given(st.text())
@settings(max_examples=200, deadline=None)
def test_arbitrary_text_never_crashes(text):
    try:
        parse_hipify_perl(text, "x")
    except HipifyPerlError:
        pass


# ---- finding the script, caching its rules -----------------------------------------------------------------

def test_rules_dir_is_cached_by_content_hash_and_reused(script, tmp_path):
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    first = hipify_perl_rules_dir(script)
    assert first == tmp_path / "cache" / f"hipify-perl-{digest}"
    stamp = (first / "hipify-perl.toml").stat().st_mtime_ns
    assert hipify_perl_rules_dir(script) == first
    assert (first / "hipify-perl.toml").stat().st_mtime_ns == stamp
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]
    script.write_text(SAMPLE.replace("hipMallocOverride", "hipMallocOther"))
    second = hipify_perl_rules_dir(script)
    assert second != first and load_rules([second], use_cache=False).names["cudaMalloc"].hip == "hipMallocOther"


def test_unwritable_cache_still_works(script, tmp_path, monkeypatch):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    monkeypatch.setenv("HIPPORT_CACHE_DIR", str(blocker / "cache"))
    d = hipify_perl_rules_dir(script)
    assert d is not None and load_rules([d], use_cache=False).names["cudaMalloc"].hip == "hipMallocOverride"


def test_search_order(script, tmp_path, monkeypatch):
    assert find_hipify_perl() is None and hipify_perl_rules_dir(None) is None
    binary = tmp_path / "empty-bin" / "hipify-perl"
    binary.parent.mkdir()
    binary.write_text(SAMPLE)
    binary.chmod(0o755)
    assert find_hipify_perl() == (binary, "PATH")
    rocm = tmp_path / "no-rocm" / "hipify-perl"
    rocm.parent.mkdir()
    rocm.write_text(SAMPLE)
    assert find_hipify_perl() == (rocm, "ROCm")
    monkeypatch.setenv("HIPPORT_HIPIFY_PERL", str(script))
    assert find_hipify_perl() == (script, "HIPPORT_HIPIFY_PERL")
    assert find_hipify_perl(Path("/explicit")) == (Path("/explicit"), "--hipify-perl")
    monkeypatch.setenv("HIPPORT_HIPIFY_PERL", "off")
    assert find_hipify_perl() is None


def test_explicit_or_env_broken_is_an_error_found_one_is_skipped(tmp_path, monkeypatch, capsys):
    junk = tmp_path / "not-it"
    junk.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(HipifyPerlError, match="not a hipify-perl script"):
        hipify_perl_rules_dir(junk)
    monkeypatch.setenv("HIPPORT_HIPIFY_PERL", str(junk))
    with pytest.raises(HipifyPerlError, match="HIPPORT_HIPIFY_PERL"):
        hipify_perl_rules_dir(None)
    monkeypatch.delenv("HIPPORT_HIPIFY_PERL")
    binary = tmp_path / "empty-bin" / "hipify-perl"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\necho hi\n")
    binary.chmod(0o755)
    warnings = []
    assert hipify_perl_rules_dir(None, warn=warnings.append) is None
    assert len(warnings) == 1 and str(binary) in warnings[0] and "ignored" in warnings[0]


def test_concurrent_writer_leaves_one_complete_dir(script, tmp_path):
    """Two runs building the same folder: the loser's rename fails, it uses the winner's."""
    parsed, digest = read_hipify_perl(script)
    target = tmp_path / "cache" / f"hipify-perl-{digest}"
    a = hp._store_dir(parsed, target, str(script), digest)
    b = hp._store_dir(parsed, target, str(script), digest)
    assert a == b == target
    assert sorted(os.listdir(target.parent)) == [target.name]


def _script_from(rules) -> str:
    """A hipify-perl script in the installed format that says exactly what the bundled tables say."""
    def q(s):
        return s.replace("/", "\\/")

    lines = ["#!/usr/bin/perl -w", "", "my %deprecated_funcs = ("]
    lines += [f'    "{n}" => "{r.versions["cuda_deprecated"]}",' for n, r in rules.names.items()
              if "cuda_deprecated" in r.versions]
    lines += [");", "", "sub rocSubstitutions {"]
    lines += [f'    subst("{n}", "{q(r.roc)}", "{r.family}");' for n, r in rules.names.items() if r.roc]
    lines += ["}", "", "sub simpleSubstitutions {"]
    lines += [f'    subst("{n}", "{q(r.hip)}", "{r.family}");' for n, r in rules.names.items() if r.hip]
    lines += [f'    subst("{q(h)}", "{q(r.hip)}", "include");' for h, r in rules.headers.items() if r.hip]
    lines += ["}", "", "sub warnUnsupportedFunctions {", "    my $k = 0;", "    foreach $func ("]
    lines += [f'        "{n}",' for n, r in rules.names.items() if not r.hip]
    lines += ["    )", "    {", "        my $mt = m/($func)/g;", "    }", "    return $k;", "}", ""]
    return "\n".join(lines)


def test_a_hipify_perl_that_agrees_with_the_bundled_tables_changes_nothing(tmp_path):
    from hipport.convert import ConvertOptions, convert_source

    builtin = load_rules([], use_cache=False)
    parsed = parse_hipify_perl(_script_from(builtin))
    assert not parsed.skipped and len(parsed.renames) == sum(1 for r in builtin.names.values() if r.hip)
    to_rule_files(parsed, tmp_path / "hp")
    merged = load_rules([tmp_path / "hp"], use_cache=False)
    assert merged.names == builtin.names and merged.headers == builtin.headers
    sources = sorted((Path(__file__).resolve().parents[1] / "examples" / "cuda").rglob("*.cu*"))
    assert sources
    for path in sources:
        data = path.read_bytes()
        for roc in (False, True):
            assert convert_source(data, merged, ConvertOptions(roc=roc)).after == \
                convert_source(data, builtin, ConvertOptions(roc=roc)).after, path
