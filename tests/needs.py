"""One rule for tests that need something outside Python (a compiler, a browser, reference tables, git):
on a developer machine a missing input skips the test; under CI (CI=true) it fails it, because `.ci/run`
provides every input and a skip there would hide a test that never ran."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def need(available: object, what: str, how: str) -> None:
    """Skip (locally) or fail (CI=true) unless ``available`` is truthy. ``what`` names the missing input,
    ``how`` says how to provide it."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is missing under CI=true; .ci/run must provide it ({how})")
    pytest.skip(f"{what} is missing ({how})")
