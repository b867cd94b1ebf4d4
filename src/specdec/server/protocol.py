"""The OpenAI request bodies the server accepts (pydantic models, checked on arrival) and the error
body it answers with. Fields follow OpenAI's API as vLLM implements it; ``speculative`` is specdec's
extension. Unknown fields are ignored, as OpenAI's own server does with fields it does not know."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SpeculativeOptions(BaseModel):
    """How one request is decoded: ``off`` (plain decoding for it) or the server's speculative method,
    with at most ``max_draft_tokens`` draft tokens verified per step, drafted by ``drafter`` (one of the
    server's ``--drafter`` specs; default: its first); on a BiLD server, its own fallback (α_FB) and
    rollback (α_RB) thresholds (default: the server's)."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["off", "plain", "server"] = "server"
    max_draft_tokens: int | None = Field(default=None, ge=0, le=64)
    drafter: str | None = Field(default=None, min_length=1)
    fallback_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    rollback_threshold: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)


class StreamOptions(BaseModel):
    include_usage: bool = False


class SamplingRequest(BaseModel):
    """What completions and chat completions share."""

    model: str | None = None
    n: int = Field(default=1, ge=1, le=16)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = Field(default=-1, ge=-1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = Field(default=None, validate_default=True)  # a list once validated
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    stream: bool = False
    stream_options: StreamOptions | None = None
    speculative: SpeculativeOptions = Field(default_factory=SpeculativeOptions)

    @field_validator("stop")
    @classmethod
    def _stops(cls, stop: str | list[str] | None) -> list[str]:
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        if len(stops) > 4:
            raise ValueError("at most 4 stop sequences")
        if any(not s for s in stops):
            raise ValueError("stop sequences must be non-empty")
        return stops

    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


class ContentPart(BaseModel):
    type: Literal["text"]
    text: str


class Message(BaseModel):
    role: Literal["system", "user", "assistant", "developer"]
    content: str | list[ContentPart]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class ChatCompletionRequest(SamplingRequest):
    messages: list[Message] = Field(min_length=1)


class CompletionRequest(SamplingRequest):
    prompt: str | list[int] = Field(min_length=1)
    max_tokens: int | None = Field(default=16, ge=1)  # OpenAI's completions default


def error_body(message: str, status: int, param: str | None = None) -> dict:
    """OpenAI's error object."""
    kind = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 413: "BadRequestError"}
    kind |= {429: "RateLimitError", 503: "ServiceUnavailableError"}
    return {
        "error": {
            "message": message,
            "type": kind.get(status, "InternalServerError"),
            "param": param,
            "code": status,
        }
    }
