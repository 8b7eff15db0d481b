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
