"""benchmarks/hipify_unit_tests.py, which scores converters on HIPIFY's unit-test CHECK lines: the FileCheck-like
matching (in order, a substring of one output line, runs of blanks equal, includes by file name, comment lines of
the output skipped) and one end-to-end run on a test file written here in HIPIFY's format."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from needs import need

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("hipify_unit_tests", ROOT / "benchmarks" / "hipify_unit_tests.py")
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # its dataclasses look their module up
_SPEC.loader.exec_module(bench)


def test_check_lines_are_read_and_check_not_is_skipped():
    text = "// CHECK: a(1);\n  // CHECK-NEXT:  b(2);\n// CHECK-NOT: c(3);\nd(4); // CHECK: e(5);\n"
    assert bench.checks(text) == ["a(1);", "b(2);", "e(5);"]


def test_matching_follows_filecheck():
    output = "#include <rocsparse/rocsparse.h>\n// x = hipMalloc(p);\n  x  =  hipMalloc(p, n);\ny = hipFree(p);\n"
    assert bench.matched(['#include "rocsparse.h"'], output) == [True]        # folder layout equal
    assert bench.matched(["x = hipMalloc(p, n);"], output) == [True]          # blanks equal
    assert bench.matched(["hipMalloc(p);"], output) == [False]                # comment lines skipped
    assert bench.matched(["hipFree(p);", "hipMalloc(p, n);"], output) == [True, False]  # in order
    assert bench.matched(["hipMalloc(p, n", "hipFree"], output) == [True, True]         # substrings
    assert bench.matched(["#include <hipsparse.h>"], output) == [False]


def test_a_test_file_is_scored_for_both_converters(tmp_path):
    need(bench.DEFAULT_PERL.is_file() and shutil.which("perl"), "../shared/hipify-perl/hipify-perl (and perl)",
         "the reference script beside the repository, see ../shared/hipify-perl/README.md")
    folder = tmp_path / "unit_tests"
    folder.mkdir()
    (folder / "t.cu").write_text(
        '// RUN: %run_test hipify "%s" "%t" %hipify_args %clang_args\n'
        "// CHECK: hipMalloc(&p, 4);\n"
        "cudaMalloc(&p, 4);\n"
        '// CHECK: printf("hipFree");\n'
        'printf("cudaFree");\n'
        "// CHECK: hipHostMalloc(&h, 4, hipHostMallocDefault);\n"
        "cudaMallocHost(&h, 4);\n")
    (folder / "no_run_line.cu").write_text("// CHECK: nothing\n")
    [score] = bench.score(folder, bench.DEFAULT_PERL, "6.3")
    assert score.name == "t.cu" and not score.roc
    # hipport leaves strings alone and writes hipify-clang's flags; hipify-perl renames in strings, adds no flags
    assert score.ours == [True, False, True]
    assert score.perl == [True, True, False]
    assert "| **all 1 files** | | 3 | 2 (66.7%) | 2 (66.7%) | 1 | 1 |" in bench.report([score], show=False)
