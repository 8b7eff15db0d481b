"""A compatibility macro onto HIP's correct form is no name collision; a wrong one is reported at the macro."""

from pathlib import Path

from hipport.audit import audit_source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "audit" / "compat-macro-wrong.cu"


def test_right_mappings_collide_with_nothing_and_wrong_ones_name_their_uses():
    findings = audit_source(FIXTURE.read_bytes(), FIXTURE.name)
    assert not [f for f in findings if f.rule_id == "hip-name-collision"]
    wrong = {f.line: f.message for f in findings if f.rule_id == "compat-macro-wrong"}
    assert sorted(wrong) == [5, 6, 7, 8]
    assert "used at line 17" in wrong[5] and "the mask `mask`" in wrong[5]
    assert "width of 32" in wrong[6] and "`unsigned`" in wrong[7] and "used at line 21" in wrong[8]


def test_a_redefinition_that_maps_onto_nothing_still_collides():
    src = b"#define __shfl_xor(v, l) my_xor(v, l)\n#define __ballot_sync(m, p) my_vote(p)\n"
    assert [f.rule_id for f in audit_source(src, "c.cu")] == ["hip-name-collision"] * 2
