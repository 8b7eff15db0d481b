#!/usr/bin/env python3
"""Audit recall and precision on HeCBench, measured against the hand ports.

HeCBench ships each benchmark as CUDA (`NAME-cuda/`) and as the HIP port its authors made by hand (`NAME-hip/`).
For every CUDA source that has a hand-ported twin, this script

1. converts the CUDA text with hipport's engine (in memory) and diffs the result against the hand port, so that
   what remains is what a person changed beyond hipport's renames;
2. keeps the changed hunks that touch warp-level code (shuffles, ballots, votes, masks, warpSize, lane math,
   cooperative-group tiles, atomics) on either side: the *hazards the hand port fixed*;
3. audits the CUDA file (`hipport audit`'s defaults: every rule, the default targets) and counts a hazard as
   found when a warning or error lies on one of its lines (one line of slack either side);
4. counts, among the warp-level lines the hand port kept as they were, those the audit flags: the *false alarm*
   share on correct code.

The hand ports are one team's choices, not ground truth: some target newer ROCm, some keep 32-lane assumptions
(an unchanged `offset = 16` loop then counts as a false alarm here). The figures are a yardstick, not a verdict.

    python3 benchmarks/hecbench_audit.py                      # ../shared/corpus/hecbench/src, all benchmarks
    python3 benchmarks/hecbench_audit.py --limit 60 -v        # a sample, with each missed hazard listed
    python3 benchmarks/hecbench_audit.py --json out.json      # per-benchmark figures

Besides the raw figures it prints the recall on the hunks labelled must-fix and the false alarms on lines labelled
correct, from the hand labels in `benchmarks/hecbench_audit_labels.toml` (every missed hunk and every flagged line
the hand port kept is labelled; a new one without a label is counted apart and listed).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import difflib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = ROOT.parent / "shared" / "corpus" / "hecbench" / "src"
SOURCES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".inl")

# Lines that are about warps, lanes, masks or atomics (either side of a hunk).
WARP = re.compile(
    r"__shfl|\bshfl|ballot|__any|__all|activemask|warpSize|WARP_?SIZE|warp_?size|__popc|__ffs|__brev|__clz|"
    r"syncwarp|\blane|tiled_partition|thread_block_tile|coalesced|cg::reduce|cooperative_groups|0x[fF]{8}\b|"
    r"\batomic[A-Z]\w*|unsafeAtomic|\bwarp", re.I)
# The narrower set used for "correct code": lines that call a warp built-in or an atomic.
WARP_CALL = re.compile(r"__shfl\w*\s*\(|__ballot\w*\s*\(|__any\w*\s*\(|__all\w*\s*\(|__activemask\s*\(|"
                       r"\batomic[A-Z]\w*\s*\(|\.shfl\w*\s*\(|\.ballot\s*\(|\.any\s*\(|\.all\s*\(|warpSize")
FLAG = {"warning", "error"}


def _pairs(src: Path, name: str) -> list[tuple[Path, Path]]:
    cuda, hip = src / f"{name}-cuda", src / f"{name}-hip"
    hip_files = {p.relative_to(hip).as_posix(): p for p in hip.rglob("*") if p.is_file()}
    by_name: dict[str, list[Path]] = {}
    for p in hip_files.values():
        by_name.setdefault(p.name, []).append(p)
    out = []
    for p in sorted(cuda.rglob("*")):
        if not p.is_file() or p.suffix not in SOURCES:
            continue
        rel = p.relative_to(cuda).as_posix()
        stem = rel[: -len(p.suffix)]
        twin = None
        for cand in (rel, stem + ".hip", stem + ".cpp", stem + ".hip.cpp", stem + ".h", stem + ".hpp",
                     rel.replace("cuda", "hip"), rel.replace("cu_", "hip_")):
            if cand in hip_files:
                twin = hip_files[cand]
                break
        if twin is None and len(by_name.get(p.name, [])) == 1:
            twin = by_name[p.name][0]
        if twin is not None:
            out.append((p, twin))
    return out


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _norm(line: str) -> str:
    """A line's text with its whitespace collapsed: the stable part of a hunk or alarm id."""
    return " ".join(line.split())[:160]


