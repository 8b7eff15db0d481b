"""How many worker processes a run uses: the default count, and how many files it takes before a pool pays for
its start-up. Shared by `convert` and `audit`, and kept apart from the runner so that the audit of one file does
not import the whole conversion to learn it."""

from __future__ import annotations

import os

PARALLEL_MIN_FILES = 16


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
