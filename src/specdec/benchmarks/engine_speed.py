"""``specdec bench engine``: plain decoding speed of random-weight models beside the bandwidth bound.

A decode step's cost does not depend on what the weights say, so a random-weight model of a real
model's shape measures the engine on any machine — a lent GPU included — without sending a model
over. For each shape, in one run with interleaved rounds: HF ``generate`` (greedy), our engine
eager (lean forward, packed linears where supported), with ``--engines eager,compiled`` with its
one-token and verify steps compiled (``Engine.compile_steps(one_token=True)``), and on CUDA with
``graphs``: every step padded to one width and replayed from a CUDA graph (``Engine.capture_graphs``),
and ``compiled-graphs``: the same with the model under ``torch.compile`` (what ``compile=True`` gives on
CUDA).

Decode speed is (N − 1) / (T(N) − T(1)) for N new tokens: the prefill cancels. The bound is the
device's measured copy bandwidth over the weight bytes a step reads (every parameter once: a tied
output head counts once, an untied input embedding table is not read); the KV cache (short here)
is left out, so the bound is slightly optimistic. Greedy outputs are compared with HF's token for
token: random weights give flat logits, so the output head is widened (×8) as in the unit tests'
tiny models, which changes nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specdec.benchmarks.engine_speed_report import markdown
from specdec.benchmarks.outputs import add_output_arguments, claim_outputs
from specdec.benchmarks.report import machine_info
from specdec.decoders.stats import sync_device
from specdec.engine import Engine
from specdec.engine.static_steps import STATIC_WIDTHS
from specdec.errors import InvalidArgumentError
from specdec.inputs import positive_int
from specdec.models.loading import resolve_device, resolve_dtype
from specdec.pipeline import Pipeline

# Published shapes (config.json values); "tiny" is for tests and smoke runs.
SHAPES: dict[str, dict] = {
    "smollm2-135m": dict(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        rope_theta=100000.0,
        tie_word_embeddings=True,
    ),
    "llama-3.2-1b": dict(
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        rope_theta=500000.0,
        tie_word_embeddings=True,
    ),
    "tiny": dict(
        vocab_size=320,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    ),
}
ENGINES = ("eager", "compiled", "graphs", "compiled-graphs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shapes", default="smollm2-135m", help=f"comma-separated: {', '.join(SHAPES)}")
    parser.add_argument(
        "--engines",
        default="eager",
        help="ours to run, comma-separated: eager, compiled, graphs, compiled-graphs (the last two on CUDA)",
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N")
    parser.add_argument(
        "--graph-width",
        type=positive_int,
        default=STATIC_WIDTHS,
        help="tokens every graphed step is padded to",
    )
    parser.add_argument("--dtype", default="float32", help="float32, bfloat16, float16")
    parser.add_argument("--prompt-tokens", type=positive_int, default=128)
    parser.add_argument("--new-tokens", type=positive_int, default=32)
    parser.add_argument(
        "--repeats", type=positive_int, default=3, help="interleaved rounds; medians are reported"
    )
    parser.add_argument("--no-hf", action="store_true", help="skip HF generate")
    add_output_arguments(parser, "engine_speed")


def random_model(shape: str, device: torch.device, dtype: torch.dtype) -> LlamaForCausalLM:
    """A random-weight Llama of ``SHAPES[shape]`` (a name the CLI has checked)."""
    config = LlamaConfig(**SHAPES[shape], max_position_embeddings=4096, eos_token_id=None, bos_token_id=None)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype).eval()
    model.generation_config.eos_token_id = None  # every run writes exactly the tokens asked for
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes one decode step reads: every parameter once, bar an untied input embedding table."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    embeddings = model.get_input_embeddings().weight
    if embeddings is not model.get_output_embeddings().weight:
        total -= embeddings.numel() * embeddings.element_size()
    return total


def copy_bandwidth(device: torch.device, nbytes: int, repeats: int = 5) -> float:
    """Bytes per second a device-to-device copy moves (read + write), median of ``repeats``."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    times = []
    for _ in range(repeats + 1):
        sync_device(device)
        start = time.perf_counter()
        dst.copy_(src)
        sync_device(device)
        times.append(time.perf_counter() - start)
    return 2 * nbytes / statistics.median(times[1:])


