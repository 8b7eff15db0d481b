"""`hipport audit --report html|json|sarif|markdown`: report contents, escaping, SARIF 2.1.0 shape, outputs."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, audit_source
from hipport.audit.hazards import load_all_rules
from hipport.convert import ConvertOptions, convert_source
from hipport.report import render
from hipport.report.model import AuditReport, file_report, readiness, rule_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cuda"

# Source text that must come out of every report as text, never as markup.
HOSTILE = b"""// </script><script>alert(1)</script> <!-- {{ x }} <b>bold</b>
#include <cuda_runtime.h>
#define FULL_MASK 0xffffffff // </script><script>alert(2)</script> <!--
__global__ void k(int* out) {
    const char* t = "</script><script>alert(3)</script><!--{{ }}";
    unsigned m = __ballot_sync(FULL_MASK, out[threadIdx.x] > 0); // <img src=x onerror=alert(4)>
    out[threadIdx.x & 31] = m + (t != 0);
}
int main() { int* p; cudaMalloc(&p, 4); /* </script><!-- {{ }} --> */ return 0; }
"""
HOSTILE_NAME = "evil<b>name<i>.cu"


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


@pytest.fixture(scope="module")
def examples_reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    # ROCm 7.0 named: the default follows the installed HIP, and these reports are about the 64-bit-mask releases.
    r = run("examples/cuda", "--rocm-version", "7.0", "--report", "html", "--report", "json", "--report", "sarif",
            "--report", "markdown", "--report", "text", "--output-dir", out)
    assert r.returncode == 1, r.stderr  # the examples carry warnings on purpose
    return out, r


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Dom(HTMLParser):
    """Elements, comments and text of a page, as the browser's parser sees them; the text inside each element
    with an id."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.ids: dict[str, list[str]] = {}
        self._stack: list[tuple[str, str | None]] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attrs))
        if tag in VOID:
            return
        self._stack.append((tag, attrs.get("id")))
        if attrs.get("id"):
            self.ids[attrs["id"]] = []

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for k in range(len(self._stack) - 1, -1, -1):
            if self._stack[k][0] == tag:
                del self._stack[k:]
                break

    def handle_data(self, data):
        self.text.append(data)
        for _, element_id in self._stack:
            if element_id:
                self.ids[element_id].append(data)

    def handle_comment(self, data):
        self.comments.append(data)

    def text_of(self, element_id: str) -> str:
        return "".join(self.ids[element_id])


def _first_number(text: str) -> int:
    return int(re.match(r"\s*(\d+)", text).group(1))


def test_json_totals_match_the_audit(examples_reports):
    out, r = examples_reports
    data = json.loads((out / "hipport-report.json").read_text())
    assert data["schema"] == "hipport-audit/1"
    totals = data["totals"]
    # The text report's closing line counts the audit's findings; the JSON adds what the conversion leaves.
    m = re.search(r"(\d+) findings \((\d+) error, (\d+) warning(?:, \d+ info)?\) in (\d+) files", r.stderr)
    audit_findings = [x for f in data["files"] for x in f["findings"] if x["source"] == "audit"]
    assert len(audit_findings) == int(m.group(1))
    assert sum(x["severity"] == "error" for x in audit_findings) == int(m.group(2))
    assert totals["files"] == int(m.group(4)) == len(data["files"])
    assert totals["findings"] == sum(len(f["findings"]) for f in data["files"])
    assert totals["converted"] == sum(f["converted"] for f in data["files"]) > 100
    assert totals["lines"] == sum(f["lines"] for f in data["files"])
    assert sum(totals["findings_by_severity"].values()) == totals["findings"]
    assert set(totals["findings_by_rule"]) <= set(data["rules"])
    reduction = next(f for f in data["files"] if f["path"].endswith("reduction.cu"))
    lane = next(x for x in reduction["findings"] if x["rule"] == "lane-math-32")
    assert lane["location"] == {"line": 73, "column": 34}
    assert "+    const int lane = threadIdx.x % warpSize;" in lane["fix"]["patch"]
    # block_reduce_sum's ids (lines 48-49) count the 32-lane groups its 16..1 shuffles reduce, which is right on
    # 64 lanes: the reduction's finding is an info whose patch says `width` 32, and the ids stay (issue 34).
    loop = next(x for x in reduction["findings"] if x["rule"] == "warp-loop-32")
    assert loop["severity"] == "info" and loop["location"]["line"] == 35
    assert "+        v += __shfl_down_sync(0xffffffff, v, offset, 32);" in loop["fix"]["patch"]
    assert "threadIdx.x & 31" not in loop["fix"]["patch"]
    assert reduction["diff"].startswith("--- a/examples/cuda/reduction/reduction.cu")
    assert 0 < reduction["readiness"] < totals["readiness"] < 1
    pure = next(f for f in data["files"] if f["path"].endswith("csv_args.cpp"))
    assert pure["diff"] == "" and pure["findings"] == [] and pure["readiness"] == 1
    # The text report written to a file equals what stdout would have shown.
    assert (out / "hipport-report.txt").read_text() == run("examples/cuda", "--rocm-version", "7.0").stdout


