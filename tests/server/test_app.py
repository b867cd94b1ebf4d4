"""The HTTP server: OpenAI's formats (also through the official client), errors as OpenAI error objects,
limits, metrics, and the semantics speculation must not change (seeds, stop strings, finish reasons)."""

import json
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from fastapi.testclient import TestClient

from specdec.decoders import BiLD
from specdec.drafters import ModelDrafter, PromptLookupDrafter
from specdec.engine import Engine
from specdec.pipeline import Pipeline
from specdec.server import build_app
from tiny import make_llama, make_tokenizer

TOK = make_tokenizer()
MODEL = make_llama(len(TOK), seed=3, layers=2)
CHAT = [{"role": "user", "content": "the quick brown fox"}]


@pytest.fixture(scope="module")
def client():
    app = build_app(MODEL, TOK, drafter=PromptLookupDrafter(), model_name="tiny", max_body_bytes=4096)
    with TestClient(app) as client:
        yield client


@pytest.fixture(scope="module")
def locked():
    with TestClient(build_app(MODEL, TOK, model_name="tiny", api_key="sesame")) as client:
        yield client


def alone(messages, max_new: int) -> str:
    return Pipeline(MODEL, TOK).generate(messages, max_new_tokens=max_new).text


def events(response) -> list:
    lines = [line for line in response.text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def test_health_and_models(client):
    assert client.get("/health").json() == {"status": "ok"}
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == "tiny"


def test_chat_completion_is_the_greedy_text_with_usage_and_speculative_metrics(client):
    body = client.post(
        "/v1/chat/completions", json={"messages": CHAT, "max_tokens": 12, "temperature": 0}
    ).json()
    assert body["object"] == "chat.completion" and body["model"] == "tiny"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": alone(CHAT, 12)}
    assert body["choices"][0]["finish_reason"] in ("stop", "length")
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    spec = body["metrics"]["speculative_decoding"]
    assert set(spec) == {
        "mean_acceptance_length",
        "draft_acceptance_rate",
        "num_drafts",
        "num_draft_tokens",
        "num_accepted_draft_tokens",
        "acceptance_histogram",
    }
    assert sum(spec["acceptance_histogram"]) == spec["num_drafts"]


def test_the_stream_concatenates_to_the_whole_text_and_ends_with_usage(client):
    request = {"messages": CHAT, "max_tokens": 16, "temperature": 0}
    whole = client.post("/v1/chat/completions", json=request).json()
    chunks = events(
        client.post(
            "/v1/chat/completions", json=request | {"stream": True, "stream_options": {"include_usage": True}}
        )
    )
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]
    assert chunks[-2]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    pieces = [p for c in chunks if "specdec" in c for p in c["specdec"]["pieces"]]
    assert "".join(p[0] for p in pieces) == text
    assert {p[1] for p in pieces} <= {"accepted", "resampled", "bonus", "target"}


def test_completions_and_n_choices(client):
    body = client.post(
        "/v1/completions", json={"prompt": "the lazy", "max_tokens": 5, "n": 2, "temperature": 0}
    ).json()
    assert body["object"] == "text_completion" and len(body["choices"]) == 2
    assert body["choices"][0]["text"] == body["choices"][1]["text"]  # greedy: the same twice
    assert body["usage"]["completion_tokens"] <= 10


