"""A request in flight: a client that goes away (its stream closed early) cancels its jobs; one that reads to
the end does not."""

import asyncio

from specdec.decoders import PlainDecoding
from specdec.decoders.loop import StepOutput
from specdec.engine import Engine
from specdec.pipeline import Pipeline
from specdec.server.metrics import Metrics
from specdec.server.protocol import ChatCompletionRequest
from specdec.server.scheduler import Scheduler
from specdec.server.service import Service
from tiny import make_llama, make_tokenizer

TOK = make_tokenizer()
MODEL = make_llama(len(TOK), seed=3, layers=2)


def started_run():
    """A request submitted to a scheduler that is not running: its outputs are fed by hand."""
    scheduler = Scheduler(Engine(MODEL), None, PlainDecoding())
    service = Service(Pipeline(MODEL, TOK), scheduler, Metrics(), "tiny")
    body = ChatCompletionRequest(messages=[{"role": "user", "content": "the quick brown fox"}], max_tokens=50)
    return service.start(body, service.encode(body), "chatcmpl")


def test_closing_the_stream_early_cancels_the_request():
    async def main():
        run = started_run()
        run.queue.put_nowait((0, StepOutput(0, [87], ["target"], None)))
        pieces = run.pieces()
        await pieces.__anext__()
        await pieces.aclose()  # what the server does when the client disconnects
        return run

    run = asyncio.run(main())
    assert all(choice.job.cancelled for choice in run.choices)


def test_a_request_read_to_its_end_is_not_cancelled():
    async def main():
        run = started_run()
        run.queue.put_nowait((0, StepOutput(0, [87], ["target"], "length")))
        return run, [piece async for piece in run.pieces()]

    run, pieces = asyncio.run(main())
    assert len(pieces) == 1 and not any(choice.job.cancelled for choice in run.choices)
    assert run.choices[0].finish_reason == "length" and run.usage()["completion_tokens"] == 1
