"""The server's engine thread: one step-wise decoding loop that requests join and leave.

Requests wait in a bounded queue; between two steps the scheduler drops the cancelled ones (a client
that went away), admits waiting ones into free rows (up to ``max_batch``), runs one step and hands
each request its new tokens through the callback it came with. The web framework's event loop and
this thread only share the queue, the cancelled flags and those callbacks, so a slow client never
holds up the batch. When no request is running the loop is dropped, and the next request starts a
fresh one (its per-row bookkeeping does not grow without bound).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from specdec.decoders import Request, StopCriteria
from specdec.decoders.loop import DraftVerifyLoop, StepOutput
from specdec.decoders.method import DecodingMethod
from specdec.drafters import Drafter
from specdec.engine import Engine
from specdec.errors import SpecDecError
from specdec.sampling import SamplingConfig


class QueueFullError(SpecDecError):
    """More requests are waiting than the server queues (answered with 429)."""


class ShuttingDownError(SpecDecError):
    """The server is stopping and takes no new requests (answered with 503)."""


@dataclass
class Job:
    """One sequence to generate (a request with ``n`` choices is ``n`` jobs) and where its tokens go.

    ``deliver`` is called on the engine thread with each step's output for this job, or with an
    exception if the step failed; it must only hand them over (e.g. to an asyncio queue)."""

    prompt: list[int]
    sampling: SamplingConfig
    stop: StopCriteria
    key: int
    draft_cap: int | None
    deliver: Callable[[StepOutput | Exception], None]
    cancelled: bool = False
    route: str | None = None  # the drafter this job chose, when the server runs several
    thresholds: tuple[float, float] | None = None  # its own BiLD (α_FB, α_RB), on a BiLD server
    arrived: float = field(default_factory=time.perf_counter)


class Scheduler:
    """Runs ``method`` (with ``drafter``) on ``engine`` for the jobs submitted, in a thread of its own."""

    def __init__(
        self,
        engine: Engine,
        drafter: Drafter | None,
        method: DecodingMethod,
        *,
        max_batch: int = 32,
        max_waiting: int = 256,
        on_step: Callable[[int, int, float | None], None] | None = None,
    ):
        self.engine, self.drafter, self.method = engine, drafter, method
        self.max_batch, self.max_waiting = max_batch, max_waiting
        self.on_step = on_step  # (running, waiting, step seconds or None) after each pass: metrics
        self.waiting: deque[Job] = deque()
        self.running: dict[int, Job] = {}  # the loop's row -> job
        self.loop: DraftVerifyLoop | None = None
        self._wake = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="specdec-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, jobs: list[Job]) -> None:
        """Queue ``jobs`` (all or none)."""
        with self._wake:
            if self._stopping:
                raise ShuttingDownError("the server is shutting down")
            if len(self.waiting) + len(jobs) > self.max_waiting:
                raise QueueFullError(f"{len(self.waiting)} requests are waiting already; try again later")
            self.waiting.extend(jobs)
            self._wake.notify()

    def cancel(self, jobs: list[Job]) -> None:
        """Stop these jobs; a running one frees its row before the next step."""
        with self._wake:
            for job in jobs:
                job.cancelled = True
            self._wake.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Take no more requests, let the running and waiting ones finish (up to ``timeout`` seconds,
        then cancel them) and end the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.cancel([*self.waiting, *self.running.values()])
            self._thread.join()

    @property
    def counts(self) -> tuple[int, int]:
        """(running, waiting) requests."""
        return len(self.running), len(self.waiting)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not (self.waiting or self.running or self._stopping):
                    self._wake.wait()
                if self._stopping and not (self.waiting or self.running):
                    return
            seconds = None
            try:
                self._drop_cancelled()
                self._admit()
                if self.running:
                    seconds = self._step()
            except Exception as err:  # a failed step fails its requests, not the server
                self._fail(err)
            if self.on_step is not None:
                self.on_step(*self.counts, seconds)

    def _drop_cancelled(self) -> None:
        with self._wake:
            for job in [j for j in self.waiting if j.cancelled]:
                self.waiting.remove(job)
            gone = [row for row, job in self.running.items() if job.cancelled]
        if gone:
            self.loop.abort(gone)
            for row in gone:
                del self.running[row]
            if not self.running:
                self.loop = None

    def _admit(self) -> None:
        while len(self.running) < self.max_batch:
            with self._wake:
                if not self.waiting:
                    return
                job = self.waiting.popleft()
            try:
                self.running[self._join(job)] = job
            except (
                Exception
            ) as err:  # this request cannot join (e.g. no memory for its cache): it alone fails
                job.deliver(err)

    def _join(self, job: Job) -> int:
        """Prefill ``job`` into the running loop (a new loop if none runs); its row."""
        if self.loop is not None:
            (row,) = self.loop.admit(
                [job.prompt], [job.key], job.stop, job.sampling, job.draft_cap, job.route, job.thresholds
            )
            return row
        request = Request(
            [job.prompt],
            job.sampling,
            job.stop,
            [job.key],
            draft_cap=job.draft_cap,
            route=job.route,
            thresholds=job.thresholds,
        )
        self.loop = self.method.loop(self.engine, self.drafter, request)
        return 0

    def _step(self) -> float:
        """One step of every running job; its seconds."""
        began = time.perf_counter()
        outputs = self.loop.step()
        for out in outputs:
            job = self.running[out.row]
            if out.finish_reason is not None:
                del self.running[out.row]
            job.deliver(out)
        if not self.running:
            self.loop = None  # a fresh loop (and bookkeeping) for the next request
        return time.perf_counter() - began

    def _fail(self, err: Exception) -> None:
        """Fail every running job with ``err`` and start over with a fresh loop."""
        for job in self.running.values():
            job.deliver(err)
        self.running.clear()
        self.loop = None