def _bench_rel(path: Path) -> str:
    """`NAME/rel/path` for a file under `NAME-cuda/`: the benchmark and file part of an id."""
    for parent in path.parents:
        if parent.name.endswith("-cuda"):
            return f"{parent.name[:-5]}/{path.relative_to(parent).as_posix()}"
    return path.name


def _map_back(original: list[str], converted: list[str]) -> list[int]:
    """Line index in the converted text -> line index in the original (conversion adds or drops a few lines)."""
    back = [0] * (len(converted) + 1)
    sm = difflib.SequenceMatcher(None, original, converted, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        for j in range(j1, j2):
            back[j] = min(i1 + (j - j1), max(i2 - 1, i1))
    back[len(converted)] = len(original)
    return back


def measure_file(cuda_path: Path, hip_path: Path, rules, convert_options, audit_options) -> dict:
    from hipport.audit import audit_source
    from hipport.convert import convert_source

    src = cuda_path.read_bytes()
    if b"\0" in src:
        return {}
    try:
        conv = convert_source(src, rules, convert_options, str(cuda_path))
        findings = audit_source(src, str(cuda_path), audit_options) + list(conv.findings)
    except Exception as exc:  # noqa: BLE001 - a file the tools cannot read is counted, not fatal
        return {"error": f"{cuda_path}: {type(exc).__name__}: {exc}"}
    original, converted, hand = _lines(src), _lines(conv.after or src), _lines(hip_path.read_bytes())
    back = _map_back(original, converted)
    flagged: dict[int, list[str]] = {}
    for f in findings:
        if f.severity in FLAG:
            flagged.setdefault(f.line, []).append(f.rule_id)
    hazards, found, missed = 0, 0, []
    correct, alarms, alarm_lines = 0, 0, []
    rel = _bench_rel(cuda_path)
    hunks: list[dict] = []
    alarm_ids: list[str] = []
    hunk_ids: dict[str, int] = {}
    alarm_seen: dict[str, int] = {}
    sm = difflib.SequenceMatcher(None, converted, hand, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for i in range(i1, i2):
                if WARP_CALL.search(converted[i]) and not converted[i].lstrip().startswith("//"):
                    correct += 1
                    line = back[i] + 1
                    if line in flagged:
                        alarms += 1
                        alarm_lines.append(f"{cuda_path}:{line}: {','.join(flagged[line])}: {original[back[i]].strip()[:100]}")
                        text = _norm(original[back[i]])
                        alarm_seen[text] = alarm_seen.get(text, 0) + 1
                        alarm_ids.append(f"{rel}: {text}" + (f" #{alarm_seen[text]}" if alarm_seen[text] > 1 else ""))
            continue
        old, new = converted[i1:i2], hand[j1:j2]
        if not any(WARP.search(x) for x in old + new):
            continue
        if all(x.strip().startswith("//") or not x.strip() for x in old + new):
            continue
        hazards += 1
        lo = back[i1] + 1 if i1 < len(converted) else len(original)
        hi = back[i2 - 1] + 1 if i2 > i1 else lo
        hit = any(line in flagged for line in range(lo - 1, hi + 2))
        # The id rests on the CUDA text (not the converted one) or, for a pure insertion, on the hand port's text,
        # so a change in hipport's renames does not orphan a label.
        text = _norm(original[back[i1]]) if i2 > i1 else "+ " + _norm(next((x for x in new if x.strip()), ""))
        hunk_ids.setdefault(text, 0)
        hunk_ids[text] += 1
        hid = f"{rel}: {text}" + (f" #{hunk_ids[text]}" if hunk_ids[text] > 1 else "")
        hunk = {"id": hid, "found": hit, "line": lo}
        if not hit:
            hunk.update(path=str(cuda_path), converted=old, hand=new)
        hunks.append(hunk)
        if hit:
            found += 1
        else:
            missed.append(f"{cuda_path}:{lo}: " + " | ".join(x.strip() for x in old[:2])[:140])
    return {"hazards": hazards, "found": found, "missed": missed, "correct": correct, "alarms": alarms,
            "alarm_lines": alarm_lines, "hunks": hunks, "alarm_ids": alarm_ids}


_STATE = None


def _init(state) -> None:
    global _STATE
    _STATE = state


def _bench(args) -> tuple[str, dict]:
    src, name = args
    rules, convert_options, audit_options = _STATE
    total = {"hazards": 0, "found": 0, "missed": [], "correct": 0, "alarms": 0, "alarm_lines": [], "errors": [],
             "hunks": [], "alarm_ids": []}
    for cuda_path, hip_path in _pairs(src, name):
        r = measure_file(cuda_path, hip_path, rules, convert_options, audit_options)
        if "error" in r:
            total["errors"].append(r["error"])
            continue
        for k in ("hazards", "found", "correct", "alarms"):
            total[k] += r.get(k, 0)
        total["missed"] += r.get("missed", [])
        total["alarm_lines"] += r.get("alarm_lines", [])
        total["hunks"] += r.get("hunks", [])
        total["alarm_ids"] += r.get("alarm_ids", [])
    return name, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--limit", type=int, default=0, help="only the first N benchmarks (sorted by name)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write per-benchmark figures here")
    ap.add_argument("-v", "--verbose", action="store_true", help="list each missed hazard and each false alarm")
    ap.add_argument("--labels", type=Path, default=Path(__file__).with_name("hecbench_audit_labels.toml"),
                    help="hand labels of the missed hunks and flagged lines (must-fix / taste / correct)")
    args = ap.parse_args()
    if not args.src.is_dir():
        print(f"{args.src}: no HeCBench corpus here; pass its src/ folder", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from hipport.audit import AuditOptions
    from hipport.convert import ConvertOptions
    from hipport.rules import load_rules

    names = sorted(p.name[:-5] for p in args.src.iterdir()
                   if p.name.endswith("-cuda") and (args.src / (p.name[:-5] + "-hip")).is_dir())
    if args.limit:
        names = names[: args.limit]
    state = (load_rules([]), ConvertOptions(), AuditOptions())
    with cf.ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(state,)) as pool:
        results = dict(pool.map(_bench, [(args.src, n) for n in names], chunksize=4))
    h = sum(r["hazards"] for r in results.values())
    f = sum(r["found"] for r in results.values())
    c = sum(r["correct"] for r in results.values())
    a = sum(r["alarms"] for r in results.values())
    with_hazards = sum(1 for r in results.values() if r["hazards"])
    labels = _read_labels(args.labels)
    for name, r in sorted(results.items()):
        if r["hazards"] or r["alarms"]:
            print(f"{name:32} hazards {r['hazards']:3}  found {r['found']:3}  warp lines kept {r['correct']:4}  "
                  f"flagged {r['alarms']:3}")
        if args.verbose:
            missed_hunks = [x for x in r["hunks"] if not x["found"]]
            for m, hunk in zip(r["missed"], missed_hunks):
                print(f"    missed [{_label_of(labels, 'hunks', hunk['id'])}]: {m}")
            for m, aid in zip(r["alarm_lines"], r["alarm_ids"]):
                print(f"    alarm [{_label_of(labels, 'alarms', aid)}]:  {m}")
    print(f"\n{len(names)} benchmarks, {with_hazards} with warp-level hand changes")
    print(f"recall: {f}/{h} hand-fixed warp-level hunks have a warning or error nearby = {f / max(h, 1):.1%}")
    if results:
        big, r = max(results.items(), key=lambda kv: kv[1]["hazards"])
        print(f"recall without the largest benchmark ({big}, {r['hazards']} hunks): {f - r['found']}/{h - r['hazards']}"
              f" = {(f - r['found']) / max(h - r['hazards'], 1):.1%}")
    print(f"false alarms: {a}/{c} warp/atomic lines the hand port kept are flagged = {a / max(c, 1):.1%}")
    labelled = _labelled_figures(results, args.labels, a, c, args.verbose)
    if args.json:
        args.json.write_text(json.dumps({"recall": [f, h], "false_alarms": [a, c], "labelled": labelled,
                                         "benchmarks": results}, indent=1, sort_keys=True))
    return 0


def _read_labels(path: Path) -> dict:
    import tomllib

    return tomllib.loads(path.read_text()) if path.is_file() else {}


def _label_of(labels: dict, table: str, key: str) -> str:
    return labels.get(table, {}).get(key, {}).get("label", "unlabelled")


def _labelled_figures(results: dict, path: Path, alarms: int, correct: int, verbose: bool) -> dict:
    """Recall on the hunks labelled must-fix and false alarms on the lines labelled correct (labels: `path`).

    Only the missed hunks and the flagged lines are labelled by hand; a hunk the audit found carries no label unless
    one is given and is counted as must-fix (a finding lies on it), which the printed line says. A missed hunk or an
    alarm without a label is counted apart and listed, so a new one is seen rather than silently scored."""
    if not path.is_file():
        print(f"{path}: no labels; must-fix recall not computed")
        return {}
    data = _read_labels(path)
    hunk_labels, alarm_labels = data.get("hunks", {}), data.get("alarms", {})
    for table, allowed in ((hunk_labels, {"must-fix", "taste"}), (alarm_labels, {"must-fix", "correct"})):
        for key, value in table.items():
            if value.get("label") not in allowed or not value.get("reason"):
                raise SystemExit(f"{path}: {key!r}: label must be one of {sorted(allowed)}, with a reason")
    count = {"found_mf": 0, "found_unlabelled": 0, "found_taste": 0, "missed_mf": 0, "missed_taste": 0}
    unlabelled, seen, missed_mf = [], set(), []
    for name, r in sorted(results.items()):
        for hunk in r.get("hunks", []):
            label = hunk_labels.get(hunk["id"], {}).get("label")
            seen.add(hunk["id"])
            if hunk["found"]:
                count["found_taste" if label == "taste" else "found_mf" if label else "found_unlabelled"] += 1
            elif label == "must-fix":
                count["missed_mf"] += 1
                missed_mf.append(hunk["id"])
            elif label == "taste":
                count["missed_taste"] += 1
            else:
                unlabelled.append(f"hunk: {hunk['id']}")
    false_alarms = real_alarms = 0
    for name, r in sorted(results.items()):
        for aid in r.get("alarm_ids", []):
            label = alarm_labels.get(aid, {}).get("label")
            seen.add(aid)
            if label == "correct":
                false_alarms += 1
            elif label == "must-fix":
                real_alarms += 1
            else:
                unlabelled.append(f"alarm: {aid}")
    stale = sorted(k for k in (*hunk_labels, *alarm_labels) if k not in seen)
    found = count["found_mf"] + count["found_unlabelled"]
    total = found + count["missed_mf"]
    print(f"must-fix recall: {found}/{total} = {found / max(total, 1):.1%} (missed: {count['missed_mf']} labelled "
          f"must-fix, {count['missed_taste']} labelled taste and left out; found: {count['found_unlabelled']} "
          f"unlabelled hunks counted as must-fix, {count['found_mf']} labelled must-fix, {count['found_taste']} "
          f"labelled taste and left out)")
    print(f"false alarms on lines labelled correct: {false_alarms}/{correct - real_alarms} = "
          f"{false_alarms / max(correct - real_alarms, 1):.1%} ({real_alarms} of the {alarms} flagged lines the hand "
          f"port kept are labelled must-fix: the hand port kept a hazard)")
    for m in missed_mf:
        print(f"    missed must-fix: {m}")
    print(f"unlabelled: {len(unlabelled)} missed hunks or alarms (listed), {len(stale)} stale labels")
    for u in unlabelled:
        print(f"    unlabelled {u}")
    if verbose:
        for k in stale:
            print(f"    stale label: {k}")
    return {"must_fix_recall": [found, total], "false_alarms_labelled": [false_alarms, correct - real_alarms],
            "unlabelled": unlabelled, "stale": stale, **count}


if __name__ == "__main__":
    sys.exit(main())
