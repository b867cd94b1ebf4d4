"""The chat page in a real headless browser (Debian's chromium driven by Playwright): type a prompt, watch
tokens stream in coloured by provenance, and the live statistics fill in."""

import os
import shutil
from pathlib import Path

import pytest

playwright = pytest.importorskip(
    "playwright.sync_api", reason="the page test needs playwright (the test extra)"
)
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)"
)


def test_the_page_streams_coloured_tokens_and_statistics(url):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(url + "/")
        page.wait_for_function("document.getElementById('model').textContent === 'tiny'")
        page.fill("#prompt", "the quick brown fox jumps over the lazy dog. the quick brown fox")
        page.fill("#max-tokens", "24")
        page.click("#send")
        page.wait_for_function("!document.getElementById('send').disabled", timeout=60_000)
        answer = page.locator(".turn.assistant")
        assert answer.count() == 1 and answer.inner_text().strip()
        kinds = page.eval_on_selector_all(".turn.assistant span", "spans => spans.map(s => s.className)")
        assert kinds and set(kinds) <= {"accepted", "resampled", "bonus", "target"}
        assert page.inner_text("#per-call") != "–" and page.inner_text("#speed") != "–"
        if os.environ.get("SPECDEC_PAGE_SCREENSHOT"):
            page.screenshot(path=Path(os.environ["SPECDEC_PAGE_SCREENSHOT"]), full_page=True)
        browser.close()
