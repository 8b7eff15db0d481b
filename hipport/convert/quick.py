"""The engine's fast path: whether a file can need any pass at all, decided with regexes before ~4 ms of libclang.

This is the one place that says what wakes the engine. CUDA wakes it by itself (a CUDA-prefixed name, a name of
the rule tables, a CUDA header, a launch). HIP code has no CUDA in it, yet the passes that bring HIP written for an
older ROCm forward must see it: the words here (`wake_on`) send a file to the full path too. HIP's own names
(`hip...`, `HIP_...`) are here already, so every file that uses HIP goes through the passes; a pass that acts on a
word without such a prefix (`warpSize`, `rocblas_...`) names it with `wake_on` when its module is imported (the
engine imports every pass before the first file). A plain C++ file pays one more regex search, at C speed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from hipport.convert.context import IDENTIFIER, PREFIXED, names_without_prefix
from hipport.rules import RuleSet

Words = Iterable[str] | Callable[[RuleSet], Iterable[str]]

# Not anchored at a line's start: a pattern that starts with `#` is searched for by that byte, six times faster
# than `^[ \t]*#` with re.M; an `#include` in a comment only wakes the engine for a file that names a CUDA header.
_INCLUDE = re.compile(rb"#[ \t]*include[ \t]*[<\"]([^>\"\n]+)")
_SOURCES: list[Words] = []
_made: dict[int, tuple[RuleSet, int, frozenset, tuple[bytes, ...], re.Pattern | None]] = {}


def wake_on(words: Words) -> None:
    """Send a file holding one of ``words`` through the passes even when it holds no CUDA: identifiers
    (`warpSize`), or prefixes ending in `*` (`hipblas*`: any longer identifier starting so). ``words`` may be a
    function of the rule set, for words that come from rule data. Call it at import of the pass's module."""
    _SOURCES.append(words)
    _made.clear()


def _wake_words(rules: RuleSet) -> tuple[frozenset, tuple[bytes, ...], re.Pattern | None]:
    """(identifiers, prefixes, a pattern of the prefixes as words or None) that wake the engine for ``rules``, made
    once per rule set and per registration."""
    made = _made.get(id(rules))
    if made is not None and made[0] is rules and made[1] == len(_SOURCES):
        return made[2:]
    words, prefixes = set(names_without_prefix(rules)), set()
    for source in _SOURCES:
        for word in (source(rules) if callable(source) else source):
            if word.endswith("*"):
                prefixes.add(word[:-1].encode())
            else:
                words.add(word.encode())
    # `prefix` then a look behind it: a word boundary checked after the literal, so the search runs on the
    # literals' first bytes (as PREFIXED does); `chip` or `relationship` in a comment wakes nothing, and neither
    # does the prefix alone ("ported to HIP").
    pattern = re.compile(rb"(?:" + b"|".join(re.escape(p) + rb"(?<!\w" + b"." * len(p) + b")"
                                             for p in sorted(prefixes, key=len, reverse=True)) + rb")\w") \
        if prefixes else None
    made = _made[id(rules)] = (rules, len(_SOURCES), frozenset(words), tuple(sorted(prefixes)), pattern)
    return made[2:]


# nvcc's translation units: every one gets HIP's runtime header (`includes.insert_runtime_include`), whatever it names.
CUDA_UNITS = (".cu",)


def may_need_work(src: bytes, rules: RuleSet, path: str = "") -> bool:
    """Most files of a large tree have no CUDA and no HIP in them: decide that with regexes. Anything that could
    matter to a rule (a CUDA-prefixed name, a known unprefixed name, a CUDA header, a launch, a CUDA header-guard
    macro without a prefix, a word of `wake_on`) sends the file to the full path, and so does a `.cu` file."""
    if PREFIXED.search(src) or b"<<<" in src or path.lower().endswith(CUDA_UNITS):
        return True
    if any(m.group(1).decode("latin-1").strip() in rules.headers for m in _INCLUDE.finditer(src)):
        return True
    words, prefixes, pattern = _wake_words(rules)
    # A substring test first (memchr speed): most plain files hold no prefix at all, and the pattern's look-behinds
    # cost a scan of their own.
    if pattern is not None and any(p in src for p in prefixes) and pattern.search(src):
        return True
    return not words.isdisjoint(IDENTIFIER.findall(src))


# HIP's own names, and its headers (`<hip/...>`, `<hipblas.h>`): HIP code goes through the passes, which bring it
# forward to the targeted release; the CUDA renames find nothing in it.
wake_on(["hip*", "HIP*"])
