"""``specdec generate`` / ``specdec demo``: stream the answer, accepted draft tokens highlighted."""

from __future__ import annotations

import argparse
import secrets
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specdec.decoders import BiLD, DecodingMethod, PlainDecoding, SpeculativeSampling, TandemGeneration
from specdec.drafters import make_drafter
from specdec.drafters.factory import SPECS_HINT, drafts_with_bita
from specdec.errors import InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int
from specdec.models import load_model
from specdec.models.packaged import default_drafter
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
        # without --compare there is no plain run to divide by
        speedup = f"{s.tokens_per_second / base.stats.tokens_per_second:.2f}x" if base else "-"
        alpha = f"{s.acceptance_rate:.2f}" if s.proposed_tokens else "-"
        table.add_row(
            name,
            str(s.new_tokens),
            f"{s.tokens_per_second:.1f}",
            speedup,
            alpha,
            f"{s.tokens_per_target_call:.2f}",
            str(s.target_calls),
            str(s.draft_calls),
        )
    return table


COMPILE_HELP = (
    "the fast engine: on CPU one-token steps and verify blocks run compiled with inductor's C++ GEMM kernels "
    "(about 2 minutes a graph at each start on a 2-core Xeon; plain decoding 1.7x the eager engine on a "
    "Cascade Lake Xeon), on a GPU replayed from CUDA graphs"
)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m", help="target: built-in name, HF folder or .gguf")
    parser.add_argument(
        "--drafter",
        default=None,
        help=f"{SPECS_HINT}; default: the method's (sps: the packaged SmolLM2's best measured drafter, "
        "prompt-lookup for other models; bild: prompt-only-lookup; tandem: the packaged SmolLM2 secondary; "
        "bita: prompt lookup, else the packaged SmolLM2 adapter)",
    )
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cache-dir", default=None, help="where converted models are cached")


