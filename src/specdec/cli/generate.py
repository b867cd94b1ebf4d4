"""``specdec generate`` / ``specdec demo``: stream the answer, accepted draft tokens highlighted."""

from __future__ import annotations

import argparse
import secrets

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specdec.decoders import BiLD, DecodingMethod, PlainDecoding, SpeculativeSampling, TandemGeneration
from specdec.drafters import make_drafter
from specdec.errors import InvalidArgumentError
from specdec.models import load_model
from specdec.pipeline import GenerationResult, Pipeline

DRAFT_STYLE = "bold green"


class TokenPrinter:
    """Prints streamed tokens; a token's text is the growth of the decoded string it causes."""

    def __init__(self, console: Console, tokenizer):
        self.console, self.tokenizer = console, tokenizer
        self.tokens: list[int] = []
        self.text = ""

    def __call__(self, row: int, tokens: list[int], from_draft: list[bool]) -> None:
        for token, drafted in zip(tokens, from_draft, strict=True):
            self.tokens.append(token)
            text = self.tokenizer.decode(self.tokens, skip_special_tokens=True)
            piece, self.text = text[len(self.text) :], text
            self.console.print(Text(piece, style=DRAFT_STYLE if drafted else ""), end="", soft_wrap=True)


def _stats_table(results: dict[str, GenerationResult]) -> Table:
    table = Table(title="generation stats")
    for col in (
        "run",
        "tokens",
        "tok/s",
        "speedup",
        "α",
        "tokens/target call",
        "target calls",
        "draft calls",
    ):
        table.add_column(col, justify="right")
    base = results.get("plain")
    for name, res in results.items():
        s = res.stats
        speedup = s.tokens_per_second / base.stats.tokens_per_second if base else float("nan")
        alpha = f"{s.acceptance_rate:.2f}" if s.proposed_tokens else "-"
        table.add_row(
            name,
            str(s.new_tokens),
            f"{s.tokens_per_second:.1f}",
            f"{speedup:.2f}x",
            alpha,
            f"{s.tokens_per_target_call:.2f}",
            str(s.target_calls),
            str(s.draft_calls),
        )
    return table


def method_from_args(args: argparse.Namespace) -> DecodingMethod:
    if args.no_speculative:
        return PlainDecoding()
    if args.bild:
        return BiLD(args.fallback, args.rollback, args.max_small_tokens)
    if args.tandem_standalone:
        if not args.gamma.isdigit():
            raise InvalidArgumentError(f"standalone Tandem needs an integer --gamma, got {args.gamma!r}")
        return TandemGeneration(int(args.gamma), free_token=not args.no_free_token)
    return SpeculativeSampling(int(args.gamma) if args.gamma.isdigit() else args.gamma, args.verify)


def run_generate(args: argparse.Namespace) -> None:
    console = Console(highlight=False)
    method = method_from_args(args)  # validated before anything is loaded
    load = dict(dtype=args.dtype, device=args.device, cache_dir=args.cache_dir)
    with console.status(f"loading {args.model}"):
        target = load_model(args.model, **load)
    drafter = None
    if method.needs_drafter:
        with console.status(f"building drafter {args.drafter}"):
            drafter = make_drafter(args.drafter, target.model, target.tokenizer, **load)
    pipe = Pipeline(target.model, target.tokenizer, drafter=drafter)
    # Both runs of --compare draw with the same seed, so even sampled texts can be compared.
    seed = secrets.randbits(32) if args.seed is None and args.compare else args.seed
    kwargs = dict(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=seed,
        stop=args.stop,
        chat=not args.no_chat,
    )
    pipe.generate(args.prompt, method="plain", **{**kwargs, "max_new_tokens": 4})  # warm-up, validates input
    results: dict[str, GenerationResult] = {}
    if args.compare or not method.needs_drafter:
        with console.status("plain decoding (baseline)"):
            results["plain"] = pipe.generate(args.prompt, method="plain", **kwargs)
        if not method.needs_drafter:
            console.print(results["plain"].text)
    if drafter is not None:
        console.print(f"[dim]prompt:[/dim] {args.prompt}")
        console.print(
            Text("tokens from the draft accepted by the target are shown like this", style=DRAFT_STYLE)
        )
        printer = TokenPrinter(console, target.tokenizer)
        results[f"{method.name} ({drafter.name})"] = pipe.generate(
            args.prompt, method=method, stream=printer, **kwargs
        )
        console.print()
    console.print(_stats_table(results))
    for name, res in results.items():
        console.print(f"[dim]{name}:[/dim] {res.stats}")
    if "plain" in results and drafter is not None and method.lossless:
        same = results["plain"].token_ids == list(results.values())[-1].token_ids
        how = "greedy output" if args.temperature == 0 else f"sampled output (seed {seed})"
        console.print(f"{how} identical to plain decoding: {same}")
