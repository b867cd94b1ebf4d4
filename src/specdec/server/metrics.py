"""What the server counts: per-request speculative statistics (vLLM's field names, in each response)
and the Prometheus metrics at ``/metrics`` (the counters peers agree on: drafts, draft tokens,
accepted tokens, accepted tokens per draft position; plus the queue and the latencies)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from specdec.decoders.blocks import ACCEPTED
from specdec.decoders.loop import StepOutput

LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)


@dataclass
class SpecStats:
    """One request's speculative decoding, summed over its choices."""

    num_drafts: int = 0  # steps that verified draft tokens for it
    num_draft_tokens: int = 0
    num_accepted_draft_tokens: int = 0
    histogram: list[int] = field(default_factory=list)  # [k]: drafts of which k tokens were accepted

    def add(self, out: StepOutput) -> None:
        if not out.drafted:
            return
        accepted = out.provenance.count(ACCEPTED)
        self.num_drafts += 1
        self.num_draft_tokens += out.drafted
        self.num_accepted_draft_tokens += accepted
        self.histogram += [0] * (accepted + 1 - len(self.histogram))
        self.histogram[accepted] += 1

    def as_dict(self) -> dict:
        """vLLM's ``metrics.speculative_decoding`` object; the mean acceptance length counts the target's
        own token of each drafting step (1 + accepted per draft)."""
        drafts, tokens, accepted = self.num_drafts, self.num_draft_tokens, self.num_accepted_draft_tokens
        return {
            "mean_acceptance_length": 1.0 + accepted / drafts if drafts else 0.0,
            "draft_acceptance_rate": accepted / tokens if tokens else 0.0,
            "num_drafts": drafts,
            "num_draft_tokens": tokens,
            "num_accepted_draft_tokens": accepted,
            "acceptance_histogram": self.histogram,
        }


class Metrics:
    """The server's Prometheus metrics, in a registry of its own (several apps in one process, as in
    tests, do not collide)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.drafts = Counter(
            "specdec_spec_decode_num_drafts", "Draft-and-verify steps, per request row", registry=registry
        )
        self.draft_tokens = Counter(
            "specdec_spec_decode_num_draft_tokens", "Draft tokens verified", registry=registry
        )
        self.accepted = Counter(
            "specdec_spec_decode_num_accepted_tokens", "Draft tokens accepted", registry=registry
        )
        self.accepted_per_pos = Counter(
            "specdec_spec_decode_num_accepted_tokens_per_pos",
            "Draft tokens accepted at each draft position",
            ["position"],
            registry=registry,
        )
        self.generated = Counter("specdec_generation_tokens", "Tokens generated", registry=registry)
        self.prompt_tokens = Counter("specdec_prompt_tokens", "Prompt tokens admitted", registry=registry)
        self.finished = Counter(
            "specdec_request_success", "Finished requests", ["finished_reason"], registry=registry
        )
        self.running = Gauge(
            "specdec_num_requests_running", "Sequences in the running batch", registry=registry
        )
        self.waiting = Gauge("specdec_num_requests_waiting", "Sequences waiting for a row", registry=registry)
        self.ttft = Histogram(
            "specdec_time_to_first_token_seconds",
            "Arrival to first token",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.itl = Histogram(
            "specdec_inter_token_latency_seconds",
            "Time between tokens (a step's tokens share its wait)",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.step_seconds = Histogram(
            "specdec_step_seconds", "One decoding step", buckets=LATENCY_BUCKETS, registry=registry
        )

    def on_step(self, running: int, waiting: int, seconds: float | None) -> None:
        """After each pass of the engine thread (``seconds``: its step's, None when it only dropped
        cancelled requests)."""
        self.running.set(running)
        self.waiting.set(waiting)
        if seconds is not None:
            self.step_seconds.observe(seconds)

    def on_output(self, out: StepOutput, gap: float | None) -> None:
        """Count one step's output for one sequence; ``gap``: seconds since its previous tokens (None
        for its first)."""
        self.generated.inc(len(out.tokens))
        if gap is not None:
            for _ in out.tokens:
                self.itl.observe(gap / max(1, len(out.tokens)))
        if out.drafted:
            accepted = out.provenance.count(ACCEPTED)
            self.drafts.inc()
            self.draft_tokens.inc(out.drafted)
            self.accepted.inc(accepted)
            for position in range(accepted):
                self.accepted_per_pos.labels(position=str(position)).inc()
