"""The HTML report in a real browser: headless Chromium loads the page from disk, runs its script, and dumps the
DOM; the counts it shows must be the audit's, filtering (driven by the URL fragment, as a shared link would)
must hide the right files, nothing may reach the console, and a screenshot is saved.

Skipped when no Chromium is installed, except under CI=true, where a missing browser fails the run.
Set HIPPORT_UPDATE_SCREENSHOT=1 to refresh docs/report-screenshot.png (the examples' report).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from needs import need
from test_reports import HOSTILE, HOSTILE_NAME, Dom

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000")


@pytest.fixture(scope="module")
def chromium():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    need(None, "Chromium", "apt-get install chromium chromium-driver")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The examples plus a file full of markup, audited into an HTML page and the JSON it must agree with."""
    base = tmp_path_factory.mktemp("browser")
    hostile = base / "hostile"
    hostile.mkdir()
    (hostile / HOSTILE_NAME).write_bytes(HOSTILE)
    out = base / "out"
    # ROCm 7.0: the examples' errors there (a 32-bit mask macro) are hand work; on the installed HIP 5.2 the
    # `*_sync` calls that would be errors are rewritten by convert itself, so the error filter would be empty.
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", "examples/cuda", str(hostile), "--rocm-version",
                        "7.0", "--report", "html", "--report", "json", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr  # 1: findings (a crash would be 1 too)
    data = json.loads((out / "hipport-report.json").read_text())
    return base, out / "hipport-report.html", data


def _chrome(chromium: str, profile: Path, url: str, *extra: str) -> tuple[str, str]:
    r = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *extra, url],
                       capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


