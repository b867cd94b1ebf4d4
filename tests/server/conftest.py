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


def start_server(app) -> tuple[uvicorn.Server, threading.Thread, str]:
    """Serve ``app`` on a free port of 127.0.0.1 in a thread; the server, its thread and its URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_until_healthy(base, 30)
    return server, thread, base


def tiny_app():
    """The app of a tiny model with prompt lookup."""
    tok = make_tokenizer()
    return build_app(make_llama(len(tok), seed=3), tok, drafter=PromptLookupDrafter(), model_name="tiny")


@pytest.fixture
def live_server():
    """A fresh server of the tiny app, for a test that stops it itself; stopped after the test if not."""
    started = start_server(tiny_app())
    yield started
    server, thread, _ = started
    server.should_exit = True
    thread.join(30)


@pytest.fixture(scope="module")
def url():
    """The URL of a server of the tiny app, shared by the module's tests."""
    server, thread, base = start_server(tiny_app())
    yield base
    server.should_exit = True
    thread.join(30)
