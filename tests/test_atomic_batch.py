"""Writes made durable together (files.AtomicBatch): nothing is renamed before the batch is committed, a target
that changed meanwhile is left alone with its one-line error, and a discarded batch leaves no temporary file."""

from __future__ import annotations

from hipport import files


def _temps(path):
    return sorted(p.name for p in path.iterdir() if p.name.endswith(files.TEMP_SUFFIX))


def test_targets_stay_old_until_the_batch_is_committed(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "sub" / "b.cu"
    a.write_bytes(b"old a")
    batch = files.AtomicBatch()
    files.write_atomic(a, b"new a", expect=a.stat(), expect_data=b"old a", batch=batch)
    files.write_atomic(b, b"new b", batch=batch)
    assert a.read_bytes() == b"old a" and not b.exists()
    assert len(_temps(tmp_path)) == 1 and len(_temps(b.parent)) == 1
    assert batch.commit() == {}
    assert (a.read_bytes(), b.read_bytes()) == (b"new a", b"new b")
    assert _temps(tmp_path) == [] == _temps(b.parent)
    assert batch.commit() == {}  # a second commit has nothing left to do


def test_a_target_changed_before_the_commit_is_not_overwritten(tmp_path):
    a, c = tmp_path / "a.cu", tmp_path / "c.cu"
    a.write_bytes(b"old a")
    c.write_bytes(b"old c")
    batch = files.AtomicBatch()
    files.write_atomic(a, b"new a", expect=a.stat(), expect_data=b"old a", batch=batch)
    files.write_atomic(c, b"new c", expect=c.stat(), expect_data=b"old c", batch=batch)
    a.write_bytes(b"edited by the user meanwhile")
    errors = batch.commit()
    assert list(errors) == [a] and "changed on disk" in errors[a] and "\n" not in errors[a]
    assert a.read_bytes() == b"edited by the user meanwhile" and c.read_bytes() == b"new c"
    assert _temps(tmp_path) == []


def test_a_discarded_batch_leaves_the_files_and_no_temporary_file(tmp_path):
    a = tmp_path / "a.cu"
    a.write_bytes(b"old a")
    batch = files.AtomicBatch()
    files.write_atomic(a, b"new a", batch=batch)
    batch.discard()
    assert a.read_bytes() == b"old a" and _temps(tmp_path) == []