@pytest.mark.parametrize(
    ("request_body", "status", "words"),
    [
        ({"messages": CHAT, "stream_options": {"include_usage": True}}, 400, "stream_options"),
        ({"messages": CHAT, "temperature": -1}, 400, "temperature"),
        ({"messages": CHAT, "top_p": 0}, 400, "top_p"),
        ({"messages": []}, 400, "messages"),
        ({"messages": CHAT, "max_tokens": 10_000}, 400, "context"),
        ({"messages": [{"role": "user", "content": "fox " * 300}]}, 400, "context"),
        ({"messages": CHAT, "model": "gpt-9"}, 404, "gpt-9"),
        ({"messages": CHAT, "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
        ({"messages": CHAT, "speculative": {"method": "warp"}}, 400, "speculative"),
        ({"messages": CHAT, "speculative": {"drafter": "eagle"}}, 400, "'prompt-lookup'"),
        ({"messages": CHAT, "speculative": {"rollback_threshold": 1.0}}, 400, "not BiLD"),
        ({"messages": CHAT, "speculative": {"fallback_threshold": 1.5}}, 400, "fallback_threshold"),
    ],
)
def test_bad_requests_get_an_openai_error_saying_why(client, request_body, status, words):
    response = client.post("/v1/chat/completions", json=request_body)
    assert response.status_code == status
    error = response.json()["error"]
    assert words in error["message"] and error["code"] == status and error["type"]


def test_malformed_json_and_oversized_bodies(client):
    response = client.post(
        "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and "error" in response.json()
    big = {"messages": [{"role": "user", "content": "x" * 5000}]}
    response = client.post("/v1/chat/completions", json=big)
    assert response.status_code == 413 and "bytes" in response.json()["error"]["message"]


def test_the_api_key_guards_every_route_but_health(locked):
    assert locked.get("/health").status_code == 200
    assert locked.get("/v1/models").status_code == 401
    assert locked.post("/v1/chat/completions", json={"messages": CHAT}).json()["error"]["code"] == 401
    assert locked.get("/v1/models", headers={"Authorization": "Bearer sesame"}).status_code == 200


def test_a_seed_gives_the_same_text_with_speculation_on_or_off_and_whatever_runs_beside(client):
    sampled = {"messages": CHAT, "max_tokens": 20, "temperature": 1.0, "top_k": 40, "seed": 7}

    def text(extra: dict) -> str:
        return client.post("/v1/chat/completions", json=sampled | extra).json()["choices"][0]["message"][
            "content"
        ]

    alone_text = text({})
    assert text({"speculative": {"method": "off"}}) == alone_text
    with ThreadPoolExecutor(4) as pool:  # beside other requests in the same batch
        others = [pool.submit(text, {"seed": s}) for s in (1, 2)]
        together = pool.submit(text, {})
        assert together.result() == alone_text
        assert {o.result() for o in others} != {alone_text}  # the seed does matter (negative control)


def test_each_request_drafts_with_the_drafter_it_chose_and_gets_the_same_text():
    """A server with two drafters: requests choosing either (or none: the first) run in one batch, each
    gets the text plain decoding gives its seed, and the model-drafted one shows the model's drafts."""
    drafters = {
        "prompt-lookup": PromptLookupDrafter(),
        "model": ModelDrafter(make_llama(len(TOK), seed=7), TOK),
    }
    sampled = {"messages": CHAT, "max_tokens": 20, "temperature": 1.0, "top_k": 40, "seed": 7}
    with TestClient(build_app(MODEL, TOK, drafter=drafters, model_name="tiny")) as client:

        def ask(extra: dict) -> dict:
            return client.post("/v1/chat/completions", json=sampled | extra).json()

        plain = ask({"speculative": {"method": "off"}})
        with ThreadPoolExecutor(3) as pool:
            chosen = [pool.submit(ask, {"speculative": {"drafter": d}}) for d in ("model", "prompt-lookup")]
            default = pool.submit(ask, {})
            bodies = [c.result() for c in chosen] + [default.result()]
        texts = {b["choices"][0]["message"]["content"] for b in bodies}
        assert texts == {plain["choices"][0]["message"]["content"]}
        drafted = bodies[0]["metrics"]["speculative_decoding"]["num_draft_tokens"]
        assert drafted > 0 and plain["metrics"]["speculative_decoding"]["num_draft_tokens"] == 0
        error = ask({"speculative": {"drafter": "eagle"}})["error"]
        assert error["code"] == 400 and "['prompt-lookup', 'model']" in error["message"]


def test_a_bild_server_takes_each_requests_own_thresholds():
    """On a BiLD server, a request with α_RB 0 gets the target's own text and one with no rollback the
    small model's, side by side; a request without thresholds gets the server's."""
    small = ModelDrafter(make_llama(len(TOK), seed=7), TOK)
    method = BiLD(fallback_threshold=0.3, rollback_threshold=2.0)
    body = {"prompt": "the quick brown fox", "max_tokens": 16, "temperature": 0}
    with TestClient(build_app(MODEL, TOK, drafter=small, method=method, model_name="tiny")) as client:

        def ask(speculative: dict) -> str:
            return client.post("/v1/completions", json=body | {"speculative": speculative}).json()

        plain = ask({"method": "off"})["choices"][0]["text"]
        with ThreadPoolExecutor(3) as pool:
            strict = pool.submit(ask, {"rollback_threshold": 0.0})
            loose = pool.submit(ask, {"fallback_threshold": 0.0, "rollback_threshold": 1e9})
            default = pool.submit(ask, {})
            texts = [f.result()["choices"][0]["text"] for f in (strict, loose, default)]
    pipe = Pipeline(MODEL, TOK, drafter=small)
    loose_alone, default_alone = (
        pipe.generate(body["prompt"], method=m, max_new_tokens=16, chat=False).text
        for m in (BiLD(0.0, 1e9), method)
    )
    assert texts[0] == plain and texts[1] == loose_alone != plain and texts[2] == default_alone


def test_a_stop_string_never_leaks_even_inside_an_accepted_draft_or_at_max_tokens(client):
    """SGLang #31599's case: the stop completes inside a block of accepted draft tokens, or on the very
    token max_tokens ends on; text, token counts and finish_reason must all end at the stop."""
    request = {"messages": CHAT, "max_tokens": 24, "temperature": 0}
    full = client.post("/v1/chat/completions", json=request).json()
    text = full["choices"][0]["message"]["content"]
    ids = Pipeline(MODEL, TOK).generate(CHAT, max_new_tokens=24).token_ids[0]  # the server's own tokens
    assert TOK.decode(ids, skip_special_tokens=True) == text
    tried = 0
    for cut in (3, 8, len(ids) // 2):
        stop = TOK.decode(ids[cut : cut + 2])
        if not stop.strip() or stop not in text:
            continue
        expected, tried = text[: text.find(stop)], tried + 1
        for max_tokens in (24, cut + 2):
            body = client.post(
                "/v1/chat/completions", json=request | {"stop": stop, "max_tokens": max_tokens}
            ).json()
            assert body["choices"][0]["message"]["content"] == expected
            assert body["choices"][0]["finish_reason"] == "stop"
            assert body["usage"]["completion_tokens"] <= cut + 2
            streamed = events(
                client.post(
                    "/v1/chat/completions",
                    json=request | {"stop": stop, "max_tokens": max_tokens, "stream": True},
                )
            )
            assert "".join(c["choices"][0]["delta"].get("content", "") for c in streamed) == expected
    assert tried  # the case was exercised


def test_metrics_count_drafts_and_latencies(client):
    client.post("/v1/chat/completions", json={"messages": CHAT, "max_tokens": 8, "temperature": 0})
    text = client.get("/metrics").text
    for name in (
        "specdec_spec_decode_num_drafts_total",
        "specdec_spec_decode_num_draft_tokens_total",
        "specdec_spec_decode_num_accepted_tokens_total",
        "specdec_num_requests_running",
        "specdec_time_to_first_token_seconds_bucket",
        "specdec_inter_token_latency_seconds_bucket",
    ):
        assert name in text


def test_the_official_openai_client_works_unmodified(client):
    api = openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=client)
    reply = api.chat.completions.create(model="tiny", messages=CHAT, max_tokens=8, temperature=0)
    assert reply.choices[0].message.content == alone(CHAT, 8)
    stream = api.chat.completions.create(
        model="tiny",
        messages=CHAT,
        max_tokens=8,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        == reply.choices[0].message.content
    )
    assert chunks[-1].usage.completion_tokens == reply.usage.completion_tokens
    with pytest.raises(openai.BadRequestError, match="temperature"):
        api.chat.completions.create(model="tiny", messages=CHAT, temperature=5)


def test_the_page_is_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "pieces" in client.get("/static/app.js").text


def test_compile_builds_the_fast_engine_and_warms_it_up(monkeypatch):
    """``serve --compile`` reaches the pipeline and runs the warm-up before the app exists (what the
    warm-up leaves to compile: tests/server/test_scheduler.py)."""
    import specdec.server as server

    class HiddenReader(PromptLookupDrafter):
        target_hidden_layers = (1, 2)

    built, warmed = [], []

    class Recording(Pipeline):
        def __init__(self, *args, compile: bool = False, **kwargs):
            built.append(compile)
            super().__init__(*args, **kwargs)  # eager: compiling a tiny model here would only cost time

    monkeypatch.setattr(server, "Pipeline", Recording)
    monkeypatch.setattr(Engine, "warm_up_serving", lambda engine, *a, **kw: warmed.append((a, kw)))
    build_app(MODEL, TOK, drafter=HiddenReader(), model_name="tiny", compile=True)
    build_app(MODEL, TOK, drafter=HiddenReader(), model_name="tiny")
    build_app(MODEL, TOK, model_name="tiny", compile=True)
    assert built == [True, False, True]
    # batches with the hidden states its drafter reads, its verify blocks too; plain decoding has none
    assert [call for call in warmed if call[1]["batched"]] == [  # the pipelines warm one row themselves
        (((1, 2),), {"widths": (1, 2), "batched": True, "embeds": False}),
        (((),), {"widths": (1,), "batched": True, "embeds": False}),
    ]
