"""Whether a converted file was HIP code already: a file that is HIP is brought forward to the targeted release, not
ported, and the summary counts it apart (what changed in it, what is left for a person)."""

from __future__ import annotations

import re

from hipport.model import FileResult
from hipport.rules import RuleSet

# A HIP name or header at the start of a word (`hipMalloc`, `HIP_SYMBOL`, `hipblas_v2`, `<hip/...>`); prose
# ("port to HIP.") is not one. The look-behind after the literal keeps the search on the literal's bytes.
_HIP_WORD = re.compile(rb"(?:hip|HIP)(?<!\w...)[A-Za-z0-9_/]")
# What the rename tables left for a person in CUDA code: the file holds CUDA.
_CUDA_FINDINGS = frozenset({"unsupported-api", "removed-api", "unsupported-header"})


def hip_marked(src: bytes, path: str) -> bool:
    """The text names HIP (a `hip...`/`HIP_...` word, a `<hip/...>` header), or the file is a `.hip` file."""
    if path.endswith(".hip"):
        return True
    return (b"hip" in src or b"HIP" in src) and _HIP_WORD.search(src) is not None


def is_hip_input(result: FileResult, src: bytes, rules: RuleSet) -> bool:
    """HIP already: the text names HIP, and the conversion found no CUDA in it (no name of the rename tables renamed
    to a different one, no CUDA header replaced, no CUDA name left unsupported). A file with both, a CUDA/HIP
    compatibility header, has CUDA to port and is not counted as HIP."""
    if not hip_marked(src, result.path):
        return False
    names, headers = rules.names, rules.headers
    for conv in result.conversions:
        rule = names.get(conv.cuda)
        if conv.cuda in headers or (rule is not None and rule.hip and rule.hip != conv.cuda):
            return False
    return not any(f.rule_id in _CUDA_FINDINGS for f in result.findings)