def _runners(
    model, engines: list[str], with_hf: bool, graph_width: int = STATIC_WIDTHS
) -> tuple[dict, float | None, dict[str, Engine]]:
    """name -> generate(prompt ids, n) -> new token ids; the (last) compiled engine's build time; the
    engines that replay CUDA graphs, by runner name."""
    runners, build_s, graphed = {}, None, {}

    def hf(ids: list[int], n: int) -> list[int]:
        x = torch.tensor([ids], device=model.device)
        with torch.inference_mode():
            out = model.generate(
                input_ids=x,
                attention_mask=torch.ones_like(x),
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
            )
        return out[0, len(ids) :].tolist()

    if with_hf:
        runners["hf-plain"] = hf
    for engine in engines:
        started = time.perf_counter()
        pipe = Pipeline(model)
        if engine == "compiled":
            pipe.engine.compile_steps(one_token=True)
            build_s = time.perf_counter() - started
        if engine == "graphs":  # captured on first use, in the warm-up
            pipe.engine.capture_graphs(graph_width)
        if engine == "compiled-graphs":  # compiled now, captured on first use
            pipe.engine.capture_graphs(graph_width, compile=True)
            build_s = time.perf_counter() - started
        if pipe.engine.graphs is not None:
            graphed[f"ours-{engine}"] = pipe.engine
        runners[f"ours-{engine}"] = lambda ids, n, pipe=pipe: pipe.generate(
            ids, method="plain", max_new_tokens=n
        ).token_ids[0]
    return runners, build_s, graphed


def replay_seconds(engine: Engine, repeats: int = 50) -> float:
    """Median time of one replay of a graph the engine captured: the step's GPU time alone, without
    the host work around it (masks, copies, choosing the token, stopping checks)."""
    graph = next(iter(engine.graphs.graphs.values())).graph
    times = []
    for _ in range(repeats):
        sync_device(engine.device)
        start = time.perf_counter()
        graph.replay()
        sync_device(engine.device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(shape: str, engines: list[str], args, device: torch.device, dtype: torch.dtype) -> dict:
    model = random_model(shape, device, dtype)
    runners, build_s, graphed = _runners(model, engines, not args.no_hf, args.graph_width)
    prompt = torch.randint(
        0, model.config.vocab_size, (args.prompt_tokens,), generator=torch.Generator().manual_seed(1)
    ).tolist()
    for run in runners.values():  # warm-up at both timed lengths: allocation, compiles, graph captures
        run(prompt, 1)
    outputs = {name: run(prompt, args.new_tokens) for name, run in runners.items()}
    times: dict[str, dict[int, list[float]]] = {name: {1: [], args.new_tokens: []} for name in runners}
    for _ in range(args.repeats):  # interleaved: drift on a shared machine hits every runner alike
        for name, run in runners.items():
            for n in (1, args.new_tokens):
                sync_device(device)
                start = time.perf_counter()
                tokens = run(prompt, n)
                sync_device(device)
                times[name][n].append(time.perf_counter() - start)
                if n == args.new_tokens:
                    outputs[name] = tokens
    nbytes = weight_bytes(model)
    bandwidth = copy_bandwidth(device, min(1 << 30, max(1 << 26, nbytes)))
    reference = outputs.get("hf-plain", outputs[next(iter(outputs))])
    rows = {}
    for name in runners:
        full, one = statistics.median(times[name][args.new_tokens]), statistics.median(times[name][1])
        rows[name] = {  # None: noise swamped the decode steps (T(N) <= T(1)); more --repeats or tokens
            "decode_tok_s": (args.new_tokens - 1) / (full - one) if full > one else None,
            "seconds_full": full,
            "seconds_one": one,
            "identical_to_first": outputs[name] == reference,
        }
    bound = bandwidth / nbytes
    for row in rows.values():
        row["share_of_bound"] = row["decode_tok_s"] / bound if row["decode_tok_s"] else None
    for name, engine in graphed.items():
        rows[name]["graph_replay_ms"] = 1e3 * replay_seconds(engine)
    params = sum(p.numel() for p in model.parameters())
    return {
        "parameters": params,
        "weight_bytes": nbytes,
        "copy_bandwidth_gb_s": bandwidth / 1e9,
        "bound_tok_s": bound,
        "compiled_build_seconds": build_s,
        "runners": rows,
    }


def run_from_args(args: argparse.Namespace) -> dict:
    claim_outputs(args, "engine_speed")
    device, dtype = resolve_device(args.device), resolve_dtype(args.dtype)
    shapes = [s for s in args.shapes.split(",") if s]
    engines = [e for e in args.engines.split(",") if e]
    if not engines or set(engines) - set(ENGINES):
        raise InvalidArgumentError(
            f"--engines takes some of {', '.join(ENGINES)}, comma-separated; got {args.engines!r}"
        )
    if {"graphs", "compiled-graphs"} & set(engines) and device.type != "cuda":
        raise InvalidArgumentError("--engines graphs and compiled-graphs need --device cuda (CUDA graphs)")
    for shape in shapes:
        if shape not in SHAPES:
            raise InvalidArgumentError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    if args.new_tokens < 2 or args.prompt_tokens < 1 or args.repeats < 1:
        raise InvalidArgumentError("--new-tokens must be >= 2, --prompt-tokens and --repeats >= 1")
    if not 1 <= args.graph_width <= STATIC_WIDTHS:
        raise InvalidArgumentError(f"--graph-width must be in 1..{STATIC_WIDTHS}")
    report = {
        "machine": machine_info(),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "func"},
        "results": {shape: measure(shape, engines, args, device, dtype) for shape in shapes},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(markdown(report))
    print(args.markdown.read_text())
    return report
