"""The whole generated mapping set, applied by the engine: every CUDA name with a HIP name becomes it, unless the
targeted release's own headers lack that HIP name (rules/rocm/releases.toml, generated from them): then the CUDA
name stays."""

from hipport.convert import ConvertOptions, convert_source
from hipport.releases import release_data
from hipport.semantic import load_semantic


def _kept(target: str) -> bool:
    """The default release's headers lack ``target`` (7.2 dropped `HIP_MEMSET_NODE_PARAMS`, hipBLAS 2's types)."""
    return release_data().has_name(target, ConvertOptions().rocm_version) is False


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
        if _kept(target):
            target = name
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
    kept = [cuda for cuda, hip in pairs if cuda == hip]
    assert 0 < len(kept) < 200, kept  # names 7.2 removed: few, and each reported (test_compiles)


def test_every_roc_target_is_applied_with_roc(rules):
    pairs = _renamed(rules, roc=True)
    got = _convert_all(rules, pairs, roc=True)
    assert got == [f"{target};" for _, target in pairs]


def test_no_target_is_itself_a_cuda_name_with_another_target(rules):
    """Otherwise a second run would convert again and conversion would not be idempotent."""
    for roc in (False, True):
        for cuda, target in _renamed(rules, roc):
            if target == cuda:
                continue  # kept: the release lacks its HIP name
            other = rules.names.get(target)
            assert other is None or other.target(roc) in (None, target), (cuda, target)


def test_unsupported_entries_are_never_renamed(rules):
    release = ConvertOptions().rocm_version
    # rules/releases.toml can give a name the tables lack a HIP form from some release on (7.1's entry points)
    unsupported = [name for name, rule in rules.names.items() if rule.hip is None and name.startswith(("cuda", "cu"))
                   and not rules.for_release("names", name, release)]
    src = "".join(f"{name}(x);\n" for name in unsupported).encode()
    result = convert_source(src, rules, ConvertOptions())
    assert result.after == src
    assert len(result.findings) == len(unsupported)