def _console(stderr: str) -> list[str]:
    """Console messages (log, warning, error, uncaught exceptions, CSP refusals) Chromium logged for pages."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_report_in_chromium(chromium, report):
    base, page, data = report
    url = page.as_uri()
    shot = base / "report.png"
    runs = {
        "plain": (url, "--dump-dom"),
        "errors": (url + "#severity=error", "--dump-dom"),
        "rule": (url + "#rule=atomic-float-add", "--dump-dom"),
        "path": (url + "#path=evil&findings=1", "--dump-dom"),
        "shot": (url, f"--screenshot={shot}", "--window-size=1280,1700"),
    }
    with ThreadPoolExecutor(3) as pool:  # each run has its own profile, so they can overlap
        futures = {k: pool.submit(_chrome, chromium, base / f"profile-{k}", u, *extra)
                   for k, (u, *extra) in runs.items()}
        results = {k: f.result() for k, f in futures.items()}

    for name, (_, stderr) in results.items():
        assert _console(stderr) == [], f"{name}: console messages: {_console(stderr)}"

    totals = data["totals"]
    files = data["files"]
    dom = Dom(results["plain"][0])
    # The script ran (it marks <html> and fills the counter) and caught no error.
    assert any(t == "html" and "js" in a.get("class", "").split() for t, a in dom.tags)
    assert dom.text_of("js-errors") == ""
    assert any(t == "div" and a.get("id") == "js-errors" and "hidden" in a for t, a in dom.tags)
    # The counts on the page are the audit's.
    assert int(dom.text_of("total-files")) == totals["files"] == len(files)
    assert int(dom.text_of("total-findings")) == totals["findings"]
    assert int(dom.text_of("total-converted")) == totals["converted"]
    for sev in ("error", "warning", "info"):
        assert int(dom.text_of(f"count-{sev}")) == totals["findings_by_severity"][sev]
    assert dom.text_of("shown-count") == f"{len(files)} of {len(files)} files shown"
    # The hostile file's text is text: the only script is the page's own, no element came from the source.
    assert sum(1 for t, _ in dom.tags if t == "script") == 1
    assert not any(t in ("b", "img", "iframe", "i") for t, _ in dom.tags)
    text = "".join(dom.text)
    assert "</script><script>alert(1)</script>" in text and "{{ x }}" in text and "<!--" in text
    assert HOSTILE_NAME in text

    def visible_rows(dump: str) -> list[str]:
        d = Dom(dump)
        rows = [a for t, a in d.tags if t == "tr" and "frow" in a.get("class", "").split()]
        assert len(rows) == len(files)
        return [a["data-path"] for a in rows if "hidden" not in a.get("class", "").split()]

    with_error = sorted(f["path"].lower() for f in files if f["findings_by_severity"]["error"])
    assert with_error and sorted(visible_rows(results["errors"][0])) == with_error
    errors_dom = Dom(results["errors"][0])
    assert errors_dom.text_of("shown-count") == f"{len(with_error)} of {len(files)} files shown"
    # Inside the files still shown, findings of other severities are hidden too.
    shown_findings = [a for t, a in errors_dom.tags if t == "li" and "finding" in a.get("class", "").split()
                      and "hidden" not in a.get("class", "").split()]
    assert shown_findings and all(a["data-sev"] == "error" for a in shown_findings)
    assert any(t == "body" and a.get("data-shown") == str(len(with_error)) for t, a in errors_dom.tags)

    with_rule = sorted(f["path"].lower() for f in files if any(x["rule"] == "atomic-float-add"
                                                                 for x in f["findings"]))
    assert with_rule and sorted(visible_rows(results["rule"][0])) == with_rule
    evil = [f["path"].lower() for f in files if "evil" in f["path"].lower() and f["findings"]]
    assert len(evil) == 1 and visible_rows(results["path"][0]) == evil

    # The screenshot exists and is a real picture.
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    if os.environ.get("HIPPORT_UPDATE_SCREENSHOT") == "1":
        # The README's picture: the examples alone, as `hipport audit examples/cuda --report html` shows them.
        examples = base / "examples.html"
        subprocess.run([sys.executable, "-m", "hipport", "audit", "examples/cuda", "--report", "html", "-o",
                        str(examples)], capture_output=True, cwd=ROOT, check=False)
        (ROOT / "docs").mkdir(exist_ok=True)
        _chrome(chromium, base / "profile-docs", examples.as_uri(),
                f"--screenshot={ROOT / 'docs' / 'report-screenshot.png'}", "--window-size=1200,1500")


def test_verify_results_in_chromium(chromium, tmp_path):
    """`audit --verify` (test_verify's fake hipcc on PATH: one unit fails, one compiles): the page shows the
    "Does it build?" section with the JSON's counts, the failing unit with its error and cause, a badge on each
    unit's row, and the script still runs with nothing on the console."""
    from test_verify import FAKE

    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    (fakebin / "hipcc").write_text(FAKE.format(python=sys.executable))
    (fakebin / "hipcc").chmod(0o755)
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "good.cu").write_bytes(b"#include <cuda_runtime.h>\n__global__ void k(int* o) { o[0] = 1; }\n")
    (tree / HOSTILE_NAME).write_bytes(b"__global__ void r() { BREAK(__ballot_sync); } // <b>x</b>\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", str(tree), "--verify", "--offload-arch", "gfx90a",
                        "--no-cache", "--report", "html", "--report", "json", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PATH": str(fakebin), "PYTHONPATH": str(ROOT)})
    assert r.returncode == 4, r.stderr
    data = json.loads((out / "hipport-report.json").read_text())
    dump, stderr = _chrome(chromium, tmp_path / "profile", (out / "hipport-report.html").as_uri(), "--dump-dom")
    assert _console(stderr) == []
    dom = Dom(dump)
    assert any(t == "html" and "js" in a.get("class", "").split() for t, a in dom.tags)
    assert dom.text_of("js-errors") == ""
    assert int(dom.text_of("verify-units")) == data["verify"]["units"] == 2
    assert int(dom.text_of("verify-failed")) == data["verify"]["units_failed"] == 1
    bad = str(tree / HOSTILE_NAME)
    units = [a["data-unit"] for t, a in dom.tags if t == "div" and "unit" in a.get("class", "").split()]
    assert units == [bad]
    text = "".join(dom.text)
    # Line 2 of the converted text (the runtime include added); each error with its cause, `code` as <code>.
    assert f"{bad}:2:23: error: use of undeclared identifier '__ballot_sync'" in text
    assert "HIP 5.2 has no __ballot_sync" in text
    assert "user code defines atomicMax, which HIP already declares" in text
    assert not any(t == "b" for t, _ in dom.tags)
    rows = {a["data-path"]: a for t, a in dom.tags if t == "tr" and "frow" in a.get("class", "").split()}
    assert len(rows) == len(data["files"]) == 2
    badges = [a["data-verify"] for t, a in dom.tags if t == "span" and "data-verify" in a]
    assert sorted(badges) == ["failed", "failed", "ok", "ok"]  # in the file table and in each file's section