def add_generate_arguments(parser: argparse.ArgumentParser, default_prompt: str | None = None) -> None:
    add_model_arguments(parser)
    parser.add_argument("prompt", nargs="?" if default_prompt else None, default=default_prompt)
    parser.add_argument(
        "--method",
        choices=tuple(METHODS),
        default=None,
        help="plain decoding, speculative sampling (default), Big Little Decoder (not lossless), "
        "Tandem + SPEED, BiTA",
    )
    parser.add_argument("--max-new-tokens", type=positive_int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-k", type=non_negative_int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument(
        "--gamma", default=None, help="draft length: an int, 'adaptive' (default) or 'heuristic'"
    )
    parser.add_argument(
        "--verify",
        choices=("coupled", "rejection"),
        default=None,
        help="sampled speculation: 'coupled' (default: same seed, same text as plain decoding) or "
        "'rejection' (Chen et al.; its text depends on the γ schedule, so with the adaptive γ, which "
        "follows timings, a seed does not reproduce it)",
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--stop", action="append", default=[], help="stop string (repeatable, non-empty)")
    parser.add_argument("--no-chat", action="store_true", help="don't apply the chat template")
    parser.add_argument(
        "--compare", action="store_true", help="also time plain decoding and print the speedup"
    )
    parser.add_argument("--compile", action="store_true", help=COMPILE_HELP)
    bild = parser.add_argument_group("--method bild (faster, not lossless)")
    bild.add_argument("--fallback", type=float, default=None, help="α_FB: hand over when max p < α_FB (0.5)")
    bild.add_argument(
        "--rollback", type=float, default=None, help="α_RB: replace a token when −log q > α_RB (3)"
    )
    bild.add_argument(
        "--max-small-tokens", type=positive_int, default=None, help="cap on consecutive small tokens (10)"
    )
    tandem = parser.add_argument_group("--method tandem")
    tandem.add_argument(
        "--standalone",
        action="store_true",
        help="not lossless: the secondary writes blocks of --gamma tokens; the target refreshes its states",
    )
    tandem.add_argument(
        "--no-free-token", action="store_true", help="standalone: every token the secondary's"
    )
    old = parser.add_argument_group("deprecated (use --method)")
    old.add_argument("--bild", action="store_true", help=argparse.SUPPRESS)
    old.add_argument("--tandem-standalone", action="store_true", help=argparse.SUPPRESS)
    old.add_argument("--no-speculative", action="store_true", help=argparse.SUPPRESS)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    add_generate_arguments(parser, default_prompt=DEMO_PROMPT)


# An editing request: the answer copies most of the prompt, the case prompt-lookup drafting is
# for. Open questions copy little and gain little on a CPU (see benchmarks/RESULTS.md, by task).
DEMO_PROMPT = (
    "Correct the spelling mistakes in this paragraph and return the corrected paragraph only:\n\n"
    "Speculative decoding lets a smal draft model guess several tokens ahead, and the large model "
    "checks all of them in a singel forward pass. When the guesses are rigth, many tokens are "
    "produced for the cost of one step of the large model, and the output stays exactly the same."
)


def run_demo(args: argparse.Namespace) -> None:
    """``generate --compare`` on the demo prompt (or the one given)."""
    args.compare = True
    run_generate(args)


#: ``--method``: the drafter each uses unless ``--drafter`` names one (the packaged ones are SmolLM2's).
METHODS = {
    "plain": None,
    "sps": "prompt-lookup",
    # Copying from the prompt only: lookup into the answer under BiLD's looser rule made texts loop.
    "bild": "prompt-only-lookup",
    "tandem": "int8:vocab-2048:tandem:smollm2-135m-tandem",
    # lookup in front: 1.43x our plain, the adapter alone 1.19x, in one run (LOOKUP_BITA_2026-11-30o.md)
    "bita": "lookup+bita:smollm2-135m-bita",
}
#: Options that belong to one method or a few: given with another, they are an error, not ignored.
OWNERS = {
    "fallback": ("bild",),
    "rollback": ("bild",),
    "max_small_tokens": ("bild",),
    "standalone": ("tandem",),
    "no_free_token": ("tandem",),
    "gamma": ("sps", "tandem"),
    "verify": ("sps", "tandem", "bita"),
    "drafter": ("sps", "bild", "tandem", "bita"),
}
DEPRECATED = {"bild": "bild", "tandem_standalone": "tandem", "no_speculative": "plain"}  # flag -> method


def chosen_method(args: argparse.Namespace) -> str:
    """``--method``, or what a deprecated flag (``--bild``, ``--tandem-standalone``, ``--no-speculative``)
    meant; two that disagree are an error."""
    named = {flag: method for flag, method in DEPRECATED.items() if getattr(args, flag)}
    wanted = set(named.values()) | ({args.method} if args.method else set())
    if len(wanted) > 1:
        flags = [f"--{f.replace('_', '-')}" for f in named] + (
            [f"--method {args.method}"] if args.method else []
        )
        raise InvalidArgumentError(f"{' and '.join(flags)} choose different methods: give one --method")
    for flag, method in named.items():
        print(f"specdec: --{flag.replace('_', '-')} is now --method {method}", file=sys.stderr)
    if args.tandem_standalone:
        args.standalone = True
    return wanted.pop() if wanted else "sps"


def method_from_args(args: argparse.Namespace) -> DecodingMethod:
    """The decoding method the options ask for, checked before anything is loaded; fills ``args.drafter``
    with the method's default drafter where none was given."""
    name = chosen_method(args)
    for option, owners in OWNERS.items():
        if getattr(args, option) not in (None, False) and name not in owners:
            flag = "--" + option.replace("_", "-")
            raise InvalidArgumentError(f"{flag} is an option of --method {' / '.join(owners)}, not of {name}")
    args.drafter = args.drafter or (default_drafter(args.model) if name == "sps" else METHODS[name])
    gamma = args.gamma or "adaptive"
    gamma = int(gamma) if gamma.isdigit() else gamma
    if name == "plain":
        return PlainDecoding()
    if name == "bild":
        return BiLD(
            0.5 if args.fallback is None else args.fallback,
            3.0 if args.rollback is None else args.rollback,
            10 if args.max_small_tokens is None else args.max_small_tokens,
        )
    if name == "tandem" and not {"tandem", "tandem+router"} & set(args.drafter.split(":")[:-1]):
        raise InvalidArgumentError(f"--method tandem needs a tandem:PATH drafter, got {args.drafter!r}")
    if name == "bita" and not drafts_with_bita(args.drafter):
        raise InvalidArgumentError(
            f"--method bita needs a bita:PATH or lookup+bita:PATH drafter, got {args.drafter!r}"
        )
    if args.standalone:
        if not isinstance(gamma, int):
            raise InvalidArgumentError(f"standalone Tandem needs an integer --gamma, got {gamma!r}")
        return TandemGeneration(gamma, free_token=not args.no_free_token)
    return SpeculativeSampling(gamma, args.verify or "coupled")


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
    with console.status("compiling the target's steps" if args.compile else "building the engine"):
        pipe = Pipeline(target.model, target.tokenizer, drafter=drafter, compile=args.compile)
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
    # Validates the input and warms what is timed below. Compiled, plain decoding's steps are graphs of their
    # own where the drafter reads the target's hidden states: they compile only when --compare times them.
    warm_up = ["plain"] if args.compare or drafter is None else []
    for warm in warm_up + ([method] if drafter is not None else []):
        pipe.generate(args.prompt, method=warm, **{**kwargs, "max_new_tokens": 4})
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
