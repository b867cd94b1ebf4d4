"""Graceful shutdown and chunked bodies, on live servers (uvicorn in a thread, 127.0.0.1)."""

import json
import threading

import httpx
import pytest


def test_shutdown_lets_a_running_stream_finish_and_then_takes_no_requests(live_server):
    server, thread, base = live_server
    body = {"messages": [{"role": "user", "content": "count"}], "max_tokens": 200, "stream": True}
    chunks, at_exit, asked = [], [], threading.Event()

    def read() -> None:
        with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    chunks.append(line.removeprefix("data: "))
                    asked.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert asked.wait(30)
    at_exit.append(len(chunks))
    server.should_exit = True  # what SIGINT / SIGTERM do
    reader.join(60)
    thread.join(60)
    assert not thread.is_alive() and not reader.is_alive()
    assert at_exit[0] < len(chunks) - 1  # the stream was still running when the shutdown began ...
    finish = [json.loads(c)["choices"][0]["finish_reason"] for c in chunks[:-1] if json.loads(c)["choices"]]
    assert chunks[-1] == "[DONE]" and finish[-1] in ("length", "stop")  # ... and it completed, not cut
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base}/health", timeout=5)


def test_a_chunked_body_over_the_limit_is_refused_with_413(url):
    """No Content-Length to check up front: the limit counts the bytes as they arrive."""

    def pieces():
        for _ in range(40):
            yield b" " * 65536  # 2.5 MiB of whitespace, over the default 1 MiB

    response = httpx.post(
        f"{url}/v1/chat/completions",
        content=pieces(),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 413
    assert "bytes" in response.json()["error"]["message"]
