"""``specdec`` command line: generate (and the demo), bench, sweep, train and eval-draft."""

from __future__ import annotations

import argparse
import sys

from specdec.errors import SpecDecError

# An editing request: the answer copies most of the prompt, the case prompt-lookup drafting is
# for. Open questions copy little and gain little on a CPU (see BENCHMARKS.md, by task).
DEMO_PROMPT = (
    "Correct the spelling mistakes in this paragraph and return the corrected paragraph only:\n\n"
    "Speculative decoding lets a smal draft model guess several tokens ahead, and the large model "
    "checks all of them in a singel forward pass. When the guesses are rigth, many tokens are "
    "produced for the cost of one step of the large model, and the output stays exactly the same."
)


def _add_model_args(parser: argparse.ArgumentParser) -> None:
    from specdec.drafters import DRAFTER_SPECS

    parser.add_argument("--model", default="smollm2-135m", help="target: built-in name, HF folder or .gguf")
    parser.add_argument("--drafter", default="prompt-lookup", help=f"drafter: {DRAFTER_SPECS}")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cache-dir", default=None, help="where converted models are cached")


def _add_generate_args(parser: argparse.ArgumentParser, default_prompt: str | None) -> None:
    _add_model_args(parser)
    parser.add_argument("prompt", nargs="?" if default_prompt else None, default=default_prompt)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--gamma", default="adaptive", help="draft length: an int, 'adaptive' or 'heuristic'")
    parser.add_argument(
        "--verify",
        choices=("coupled", "rejection"),
        default="coupled",
        help="sampled SpS: 'coupled' (same seed, same text as plain decoding) or 'rejection' (Chen et al.)",
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--stop", action="append", default=[], help="stop string (repeatable, non-empty)")
    parser.add_argument("--no-chat", action="store_true", help="don't apply the chat template")
    parser.add_argument("--no-speculative", action="store_true", help="plain decoding only")
    parser.add_argument(
        "--compare", action="store_true", help="also time plain decoding and print the speedup"
    )
    bild = parser.add_argument_group("Big Little Decoder (faster, not lossless)")
    bild.add_argument("--bild", action="store_true", help="decode with BiLD instead of lossless SpS")
    bild.add_argument("--fallback", type=float, default=0.5, help="α_FB: hand over when max p < α_FB")
    bild.add_argument("--rollback", type=float, default=3.0, help="α_RB: replace a token when −log q > α_RB")
    bild.add_argument("--max-small-tokens", type=int, default=10, help="cap on consecutive small tokens")
    tandem = parser.add_argument_group("standalone Tandem (faster, not lossless; --drafter tandem:PATH)")
    tandem.add_argument(
        "--tandem-standalone",
        action="store_true",
        help="the Tandem secondary writes blocks of --gamma tokens, the target only refreshes its states",
    )
    tandem.add_argument(
        "--no-free-token", action="store_true", help="every token the secondary's (not the primary's last)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec", description="Speculative decoding for HF causal LMs")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="generate text, marking accepted draft tokens")
    _add_generate_args(gen, default_prompt=None)
    demo = sub.add_parser("demo", help="answer a chat prompt with and without speculation, print the speedup")
    _add_generate_args(demo, default_prompt=DEMO_PROMPT)
    bench = sub.add_parser("bench", help="Spec-Bench speed benchmark against HF generate")
    from specdec.benchmarks.specbench import add_arguments
    from specdec.cli.train import (
        add_eval_arguments,
        add_export_arguments,
        add_router_arguments,
        add_tandem_arguments,
        add_train_arguments,
    )

    add_arguments(bench)
    from specdec.benchmarks.engine_speed import add_arguments as add_engine_speed_arguments

    add_engine_speed_arguments(
        sub.add_parser(
            "bench-engine", help="plain decoding speed of random-weight models vs HF and the bandwidth bound"
        )
    )
    from specdec.benchmarks.serving import add_arguments as add_serving_arguments

    add_serving_arguments(
        sub.add_parser(
            "bench-serving",
            help="continuous batching: requests arriving over time, plain vs speculative, by concurrency",
        )
    )
    from specdec.benchmarks.server_load import add_arguments as add_server_load_arguments

    add_server_load_arguments(
        sub.add_parser(
            "bench-server", help="load test of specdec serve over HTTP: a burst, then plain vs speculative"
        )
    )
    from specdec.cli.serve import add_serve_arguments

    add_serve_arguments(sub.add_parser("serve", help="an OpenAI-compatible server with speculative decoding"))
    train = sub.add_parser("train", help="train models the methods need").add_subparsers(
        dest="what", required=True
    )
    add_train_arguments(train.add_parser("draft", help="train a small draft model for a target"))
    add_train_arguments(
        train.add_parser("early-exit", help="fine-tune a model so its first layers draft for it (BiLD §4.4)"),
        early_exit=True,
    )
    add_export_arguments(train.add_parser("export", help="package a trained draft to load it by name"))
    add_tandem_arguments(
        train.add_parser(
            "tandem", help="train a Tandem secondary (or its distilled-draft baseline) on a primary cache"
        )
    )
    add_router_arguments(
        train.add_parser("router", help="train a Tandem secondary's adaptive block length router")
    )
    from specdec.cli.train_bita import add_bita_arguments

    add_bita_arguments(
        train.add_parser("bita", help="tune BiTA prompt and mask tokens on the target's own answers")
    )
    sweep = sub.add_parser("sweep", help="quality/latency sweeps").add_subparsers(dest="what", required=True)
    from specdec.benchmarks.bild_sweep import add_arguments as add_sweep_arguments

    add_sweep_arguments(sweep.add_parser("bild", help="BiLD (α_FB, α_RB) grid vs plain and SpS"))
    add_eval_arguments(sub.add_parser("eval-draft", help="agreement, α and SpS tokens/call of a draft"))
    from specdec.benchmarks.tandem_eval import add_arguments as add_tandem_eval_arguments

    add_tandem_eval_arguments(
        sub.add_parser("eval-tandem", help="Tandem's Table 1, accepted tokens per block and budget curve")
    )
    from specdec.benchmarks.bita_eval import add_arguments as add_bita_eval_arguments

    add_bita_eval_arguments(
        sub.add_parser(
            "eval-bita", help="BiTA: accepted tokens per tree shape, measured cost, the shape to use"
        )
    )
    data = sub.add_parser("data", help="training data").add_subparsers(dest="what", required=True)
    from specdec.cli.data import (
        add_answers_arguments,
        add_draft_vocab_arguments,
        add_primary_arguments,
        add_text_arguments,
    )

    add_answers_arguments(data.add_parser("answers", help="the target's own answers to prompts, cached"))
    add_text_arguments(data.add_parser("text", help="held-out human text in the answers format"))
    add_primary_arguments(
        data.add_parser("primary", help="the primary's hidden states and top-k logits, cached")
    )
    add_draft_vocab_arguments(
        data.add_parser("draft-vocab", help="token frequencies of target answers, for vocab-N:DRAFT")
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the CLI shows its own status; transformers' bar per model is noise
    try:
        if args.command == "bench":
            from specdec.benchmarks.specbench import run_from_args

            run_from_args(args)
        elif args.command == "bench-engine":
            from specdec.benchmarks.engine_speed import run_from_args as run_engine_speed

            run_engine_speed(args)
        elif args.command == "bench-serving":
            from specdec.benchmarks.serving import run_from_args as run_serving

            run_serving(args)
        elif args.command == "sweep":
            from specdec.benchmarks.bild_sweep import run_from_args as run_sweep

            run_sweep(args)
        elif args.command == "eval-tandem":
            from specdec.benchmarks.tandem_eval import run_from_args as run_tandem_eval

            run_tandem_eval(args)
        elif args.command == "eval-bita":
            from specdec.benchmarks.bita_eval import run_from_args as run_bita_eval

            run_bita_eval(args)
        elif args.command == "bench-server":
            from specdec.benchmarks.server_load import run_from_args as run_server_load

            run_server_load(args)
        elif args.command == "serve":
            from specdec.cli.serve import run_serve

            run_serve(args)
        elif args.command == "data":
            from specdec.cli.data import run_answers, run_draft_vocab, run_primary, run_text

            runs = {
                "answers": run_answers,
                "text": run_text,
                "primary": run_primary,
                "draft-vocab": run_draft_vocab,
            }
            runs[args.what](args)
        elif args.command in ("train", "eval-draft"):
            from specdec.cli.train import allocator_hint, run_eval, run_export, run_train

            if args.command == "train" and args.what != "export" and (hint := allocator_hint()):
                print(hint, file=sys.stderr)
            if args.command == "eval-draft":
                run_eval(args)
            elif args.what == "tandem":
                from specdec.cli.train import run_train_tandem

                run_train_tandem(args)
            elif args.what == "router":
                from specdec.cli.train import run_train_router

                run_train_router(args)
            elif args.what == "bita":
                from specdec.cli.train_bita import run_train_bita

                run_train_bita(args)
            else:
                run_export(args) if args.what == "export" else run_train(args)
        else:
            from specdec.cli.generate import run_generate

            if args.command == "demo":
                args.compare = True
            run_generate(args)
    except SpecDecError as err:
        print(f"specdec: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
