"""``specdec serve``: an OpenAI-compatible server over the step-wise decoding loop (continuous batching,
per-request sampling, seeds and stop strings, speculative decoding with its statistics per request).

Needs the ``serve`` extra (FastAPI, uvicorn, prometheus-client)."""

from __future__ import annotations

from collections.abc import Mapping

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.decoders import PlainDecoding
from specdec.decoders.method import DecodingMethod
from specdec.drafters import Drafter
from specdec.errors import InvalidArgumentError
from specdec.inputs import check_count
from specdec.pipeline import Pipeline


def build_app(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    drafter: Drafter | Mapping[str, Drafter] | None = None,
    method: DecodingMethod | None = None,
    model_name: str = "specdec",
    api_key: str | None = None,
    max_batch: int = 32,
    max_waiting: int = 256,
    max_body_bytes: int = 1 << 20,
    compile: bool = False,
):
    """The FastAPI app serving ``model`` (with ``drafter`` and ``method``: SpS by default when there is a
    drafter, plain decoding otherwise); run it with uvicorn. Its engine thread starts with the app.

    ``drafter`` may be several by name (``{spec: drafter}``): each request chooses one in its
    ``speculative.drafter`` (default: the first), all of them drafting in the same batch. ``compile``: the
    engine's fast steps (:class:`~specdec.pipeline.Pipeline`'s ``compile``), built before the app exists."""
    from specdec.decoders.methods import make_method
    from specdec.drafters.routed import RoutedDrafter
    from specdec.server.app import create_app
    from specdec.server.metrics import Metrics
    from specdec.server.scheduler import Scheduler
    from specdec.server.service import Service

    if tokenizer is None:
        raise InvalidArgumentError("the server needs the model's tokenizer")
    for name, value in (
        ("max_batch", max_batch),
        ("max_waiting", max_waiting),
        ("max_body_bytes", max_body_bytes),
    ):
        check_count(name, value)
    if isinstance(drafter, Mapping):
        names = list(drafter)
        drafter = RoutedDrafter(drafter) if len(drafter) > 1 else next(iter(drafter.values()), None)
    else:
        names = [] if drafter is None else [getattr(drafter, "name", type(drafter).__name__)]
    pipeline = Pipeline(model, tokenizer, drafter=drafter, compile=compile)
    method = make_method(method, drafter is not None) if drafter is not None else (method or PlainDecoding())
    if method.needs_drafter and drafter is None:
        raise InvalidArgumentError(f"method {method.name!r} needs a drafter")
    if compile:  # the graphs the first requests need, compiled before they arrive
        pipeline.warm_up()
    metrics = Metrics()
    scheduler = Scheduler(
        pipeline.engine,
        drafter,
        method,
        max_batch=max_batch,
        max_waiting=max_waiting,
        on_step=metrics.on_step,
    )
    service = Service(pipeline, scheduler, metrics, model_name, names)
    return create_app(service, api_key=api_key, max_body_bytes=max_body_bytes)
