"""The README's numbers and examples, measured: a claim that stops being true fails here, not in a user's hands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import docs
from hipport.audit import load_hazards
from hipport.config import KEYS
from hipport.files import SOURCE_SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
README = docs.text()
WORDS = {"Thirteen": 13, "Fourteen": 14, "Fifteen": 15, "Sixteen": 16, "Seventeen": 17, "Eighteen": 18,
         "Nineteen": 19, "Twenty": 20, **{f"Twenty-{w}": 20 + n for n, w in enumerate(
             ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine"), 1)}}


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_rename_counts(rules):
    m = re.search(r"\*\*Renames\*\*: ([\d,]+) CUDA names .*? ([\d,]+) are renamed to their HIP names; ([\d,]+) more\s+"
                  r"\(cuDNN's\) have a HIP name but are reported, not renamed .*? the other ([\d,]+) have no HIP",
                  README, re.S)
    assert m, "the README's Renames line changed shape; update this test with it"
    total, renamed, cudnn, none = map(_number, m.groups())
    names = rules.names.values()
    assert total == len(rules.names)
    assert renamed == sum(1 for r in names if r.hip and r.family not in rules.family_notes)
    assert cudnn == sum(1 for r in names if r.hip and r.family in rules.family_notes)
    assert none == sum(1 for r in names if not r.hip)
    assert set(rules.family_notes) == {"cudnn"}


def test_rule_count():
    m = re.search(r"\b(" + "|".join(WORDS) + r") rules \(`hipport rules show RULE-ID`", README)
    assert m and WORDS[m.group(1)] == len(load_hazards()), sorted(load_hazards())


def test_searched_suffixes_and_settings_keys():
    m = re.search(r"Directories are searched for `([^`]+)`", README)
    assert m and set(m.group(1).split()) == set(SOURCE_SUFFIXES)
    m = re.search(r"Keys: (.*?)\. An unknown key", README, re.S)
    assert m and set(re.findall(r"`([a-z-]+)`", m.group(1))) == set(KEYS)


def test_audit_example_is_what_the_audit_prints():
    block = re.search(r"```\n\$ (hipport audit [^\n]+)\n(.*?)```", README, re.S)
    assert block, "no audit example in the README"
    command, shown = block.group(1).split(), block.group(2).splitlines()
    r = subprocess.run([sys.executable, "-m", "hipport", *command[1:], "--no-cache"], capture_output=True,
                       text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1, r.stderr
    printed = r.stdout.splitlines()
    head = shown[: shown.index("...")]
    assert printed[: len(head)] == head
    assert shown[-1] == r.stderr.strip()
