"""Screenshot of the chat page answering one prompt with the real model: ``specdec serve`` started here
on 127.0.0.1, Debian's chromium driven by Playwright.

    python benchmarks/serve_page.py --drafter prompt-lookup --out benchmarks/results/serve-page.png
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from playwright.sync_api import sync_playwright

from specdec.benchmarks.server_load import wait_until_healthy

PROMPT = "Rewrite this sentence in the passive voice: The committee approved the new budget on Monday."


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--drafter", default="prompt-lookup")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    command = [sys.executable, "-m", "specdec", "serve", "--model", args.model, "--port", str(args.port)]
    server = subprocess.Popen([*command, "--drafter", args.drafter], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{args.port}"
    try:
        wait_until_healthy(url, 300, server)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.goto(url + "/")
            page.fill("#prompt", PROMPT)
            page.fill("#max-tokens", "96")
            page.click("#send")
            page.wait_for_function("!document.getElementById('send').disabled", timeout=120_000)
            page.screenshot(path=args.out, full_page=True)
            print(page.inner_text("#stats"))
            browser.close()
    finally:
        server.terminate()
        server.wait(60)


if __name__ == "__main__":
    main()
