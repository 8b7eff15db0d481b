"""Regenerate tests/fixtures/audit/*.fixed.cu from the current suggestions. Review the diff before committing:
the .fixed files are the expected output, not a snapshot to accept blindly."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_audit import FILES, options_of, rule_of  # noqa: E402

from hipport.audit import apply_suggestions, audit_source  # noqa: E402

for path in FILES:
    if len(sys.argv) > 1 and path.name not in sys.argv[1:]:
        continue
    src = path.read_bytes()
    rule = rule_of(path)
    findings = [f for f in audit_source(src, path.name, options_of(src.decode())) if f.rule_id == rule]
    out = path.with_name(path.name[:-3] + ".fixed.cu")
    out.write_bytes(apply_suggestions(src, findings, {rule}))
    print(out.name)
