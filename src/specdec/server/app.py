"""The HTTP side of ``specdec serve`` (FastAPI): OpenAI's routes and stream format as vLLM serves
them, errors as OpenAI error objects, an optional API key, a body-size limit, ``/metrics`` for
Prometheus and the provenance page at ``/``."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from specdec.errors import InvalidArgumentError, SpecDecError
from specdec.server.protocol import ChatCompletionRequest, CompletionRequest, SamplingRequest, error_body
from specdec.server.scheduler import QueueFullError, ShuttingDownError
from specdec.server.service import Run, Service

STATIC = resources.files("specdec.server") / "static"


class BodyLimit:
    """Answer 413 to a request body over ``limit`` bytes, before the route reads it (ASGI middleware:
    counts the bytes as they arrive, so a missing or false Content-Length does not get past it)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise HTTPException(413, f"request body over {self.limit} bytes")
            return message

        await self.app(scope, counted, send)

    async def _refuse(self, send) -> None:
        body = json.dumps(error_body(f"request body over {self.limit} bytes", 413)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


def create_app(service: Service, *, api_key: str | None = None, max_body_bytes: int = 1 << 20) -> FastAPI:
    """The app serving ``service``; its scheduler thread runs while the app does."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.scheduler.start()
        yield
        service.scheduler.stop()

    def authorised(authorization: str | None = Header(default=None)) -> None:
        if api_key is None:
            return
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not secrets.compare_digest(given.encode(), api_key.encode()):
            raise HTTPException(401, "a valid API key is needed (Authorization: Bearer KEY)")

    app = FastAPI(title="specdec", lifespan=lifespan, docs_url=None, redoc_url=None)
    add_error_handlers(app)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    guarded = [Depends(authorised)]

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/models", dependencies=guarded)
    async def models() -> dict:
        model = {"id": service.model_name, "object": "model", "created": 0, "owned_by": "specdec"}
        return {"object": "list", "data": [model | {"max_model_len": service.context}]}

    @app.get("/metrics", dependencies=guarded)
    async def metrics() -> Response:
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/chat/completions", dependencies=guarded)
    async def chat_completions(body: ChatCompletionRequest):
        return await respond(service, body, "chatcmpl")

    @app.post("/v1/completions", dependencies=guarded)
    async def completions(body: CompletionRequest):
        return await respond(service, body, "cmpl")

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return (STATIC / "index.html").read_text()

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


def add_error_handlers(app: FastAPI) -> None:
    """Every error as OpenAI's error object: bad bodies and values 400, queue full 429, stopping 503."""

    def answer(status: int, message: str, param: str | None = None) -> JSONResponse:
        return JSONResponse(error_body(message, status, param), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return answer(400, f"{where}: {first.get('msg')}" if where else str(first.get("msg")), where or None)

    @app.exception_handler(SpecDecError)
    async def specdec_error(request: Request, err: SpecDecError) -> JSONResponse:
        status = (
            429 if isinstance(err, QueueFullError) else 503 if isinstance(err, ShuttingDownError) else 400
        )
        return answer(status, str(err))

    @app.exception_handler(Exception)
    async def failed(request: Request, err: Exception) -> JSONResponse:
        return answer(500, f"the server failed: {type(err).__name__}: {err}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        return answer(err.status_code, str(err.detail))


async def respond(service: Service, body: SamplingRequest, kind: str):
    if body.stream_options is not None and not body.stream:
        raise InvalidArgumentError("stream_options is only allowed when stream is true")
    if body.model not in (None, service.model_name):
        raise HTTPException(
            404, f"the model {body.model!r} does not exist; this server serves {service.model_name!r}"
        )
    run = service.start(body, service.encode(body), kind)
    if body.stream:
        usage = body.stream_options is not None and body.stream_options.include_usage
        return StreamingResponse(stream(run, kind, usage), media_type="text/event-stream")
    async for _ in run.pieces():
        pass
    return completed(run, kind, service.model_name)


def completed(run: Run, kind: str, model: str) -> dict:
    """The whole response of a finished run."""
    if kind == "chatcmpl":
        obj = "chat.completion"
        choices = [
            {"index": c.index, "message": {"role": "assistant", "content": c.text.text}, "logprobs": None}
            | {"finish_reason": c.finish_reason}
            for c in run.choices
        ]
    else:
        obj = "text_completion"
        choices = [
            {"index": c.index, "text": c.text.text, "logprobs": None, "finish_reason": c.finish_reason}
            for c in run.choices
        ]
    metrics = {"speculative_decoding": run.spec.as_dict()}
    return {"id": run.id, "object": obj, "created": run.created, "model": model, "choices": choices} | {
        "usage": run.usage(),
        "metrics": metrics,
    }


async def stream(run: Run, kind: str, usage: bool) -> AsyncIterator[str]:
    """Server-sent events: a role chunk per choice (chat), then text chunks (each with its tokens'
    provenance), the finish reason, the usage chunk when asked for, and ``[DONE]``."""
    model, obj = run.service.model_name, "chat.completion.chunk" if kind == "chatcmpl" else "text_completion"
    head = {"id": run.id, "object": obj, "created": run.created, "model": model}
    extra = {"usage": None} if usage else {}

    def chunk(index: int, text: str | None, finish: str | None, role: bool = False, ours=None) -> str:
        if kind == "chatcmpl":
            delta = ({"role": "assistant"} if role else {}) | ({"content": text} if text is not None else {})
            choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": index, "text": text or "", "logprobs": None, "finish_reason": finish}
        body = head | {"choices": [choice]} | extra | ({"specdec": ours} if ours else {})
        return f"data: {json.dumps(body)}\n\n"

    # specdec's extension on a text chunk: its pieces with their tokens' provenance, and the counts of
    # the steps since the last chunk of that choice (steps whose text was all held back included)
    steps = {c.index: {"steps": 0, "tokens": 0, "drafted": 0, "accepted": 0} for c in run.choices}
    try:
        if kind == "chatcmpl":
            for choice in run.choices:
                yield chunk(choice.index, "", None, role=True)
        async for choice, pieces, step in run.pieces():
            counts = steps[choice.index]
            counts["steps"] += 1
            for key, value in step.items():
                counts[key] += value
            text = "".join(piece for piece, _ in pieces)
            if text:
                yield chunk(choice.index, text, None, ours={"pieces": pieces, **counts})
                steps[choice.index] = dict.fromkeys(counts, 0)
            if choice.finish_reason is not None:
                yield chunk(choice.index, None if kind == "chatcmpl" else "", choice.finish_reason)
        if usage:
            final = head | {
                "choices": [],
                "usage": run.usage(),
                "metrics": {"speculative_decoding": run.spec.as_dict()},
            }
            yield f"data: {json.dumps(final)}\n\n"
    except SpecDecError as err:
        yield f"data: {json.dumps(error_body(str(err), 400))}\n\n"
    yield "data: [DONE]\n\n"
