"""The user documentation as one text: the README (the front door) and the reference pages under docs/. A test of a
claim reads it here, so a paragraph can move between pages without the test losing it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
