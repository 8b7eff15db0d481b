"""Soak (issue 8, item 5): convert + audit of every example 100 times in one process without memory growth."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from hipport.audit import audit_source
from hipport.convert import ConvertOptions, convert_source

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cuda"
ROUNDS, WARM_UP = 100, 10
MAX_GROWTH_MB = 20


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_convert_and_audit_examples_100_times_without_memory_growth(rules):
    sources = [(str(p), p.read_bytes()) for p in sorted(EXAMPLES.rglob("*"))
               if p.suffix in (".cu", ".cuh", ".h", ".cpp")]
    assert len(sources) >= 6
    options = ConvertOptions()
    t0 = time.monotonic()
    samples = []
    for i in range(ROUNDS):
        for path, src in sources:
            result = convert_source(src, rules, options, path)
            assert result.error is None
            audit_source(src, path)
        if i == WARM_UP - 1:
            gc.collect()
            base = rss_mb()
        if i >= WARM_UP and i % 10 == 0:
            samples.append(rss_mb())
    gc.collect()
    growth = rss_mb() - base
    print(f"{ROUNDS} rounds of {len(sources)} files in {time.monotonic() - t0:.1f}s; RSS after warm-up "
          f"{base:.0f} MB, samples {[round(s) for s in samples]}, growth {growth:.1f} MB")
    assert growth < MAX_GROWTH_MB
