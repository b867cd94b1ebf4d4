"""Load test of ``specdec serve`` over HTTP on 127.0.0.1 (bounded in requests and time).

1. **Correctness under load**: ``--streams`` concurrent streaming requests with mixed lengths and
   sampling settings (greedy, seeded sampling); every one must complete and equal the same request
   sent alone afterwards (greedy: identical; seeded: identical), so no response was mixed with another;
   the server's resident memory is read before, after the burst and at the end.
2. **Speed**: closed loops of c clients (each finished request replaced by the next) at each
   ``--concurrency``, plain (``speculative.method = off``), speculative and plain again on the same
   server, in ``--rounds`` rounds (order rotated; :mod:`specdec.benchmarks.server_load_report`): aggregate
   tokens/s, time to first token and inter-token latency (p50 / p99), acceptance from the responses'
   own speculative metrics; at concurrency 1 the same requests also through the library, once the
   server has stopped (:mod:`specdec.benchmarks.library_baseline`), so the two speedups sit side by side.

Writes JSON and markdown; the server is started here (``--model``, ``--drafter``) or given (``--url``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx

from specdec.benchmarks.library_baseline import library_speedup
from specdec.benchmarks.outputs import refuse_taken
from specdec.benchmarks.report import machine_info
from specdec.benchmarks.server_load_report import markdown, rotated
from specdec.errors import InvalidArgumentError
from specdec.inputs import positive_int
from specdec.models.packaged import default_drafter, drafter_digest

QUESTIONS = [
    "Explain what a hash table is.",
    "Write a haiku about the sea.",
    "What is 17 times 23?",
    "Give three tips for learning a language.",
    "Summarise the plot of Romeo and Juliet.",
    "How do vaccines work?",
    "Write a Python function that reverses a string.",
    "What causes seasons on Earth?",
]


def request_mix(count: int, seed: int = 0) -> list[dict]:
    """Mixed requests: lengths 8-64 tokens, greedy or seeded sampling at several settings."""
    rng = random.Random(seed)
    mix = []
    for i in range(count):
        body = {
            "messages": [{"role": "user", "content": rng.choice(QUESTIONS)}],
            "max_tokens": rng.choice([8, 16, 32, 64]),
        }
        if i % 2:
            body |= {
                "temperature": rng.choice([0.7, 1.0]),
                "top_p": rng.choice([0.9, 1.0]),
                "seed": rng.randrange(2**31),
            }
        else:
            body |= {"temperature": 0}
        mix.append(body)
    return mix


async def stream_one(client: httpx.AsyncClient, body: dict) -> dict:
    """Send one streaming request; its text, arrival times of its chunks and its final usage/metrics."""
    started, times, text, final = time.perf_counter(), [], [], None
    payload = body | {"stream": True, "stream_options": {"include_usage": True}}
    async with client.stream("POST", "/v1/chat/completions", json=payload) as response:
        if response.status_code != 200:
            return {"error": f"{response.status_code}: {(await response.aread()).decode()[:200]}"}
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                return {"error": chunk["error"]["message"]}
            if chunk["choices"]:
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    text.append(piece)
                    times.append(time.perf_counter() - started)
            elif chunk.get("usage"):
                final = chunk
    return {
        "text": "".join(text),
        "times": times,
        "seconds": time.perf_counter() - started,
        "tokens": final["usage"]["completion_tokens"],
        "spec": final["metrics"]["speculative_decoding"],
    }


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


async def burst(url: str, mix: list[dict], pid: int | None) -> dict:
    """All of ``mix`` at once, then each alone; how many failed, how many differ from alone, memory."""
    limits = httpx.Limits(max_connections=len(mix) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        before = rss_mib(pid)
        together = await asyncio.gather(*(stream_one(client, body) for body in mix))
        after = rss_mib(pid)
        alone = [await stream_one(client, body) for body in mix]
    failed = sum("error" in r for r in together)
    mixed = sum(
        "error" not in a and "error" not in b and a["text"] != b["text"]
        for a, b in zip(together, alone, strict=True)
    )
    return {
        "streams": len(mix),
        "failed": failed,
        "differ_from_alone": mixed,
        "rss_mib": [before, after, rss_mib(pid)],
        "errors": [r["error"] for r in together if "error" in r][:5],
    }


async def closed_loop(url: str, mix: list[dict], concurrency: int, method: str) -> dict:
    """``concurrency`` clients working through ``mix`` (each with ``speculative.method``)."""
    queue, results = list(mix), []
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:

        async def worker():
            while queue:
                body = queue.pop(0)
                results.append(await stream_one(client, body | {"speculative": {"method": method}}))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    ok = [r for r in results if "error" not in r]
    ttft = [r["times"][0] for r in ok if r["times"]]
    itl = [(r["times"][-1] - r["times"][0]) / max(1, r["tokens"] - 1) for r in ok if len(r["times"]) > 1]
    drafted = sum(r["spec"]["num_draft_tokens"] for r in ok)
    accepted = sum(r["spec"]["num_accepted_draft_tokens"] for r in ok)
    return {
        "concurrency": concurrency,
        "method": method,
        "requests": len(results),
        "failed": len(results) - len(ok),
        "tokens_per_s": sum(r["tokens"] for r in ok) / wall,
        "wall_s": wall,
        "ttft_p50_s": quantile(ttft, 0.5),
        "ttft_p99_s": quantile(ttft, 0.99),
        "itl_p50_s": quantile(itl, 0.5),
        "itl_p99_s": quantile(itl, 0.99),
        "draft_acceptance_rate": accepted / drafted if drafted else None,
        "texts": [r.get("text") for r in results],
    }


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_drafter(model: str, drafter: str | None) -> str:
    """The drafter a load run serves: the one asked for, else the packaged target's best measured one
    (what ``generate`` speculates with), else prompt lookup (needs nothing trained)."""
    return drafter or default_drafter(model)


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    command = [
        sys.executable,
        "-m",
        "specdec",
        "serve",
        "--model",
        args.model,
        "--port",
        str(args.port),
        "--max-batch",
        str(args.max_batch),
        "--max-waiting",
        str(max(256, args.streams + 8)),
        "--drafter",
        args.drafter,
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{args.port}"
    try:
        wait_until_healthy(url, 300, server)
    except InvalidArgumentError:
        server.kill()
        raise
    return server, url


def wait_until_healthy(url: str, seconds: float, process: subprocess.Popen | None = None) -> None:
    """Wait for a server's ``/health`` to answer 200; a clear error if ``process`` (the server, when
    started here) exits first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            detail = process.stderr.read()[-2000:] if process.stderr else f"exit {process.returncode}"
            raise InvalidArgumentError(f"the server did not start: {detail}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise InvalidArgumentError(f"the server did not answer /health within {seconds:g} s")


def run_from_args(args: argparse.Namespace) -> dict:
    refuse_taken(args.out, args.markdown)
    if args.rounds < 1:
        raise InvalidArgumentError(f"--rounds must be >= 1, got {args.rounds}")
    if args.url:  # someone else's server: record what the caller says it serves, no guess
        args.drafter = args.drafter or "(as started at --url)"
    else:
        args.drafter = server_drafter(args.model, args.drafter)
    server, url = (None, args.url) if args.url else start_server(args)
    try:
        pid = server.pid if server else None
        report = {"machine": machine_info(), "model": args.model, "drafter": args.drafter}
        report["drafter_digest"] = drafter_digest(args.drafter) if args.drafter and not args.url else None
        report["rounds"] = args.rounds
        report["burst"] = asyncio.run(burst(url, request_mix(args.streams), pid))
        print(json.dumps(report["burst"]), flush=True)
        report["loops"] = []
        for concurrency in args.concurrency:
            mix = request_mix(max(args.min_requests, 2 * concurrency), seed=concurrency)
            for turn in range(args.rounds):
                for name, method in rotated(turn):
                    row = asyncio.run(closed_loop(url, mix, concurrency, method))
                    report["loops"].append(row | {"label": name, "round": turn})
                    print(json.dumps({k: v for k, v in row.items() if k != "texts"}), flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(60)
    if 1 in args.concurrency and not args.url:  # with the server gone: the CPU to itself
        mix = request_mix(max(args.min_requests, 2), seed=1)
        report["library_c1"] = library_speedup(args.model, args.drafter, mix)
        print(json.dumps(report["library_c1"]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    Path(args.markdown).write_text(markdown(report))
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--drafter",
        default=None,
        help="the server's drafter (default: the packaged target's best measured one, else prompt lookup)",
    )
    parser.add_argument("--url", default=None, help="a running server instead of starting one")
    parser.add_argument("--port", type=int, default=int(os.environ.get("SPECDEC_LOAD_PORT", "8765")))
    parser.add_argument("--max-batch", type=positive_int, default=32)
    parser.add_argument("--streams", type=positive_int, default=200, help="concurrent streams of the burst")
    parser.add_argument("--concurrency", type=positive_int, nargs="+", default=[1, 8, 16, 32])
    parser.add_argument("--min-requests", type=positive_int, default=8)
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="rounds of plain, speculative and plain again per concurrency",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--markdown", required=True)
