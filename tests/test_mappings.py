"""The whole generated mapping set, applied by the engine: every CUDA name with a HIP name becomes it."""

from hipport.convert import ConvertOptions, convert_source
from hipport.semantic import load_semantic


def _renamed(rules, roc):
    pairs = []
    for name, rule in rules.names.items():
        target = rule.target(roc)
        # A family reported instead of renamed (cuDNN, whose HIP names are hipDNN's) is renamed only to its ROC
        # (MIOpen) names, with --roc.
        if target is None or target == name or (rule.family in rules.family_notes and not (roc and rule.roc)):
            continue
        if not roc:  # rules/releases.toml's form for the newest release, where the HIP name changed over time
            target = rules.for_release("names", name, ConvertOptions().rocm_version) or target
            # rules/forward.toml: the release's own spelling (hipBLAS 3 has no `_v2` names)
            target = load_semantic().forward.current(target, ConvertOptions().rocm_version)
        pairs.append((name, target))
    return pairs


def _convert_all(rules, pairs, roc):
    src = "".join(f"{cuda};\n" for cuda, _ in pairs).encode()
    after = convert_source(src, rules, ConvertOptions(roc=roc)).after.decode()
    return after.splitlines()


def test_every_mapped_cuda_name_becomes_its_hip_name(rules):
    pairs = _renamed(rules, roc=False)
    assert len(pairs) > 3000
    got = _convert_all(rules, pairs, roc=False)
    assert got == [f"{hip};" for _, hip in pairs]


def test_every_roc_target_is_applied_with_roc(rules):
    pairs = _renamed(rules, roc=True)
    got = _convert_all(rules, pairs, roc=True)
    assert got == [f"{target};" for _, target in pairs]


def test_no_target_is_itself_a_cuda_name_with_another_target(rules):
    """Otherwise a second run would convert again and conversion would not be idempotent."""
    for roc in (False, True):
        for cuda, target in _renamed(rules, roc):
            other = rules.names.get(target)
            assert other is None or other.target(roc) in (None, target), (cuda, target)


def test_unsupported_entries_are_never_renamed(rules):
    unsupported = [name for name, rule in rules.names.items() if rule.hip is None and name.startswith(("cuda", "cu"))]
    src = "".join(f"{name}(x);\n" for name in unsupported).encode()
    result = convert_source(src, rules, ConvertOptions())
    assert result.after == src
    assert len(result.findings) == len(unsupported)