def test_json_is_stable(tmp_path):
    """Two runs that each compute everything (fresh caches) agree byte for byte, and a run replaying a cache
    agrees with them."""
    runs = [run(EXAMPLES / "reduction", "--report", "json", "-o", "-", "--cache-dir", tmp_path / cache)
            for cache in ("a", "b", "a")]
    assert [r.returncode for r in runs] == [1, 1, 1], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    assert json.loads(runs[0].stdout)["schema"] == "hipport-audit/1"
    assert [p for p in (tmp_path / "a").rglob("*") if p.is_file()]  # the third run had a cache to replay


def test_readiness_definition():
    assert readiness(0, 0) == 1.0
    assert readiness(30, 10) == 0.75
    assert readiness(0, 4) == 0.0


SARIF_LEVELS = {"none", "note", "warning", "error"}


def check_sarif_shape(doc: dict) -> None:
    """The parts of SARIF 2.1.0 that GitHub code scanning requires or reads."""
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json") or "sarif-schema-2.1.0" in doc["$schema"]
    assert isinstance(doc["runs"], list) and len(doc["runs"]) == 1
    run_ = doc["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "hipport" and driver["version"] and driver["informationUri"].startswith("https://")
    ids = []
    for rule in driver["rules"]:
        assert re.fullmatch(r"[a-z0-9-]+", rule["id"])
        ids.append(rule["id"])
        for key in ("shortDescription", "fullDescription"):
            assert isinstance(rule[key]["text"], str) and rule[key]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["helpUri"].startswith("https://")
        assert rule["defaultConfiguration"]["level"] in SARIF_LEVELS
    assert len(ids) == len(set(ids))
    for result in run_["results"]:
        assert result["ruleId"] in ids
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in SARIF_LEVELS
        assert result["message"]["text"]
        assert len(result["locations"]) >= 1
        loc = result["locations"][0]["physicalLocation"]
        uri = loc["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
        for fix in result.get("fixes", []):
            assert fix["description"]["text"]
            for change in fix["artifactChanges"]:
                assert change["artifactLocation"]["uri"] == uri
                for rep in change["replacements"]:
                    region = rep["deletedRegion"]
                    assert region["startLine"] <= region["endLine"]
                    assert region["byteOffset"] >= 0 and region["byteLength"] >= 0
                    assert isinstance(rep["insertedContent"]["text"], str)


def test_sarif_shape_and_fixes_apply(examples_reports):
    out, _ = examples_reports
    doc = json.loads((out / "hipport-report.sarif").read_text())
    check_sarif_shape(doc)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"warp-mask-32bit", "lane-math-32", "ballot-32bit"}
    assert any(r["level"] == "error" for r in results)
    # Applying every fix of a file by its byte regions gives the text the audit's patches promise.
    by_uri: dict[str, list] = {}
    for r in results:
        for fix in r.get("fixes", []):
            for change in fix["artifactChanges"]:
                by_uri.setdefault(change["artifactLocation"]["uri"], []).extend(change["replacements"])
    reduction = "examples/cuda/reduction/reduction.cu"
    src = (ROOT / reduction).read_bytes()
    fixed = src
    for rep in sorted(by_uri[reduction], key=lambda x: x["deletedRegion"]["byteOffset"], reverse=True):
        start = rep["deletedRegion"]["byteOffset"]
        fixed = fixed[:start] + rep["insertedContent"]["text"].encode() + \
            fixed[start + rep["deletedRegion"]["byteLength"]:]
    assert fixed.count(b"threadIdx.x % warpSize") == 1 and fixed.count(b"threadIdx.x & 31") == 1  # lines 73, 48
    assert b"v += __shfl_down_sync(0xffffffff, v, offset, 32);" in fixed
    assert b"0xffffffffffffffffull" in fixed


def test_markdown_summary(examples_reports):
    out, _ = examples_reports
    md = (out / "hipport-report.md").read_text()
    assert md.startswith("### hipport audit: 10 files,")
    assert "| Rule | Errors | Warnings | Info | Files | What it means |" in md
    # Of the three 32-bit masks convert rewrites two itself (converted work); the macro's definition is left.
    assert "| `warp-mask-32bit` | 1 | 0 | 0 | 1 |" in md
    assert "examples/cuda/reduction/reduction.cu" in md and "Porting readiness:" in md
    assert len(md) < 65536  # fits a GitHub comment


def test_html_counts_and_structure(examples_reports):
    out, _ = examples_reports
    page = (out / "hipport-report.html").read_text()
    data = json.loads((out / "hipport-report.json").read_text())
    dom = Dom(page)
    totals = data["totals"]
    assert _first_number(dom.text_of("total-files")) == totals["files"]
    assert _first_number(dom.text_of("total-findings")) == totals["findings"]
    assert _first_number(dom.text_of("total-converted")) == totals["converted"]
    for sev in ("error", "warning", "info"):
        assert _first_number(dom.text_of(f"count-{sev}")) == totals["findings_by_severity"][sev]
    assert dom.text_of("readiness").strip() == f"{int(totals['readiness'] * 100)}%"
    assert "How readiness is computed" in page
    rows = [a for t, a in dom.tags if t == "tr" and "frow" in a.get("class", "")]
    assert len(rows) == totals["files"]
    # Self-contained: no external resource of any kind, one script, a CSP forbidding everything else.
    for tag, attrs in dom.tags:
        for key in ("src", "href"):
            value = attrs.get(key)
            assert value is None or value.startswith("#"), (tag, key, value)
    assert sum(1 for t, _ in dom.tags if t == "script") == 1
    assert any(t == "meta" and a.get("http-equiv") == "Content-Security-Policy" and "default-src 'none'"
               in a["content"] for t, a in dom.tags)
    assert sum(1 for t, _ in dom.tags if t == "svg") >= 2
    # Files with nothing to port are collapsed in one list; files with findings are open.
    assert 'id="unchanged"' in page
    assert re.search(r'<section class="file" id="file-\d+"[^>]*data-path="examples/cuda/reduction/reduction.cu"'
                     r'[^>]*><details open>', page)
    # Highlighted code (Pygments classes) and the patch lines are there.
    assert 'class="diff hl"' in page and '<span class=kt>int</span>' in page


def _hostile_report(tmp_path: Path) -> tuple[str, dict]:
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    (src_dir / HOSTILE_NAME).write_bytes(HOSTILE)
    out = tmp_path / "out"
    r = run(src_dir, "--rocm-version", "7.0", "--report", "html", "--report", "json", "-o", out)
    assert r.returncode == 1, r.stderr
    return (out / "hipport-report.html").read_text(), json.loads((out / "hipport-report.json").read_text())


def test_html_escapes_source_text(tmp_path):
    page, data = _hostile_report(tmp_path)
    f = data["files"][0]
    assert f["findings"] and f["diff"], "the hostile file must produce findings and a conversion diff"
    assert any("alert(2)" in x["fix"]["patch"] for x in f["findings"] if x["fix"])
    dom = Dom(page)
    # Exactly the page's own elements: one script, no <b>/<img> from the file's text or name, no comment.
    assert sum(1 for t, _ in dom.tags if t == "script") == 1
    assert not any(t in ("b", "img", "iframe") for t, _ in dom.tags)
    assert dom.comments == []
    assert not any(k.startswith("on") for _, a in dom.tags for k in a)
    text = "".join(dom.text)
    for needle in ("</script><script>alert(1)</script>", "<!--", "{{ x }}", "<b>bold</b>", "alert(2)",
                   "<img src=x onerror=alert(4)>", "{{ }}", HOSTILE_NAME):
        assert needle in text, needle
    # In the markup itself the dangerous sequences never appear unescaped outside the page's own script.
    markup = page.split("<script>")[0]
    assert "<script" not in markup.lower() and "<!--" not in markup and "<b>" not in markup


def test_html_size_for_a_thousand_files(tmp_path):
    """A 1,000-file tree made of the examples (reduction.cu, the heaviest, every tenth file) renders as one
    page well under 20 MB, in seconds."""
    from hipport.rules import load_rules
    rules = load_rules()
    templates = []
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix in (".cu", ".cuh", ".h", ".cpp"):
            src = path.read_bytes()
            conv = convert_source(src, rules, ConvertOptions(), str(path))
            templates.append(file_report(path, src, audit_source(src, str(path), AuditOptions()), conv))
    files = [dataclasses.replace(templates[i % len(templates)], path=f"tree/d{i // 50}/f{i}.cu",
                                 uri=f"tree/d{i // 50}/f{i}.cu") for i in range(1000)]
    report = AuditReport(files, rule_table(load_all_rules()), ("gfx90a",), "7.0")
    start = time.perf_counter()
    page = render("html", report)
    elapsed = time.perf_counter() - start
    assert report.findings == 100 * sum(len(t.findings) for t in templates)
    assert len(page) < 20_000_000 / 2, len(page)
    assert elapsed < 20, elapsed


def test_output_destinations(tmp_path):
    red = EXAMPLES / "reduction" / "reduction.cu"
    # One report, -o FILE.
    r = run(red, "--report", "sarif", "-o", tmp_path / "a.sarif")
    assert r.returncode == 1 and json.loads((tmp_path / "a.sarif").read_text())["version"] == "2.1.0"
    assert "wrote sarif report to" in r.stderr and r.stdout == ""
    # One report with no -o: json/sarif/markdown go to stdout; html to ./hipport-report.html.
    r = run(red, "--report", "markdown", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("### hipport audit"), r.stderr
    r = run(red, "--report", "html", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "hipport-report.html").stat().st_size > 1000 and r.stdout == ""
    # text plus another: text on stdout, the other to its default name.
    r = run(red, "--report", "text", "--report", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "lane-math-32" in r.stdout and (tmp_path / "hipport-report.json").exists()
    # Several reports with -o: a directory (created).
    r = run(red, "--report", "json", "--report", "markdown", "-o", tmp_path / "many")
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in (tmp_path / "many").iterdir()) == ["hipport-report.json", "hipport-report.md"]
    # Usage errors.
    (tmp_path / "file.txt").write_text("x")
    assert run(red, "--report", "json", "--report", "html", "-o", tmp_path / "file.txt").returncode == 2
    assert run(red, "--report", "json", "--report", "html", "-o", "-").returncode == 2
    assert run(red, "--report", "json", "-o", tmp_path / "x", "--output-dir", tmp_path / "y").returncode == 2
    assert run(red, "--report", "pdf").returncode == 2
    # Exit codes are the audit's whatever the report.
    clean = tmp_path / "clean.cu"
    clean.write_text("__global__ void k(int* o) { o[threadIdx.x % warpSize] = 1; }\n")
    assert run(clean, "--report", "json", "-o", tmp_path / "c.json").returncode == 0


def test_help_documents_reports():
    r = run("--help")
    assert r.returncode == 0, r.stderr
    for word in ("--report", "--output-dir", "-o, --output", "html", "sarif", "markdown", "hipport-report.<ext>"):
        assert word in r.stdout, word


def test_json_schema_document_names_every_key(examples_reports):
    out, _ = examples_reports
    data = json.loads((out / "hipport-report.json").read_text())
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    keys = set(data) | set(data["totals"]) | set(next(iter(data["rules"].values())))
    reduction = next(f for f in data["files"] if f["findings"])
    finding = next(x for x in reduction["findings"] if x["fix"])
    keys |= set(reduction) | set(finding) | set(finding["fix"]) | set(finding["fix"]["edits"][0])
    keys |= set(reduction["conversions"][0]) | set(finding["location"])
    missing = sorted(k for k in keys if f"`{k}`" not in doc and f'"{k}"' not in doc)
    assert missing == [], missing
    assert f'`"{data["schema"]}"`' in doc


def test_markdown_keeps_stars_from_opening_emphasis():
    from hipport.report.markdown import _cell

    # A cause like "the *_sync warp built-ins ... (*_sync)" would italicise the text between the stars on GitHub.
    assert _cell("the *_sync built-ins, see *_sync") == "the \\*_sync built-ins, see \\*_sync"
    assert _cell("`a*b` and *x*") == "`a*b` and \\*x\\*"  # inside a code span a star is literal already
    assert _cell("my_file.cu | <b>") == "my_file.cu &#124; &lt;b&gt;"
