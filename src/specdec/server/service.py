"""From an OpenAI request to jobs for the scheduler, and from their step outputs back to OpenAI's
response objects and stream chunks. Independent of the web framework (the routes in ``app`` only
parse, authorise and serialise), so it is tested without HTTP."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from specdec.decoders import BiLD, StopCriteria
from specdec.decoders.blocks import ACCEPTED
from specdec.decoders.loop import StepOutput
from specdec.drafters.routed import RoutedDrafter
from specdec.errors import InvalidArgumentError, PromptError
from specdec.pipeline import Pipeline, eos_token_ids
from specdec.sampling import SamplingConfig, row_keys
from specdec.server.metrics import Metrics, SpecStats
from specdec.server.protocol import ChatCompletionRequest, SamplingRequest, SpeculativeOptions
from specdec.server.scheduler import Job, Scheduler
from specdec.server.text import FINISH_REASONS, TextStream


@dataclass
class Choice:
    """One choice's progress."""

    index: int
    text: TextStream
    job: Job
    tokens: int = 0
    finish_reason: str | None = None
    last: float | None = None  # when its previous tokens arrived


class Service:
    """Turns requests into jobs on ``scheduler`` and their outputs into OpenAI objects."""

    def __init__(
        self,
        pipeline: Pipeline,
        scheduler: Scheduler,
        metrics: Metrics,
        model_name: str,
        drafter_names: Sequence[str] = (),
    ):
        self.pipeline, self.scheduler, self.metrics = pipeline, scheduler, metrics
        self.model_name, self.drafter_names = model_name, list(drafter_names)
        self.context = pipeline.engine.max_positions
        self.eos = eos_token_ids(pipeline.model, pipeline.tokenizer)

    def encode(self, body: SamplingRequest) -> list[int]:
        """The prompt's token ids: the chat template over the messages, or the prompt text / ids."""
        if isinstance(body, ChatCompletionRequest):
            messages = [{"role": m.role, "content": m.text()} for m in body.messages]
            ids = self.pipeline.encode(messages, chat=True)
        elif isinstance(body.prompt, str):
            ids = self.pipeline.encode(body.prompt, chat=False)
        else:
            ids = list(body.prompt)
            if any(not 0 <= t < self.pipeline.vocab_size for t in ids):
                raise InvalidArgumentError(f"prompt token ids must be in [0, {self.pipeline.vocab_size})")
        if not ids:
            raise PromptError("the prompt is empty")
        return ids

    def budget(self, body: SamplingRequest, prompt_tokens: int) -> int:
        """max_tokens, checked against the context window (all of what is left when not given)."""
        wanted = body.token_limit()
        if self.context is None:
            return wanted or 1024
        if prompt_tokens >= self.context:
            raise PromptError(
                f"the prompt has {prompt_tokens} tokens; the model's context is {self.context} tokens"
            )
        room = self.context - prompt_tokens
        if wanted is not None and wanted > room:
            raise PromptError(
                f"max_tokens is {wanted} but the prompt ({prompt_tokens} tokens) leaves {room} of the "
                f"model's {self.context}-token context"
            )
        return wanted or room

    def jobs(self, body: SamplingRequest, prompt: list[int], deliver) -> list[Job]:
        """One job per choice; ``deliver(index, output)`` receives their outputs (on the engine thread)."""
        top_k = 0 if body.top_k in (-1, 0) else body.top_k
        sampling = SamplingConfig(temperature=body.temperature, top_k=top_k, top_p=body.top_p)
        stop = StopCriteria(
            self.budget(body, len(prompt)), self.eos, tuple(body.stop), self.pipeline.tokenizer.decode
        )
        seed = secrets.randbits(63) if body.seed is None else body.seed
        keys = row_keys([seed], body.n)
        options = body.speculative
        cap = 0 if options.method in ("off", "plain") else options.max_draft_tokens
        route, thresholds = self.route(options.drafter), self.thresholds(options)
        return [
            Job(prompt, sampling, stop, keys[i], cap, partial(deliver, i), route=route, thresholds=thresholds)
            for i in range(body.n)
        ]

    def thresholds(self, options: SpeculativeOptions) -> tuple[float, float] | None:
        """A request's own BiLD (α_FB, α_RB), the server's where it gives one only; None where it gives
        neither."""
        fallback, rollback = options.fallback_threshold, options.rollback_threshold
        if fallback is None and rollback is None:
            return None
        method = self.scheduler.method
        if not isinstance(method, BiLD):
            raise InvalidArgumentError(
                "speculative.fallback_threshold / rollback_threshold: this server decodes with "
                f"{method.name!r}, not BiLD (start it with --bild FALLBACK ROLLBACK)"
            )
        return (
            method.fallback_threshold if fallback is None else fallback,
            method.rollback_threshold if rollback is None else rollback,
        )

    def route(self, drafter: str | None) -> str | None:
        """The drafter a request chose, checked against the server's; None for its default (or only) one."""
        if drafter is None:
            return None
        if drafter not in self.drafter_names:
            raise InvalidArgumentError(
                f"speculative.drafter: no drafter {drafter!r} on this server; it has {self.drafter_names}"
            )
        return drafter if isinstance(self.scheduler.drafter, RoutedDrafter) else None

    def start(self, body: SamplingRequest, prompt: list[int], kind: str) -> Run:
        """Submit the request's jobs; the :class:`Run` that follows them."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        jobs = self.jobs(body, prompt, lambda i, out: loop.call_soon_threadsafe(queue.put_nowait, (i, out)))
        decode = partial(self.pipeline.tokenizer.decode, skip_special_tokens=True)  # no end-of-turn marker
        run = Run(
            id=f"{kind}-{uuid.uuid4().hex}",
            created=int(time.time()),
            prompt_tokens=len(prompt),
            choices=[Choice(i, TextStream(decode, body.stop), job) for i, job in enumerate(jobs)],
            queue=queue,
            service=self,
        )
        self.scheduler.submit(jobs)
        self.metrics.prompt_tokens.inc(len(prompt) * len(jobs))
        return run


@dataclass
class Run:
    """One request in flight: its choices, their statistics, and the queue their outputs arrive on."""

    id: str
    created: int
    prompt_tokens: int
    choices: list[Choice]
    queue: asyncio.Queue
    service: Service
    spec: SpecStats = field(default_factory=SpecStats)
    started: float = field(default_factory=time.perf_counter)

    @property
    def completion_tokens(self) -> int:
        return sum(c.tokens for c in self.choices)

    def usage(self) -> dict:
        prompt = self.prompt_tokens * len(self.choices)
        total = prompt + self.completion_tokens
        return {"prompt_tokens": prompt, "completion_tokens": self.completion_tokens, "total_tokens": total}

    async def pieces(self) -> AsyncIterator[tuple[Choice, list[list[str]], dict]]:
        """(choice, its new text as [text, provenance] pieces, the step's counts) as tokens arrive, with
        a last one per choice when it finishes. Closing the iteration early (a client gone) cancels the
        request's jobs."""
        open_ = len(self.choices)
        try:
            while open_:
                index, out = await self.queue.get()
                if isinstance(out, Exception):
                    raise out
                choice = self.choices[index]
                step = {"tokens": len(out.tokens), "drafted": out.drafted}
                yield choice, self._take(choice, out), step | {"accepted": out.provenance.count(ACCEPTED)}
                if choice.finish_reason is not None:
                    open_ -= 1
        finally:
            if open_:
                self.service.scheduler.cancel([c.job for c in self.choices])

    def _take(self, choice: Choice, out: StepOutput) -> list[list[str]]:
        """Count one step's output; its text, piece by piece: the text each token made safe to send,
        with the token's provenance (text held back for a possible stop string goes with a later token)."""
        metrics, now = self.service.metrics, time.perf_counter()
        if choice.last is None and out.tokens:
            metrics.ttft.observe(now - self.started)
        metrics.on_output(out, None if choice.last is None else now - choice.last)
        self.spec.add(out)
        choice.last, choice.tokens = now, choice.tokens + len(out.tokens)
        final = out.finish_reason is not None
        if final:
            choice.finish_reason = FINISH_REASONS.get(out.finish_reason, out.finish_reason)
            metrics.finished.labels(finished_reason=choice.finish_reason).inc()
        pieces = [[choice.text.push([t]), kind] for t, kind in zip(out.tokens, out.provenance, strict=True)]
        if final:  # what was held back for a stop string that never came
            pieces.append(
                [choice.text.push([], final=True), out.provenance[-1] if out.provenance else "target"]
            )
        return [piece for piece in pieces if piece[0]]
