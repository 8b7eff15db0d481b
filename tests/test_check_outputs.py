"""`files.check_outputs` against the input trees: an output below a tree is refused naming that tree (the first
given when trees nest), one beside a tree whose name it starts with is not, and hundreds of trees cost a look-up
per folder above each output (it was a test per tree and output: quadratic over HeCBench's 375 folders)."""

from __future__ import annotations

import pytest

from hipport.files import InputError, Output, check_outputs


def _trees(tmp_path, *names):
    for name in names:
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    return [tmp_path / name for name in names]


def test_an_output_inside_a_tree_names_the_first_tree_given(tmp_path):
    outer, inner = _trees(tmp_path, "src", "src/kernels")
    out = Output(inner / "hip" / "k.cu", "the output of k.cu")
    with pytest.raises(InputError) as first_outer:
        check_outputs([out], [], [outer, inner])
    assert str(first_outer.value) == (f"{out.path}: the output of k.cu would be written inside the input tree "
                                      f"{outer}; nothing written")
    with pytest.raises(InputError) as first_inner:
        check_outputs([out], [], [inner, outer])
    assert str(first_inner.value).endswith(f"inside the input tree {inner}; nothing written")


def test_a_sibling_whose_name_starts_like_a_tree_is_not_inside_it(tmp_path):
    trees = _trees(tmp_path, "app", "app-cuda")
    check_outputs([Output(tmp_path / "app-hip" / "k.cu", "the output of k.cu")], [], trees)  # no error


def test_many_trees_and_outputs(tmp_path):
    trees = _trees(tmp_path, *(f"b{k}-cuda" for k in range(400)))
    outputs = [Output(tmp_path / "out" / f"b{k}-cuda" / f"f{j}.cu", "an output") for k in range(400) for j in range(10)]
    check_outputs(outputs, [], trees)  # no error: `out/` is beside the trees
    with pytest.raises(InputError, match="inside the input tree"):
        check_outputs([*outputs, Output(trees[399] / "x.cu", "the last")], [], trees)
