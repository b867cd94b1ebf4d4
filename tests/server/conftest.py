"""A live server on 127.0.0.1 (uvicorn in a thread) for the tests that talk HTTP to it."""

import socket
import threading

import pytest

pytest.importorskip("fastapi", reason="the server tests need the 'serve' extra (pip install -e '.[serve]')")

import uvicorn

from specdec.benchmarks.server_load import wait_until_healthy
from specdec.drafters import PromptLookupDrafter
from specdec.server import build_app
from tiny import make_llama, make_tokenizer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def url():
    """The URL of a server of a tiny model with prompt lookup, for the module's tests."""
    tok = make_tokenizer()
    app = build_app(make_llama(len(tok), seed=3), tok, drafter=PromptLookupDrafter(), model_name="tiny")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_until_healthy(base, 30)
    yield base
    server.should_exit = True
    thread.join(30)
