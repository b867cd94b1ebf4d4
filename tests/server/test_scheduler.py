"""The engine thread: each job gets what it gets alone, cancelled jobs free their rows, bounded queue."""

import queue
import time

import pytest
import torch
from torch._dynamo.utils import counters

from specdec.decoders import PlainDecoding, SpeculativeSampling, StopCriteria
from specdec.drafters import PromptLookupDrafter
from specdec.engine import Engine
from specdec.pipeline import Pipeline, eos_token_ids
from specdec.sampling import SamplingConfig, row_keys
from specdec.server.scheduler import Job, QueueFullError, Scheduler, ShuttingDownError
from tiny import make_llama, make_tokenizer

TOK = make_tokenizer()
MODEL = make_llama(len(TOK), seed=3, layers=2)
EOS = eos_token_ids(MODEL, TOK)
PROMPTS = [
    TOK.encode(t) for t in ("the quick brown fox", "def add(a, b):", "once upon a time there", "the lazy")
]


def alone(prompt: list[int], max_new: int) -> list[int]:
    return Pipeline(MODEL, TOK).generate([prompt], max_new_tokens=max_new).token_ids[0]


def collect(jobs_out: queue.Queue, count: int, timeout: float = 60.0) -> dict[int, list]:
    """Each job's outputs until it finished (job index -> outputs)."""
    got: dict[int, list] = {}
    done, deadline = 0, time.monotonic() + timeout
    while done < count:
        index, out = jobs_out.get(timeout=max(0.1, deadline - time.monotonic()))
        assert not isinstance(out, Exception), out
        got.setdefault(index, []).append(out)
        done += out.finish_reason is not None
    return got


def make_jobs(outputs: queue.Queue, lengths: list[int], cap=None) -> list[Job]:
    keys = row_keys(list(range(len(lengths))), 1)
    return [
        Job(
            PROMPTS[i % len(PROMPTS)],
            SamplingConfig(),
            StopCriteria(n, EOS),
            keys[i],
            cap,
            lambda out, i=i: outputs.put((i, out)),
        )
        for i, n in enumerate(lengths)
    ]


@pytest.mark.parametrize(
    "speculative, compile",
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["plain", "sps", "plain-compiled", "sps-compiled"],
)
def test_every_job_gets_what_it_gets_alone(speculative, compile):
    """Also on a compiled engine (``serve --compile``): rows join and leave its static steps, and after
    the server's warm-up nothing is left to compile (a plain server's warm-up skips verify blocks)."""
    if compile:
        torch._dynamo.reset()  # what this case compiles, not what another left cached
    engine, outputs = Engine(MODEL, compile=compile, warm_up=False), queue.Queue()
    drafter = PromptLookupDrafter() if speculative else None
    if drafter is not None:
        drafter.attach(engine)
    method = SpeculativeSampling(3) if speculative else PlainDecoding()
    if compile:
        engine.warm_up_serving(widths=(1, 2) if speculative else (1,))
        graphs = counters["stats"]["unique_graphs"]
    scheduler = Scheduler(engine, drafter, method, max_batch=2)  # more jobs than rows: they queue
    scheduler.start()
    lengths = [5, 9, 3, 7, 6]
    scheduler.submit(make_jobs(outputs, lengths, cap=None if speculative else 0))
    got = collect(outputs, len(lengths))
    scheduler.stop()
    for i, n in enumerate(lengths):
        tokens = [t for out in got[i] for t in out.tokens]
        assert tokens == alone(PROMPTS[i % len(PROMPTS)], n)
        assert got[i][-1].finish_reason in ("length", "eos")
    assert scheduler.counts == (0, 0) and scheduler.loop is None  # the bookkeeping starts over
    if compile:
        assert counters["stats"]["unique_graphs"] == graphs


def test_a_cancelled_job_frees_its_row_and_the_rest_go_on():
    engine, outputs = Engine(MODEL), queue.Queue()
    scheduler = Scheduler(engine, None, PlainDecoding(), max_batch=4)
    jobs = make_jobs(outputs, [200, 6])
    scheduler.start()
    scheduler.submit(jobs)
    deadline = time.monotonic() + 30
    while outputs.qsize() < 2 and time.monotonic() < deadline:  # both have their first tokens
        time.sleep(0.001)
    scheduler.cancel([jobs[0]])
    got = collect(outputs, 1)  # the short job finishes; the cancelled one never does
    scheduler.stop()
    assert [t for out in got[1] for t in out.tokens] == alone(PROMPTS[1], 6)
    assert all(out.finish_reason is None for out in got[0])
    assert sum(len(out.tokens) for out in got[0]) < 200
    assert not scheduler.running and scheduler.loop is None and engine.batch_size == 0


def test_the_queue_is_bounded_and_closes_at_shutdown():
    scheduler = Scheduler(Engine(MODEL), None, PlainDecoding(), max_waiting=2)  # not started: jobs wait
    outputs = queue.Queue()
    scheduler.submit(make_jobs(outputs, [4, 4]))
    with pytest.raises(QueueFullError, match="waiting"):
        scheduler.submit(make_jobs(outputs, [4]))
    scheduler.start()
    collect(outputs, 2)
    scheduler.stop()
    with pytest.raises(ShuttingDownError):
        scheduler.submit(make_jobs(outputs, [4]))
