"""`specdec train draft` and `train early-exit`: a small draft (or the target's first layers) trained on a
text corpus, the target's own answers to prompts, or both (:func:`specdec.training.train_draft`)."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

from tqdm.auto import tqdm

from specdec.cli.train import add_shape_arguments, shape_from_args
from specdec.errors import InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int


def add_train_arguments(parser: argparse.ArgumentParser, early_exit: bool = False) -> None:
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument(
        "--output", required=True, type=Path, help="output folder (checkpoints, final/, logs)"
    )
    data = parser.add_argument_group("data")
    data.add_argument("--corpus", action="append", default=[], help="text / .jsonl(.gz) file (repeatable)")
    data.add_argument("--text-field", default="text")
    data.add_argument(
        "--max-chars", type=positive_int, default=5_000_000, help="characters read per corpus file"
    )
    data.add_argument("--heldout-fraction", type=float, default=0.02)
    data.add_argument("--align", action="append", default=[], help="alignment prompts KIND:PATH (repeatable)")
    data.add_argument("--align-count", type=positive_int, default=64, help="prompts per --align source")
    data.add_argument("--align-max-new-tokens", type=positive_int, default=96)
    data.add_argument(
        "--align-every", type=positive_int, default=2, help="every k-th step uses alignment data"
    )
    if early_exit:
        parser.add_argument(
            "--exit-layer",
            type=positive_int,
            required=True,
            help="the small model is the first N layers (+ head)",
        )
    else:
        add_shape_arguments(parser)
    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--steps", type=positive_int, default=1000)
    opt.add_argument("--batch-size", type=positive_int, default=8)
    opt.add_argument("--seq-len", type=positive_int, default=128)
    opt.add_argument("--lr", type=float, default=1e-4 if early_exit else 3e-4)
    opt.add_argument("--warmup", type=non_negative_int, default=20)
    opt.add_argument("--distill", choices=("kl", "soft_ce"), default="kl")
    opt.add_argument("--temperature", type=float, default=1.0)
    opt.add_argument(
        "--lambda",
        dest="distill_weight",
        type=float,
        default=0.0 if early_exit else 0.5,
        help="KD weight λ in [0, 1]",
    )
    opt.add_argument("--preset", choices=("tandem-distil",), default=None)
    opt.add_argument("--eval-every", type=positive_int, default=100)
    opt.add_argument("--save-every", type=positive_int, default=200)
    opt.add_argument("--seed", type=int, default=0)
    opt.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output")
    parser.add_argument("--cache-dir", default=None)


def run_train(args: argparse.Namespace) -> Path:
    from specdec.models import check_truncation, load_model
    from specdec.training import build_draft, train_draft

    if not args.corpus and not args.align:
        raise InvalidArgumentError("give at least one --corpus or --align source")
    config = _draft_config(args)
    target = load_model(args.target, cache_dir=args.cache_dir)
    train_stream, heldout, alignment = _draft_data(args, target)
    if config.early_exit_layer:
        check_truncation(target.model, config.early_exit_layer)
        draft = copy.deepcopy(target.model)  # the target itself is fine-tuned; the original is frozen
    else:
        shape = shape_from_args(args)
        draft = build_draft(target.model, shape, seed=args.seed)
        config.extra["shape"] = shape.__dict__
    final = train_draft(
        draft,
        target.model,
        target.tokenizer,
        config,
        train_stream=train_stream,
        heldout_stream=heldout,
        alignment=alignment,
    )
    print(f"final model: {final}")
    return final


def _draft_config(args: argparse.Namespace):
    """``train draft``'s settings, with what its data came from."""
    from specdec.training import TrainConfig

    return TrainConfig(
        output_dir=str(args.output),
        steps=args.steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        warmup_steps=args.warmup,
        distill=args.distill,
        temperature=args.temperature,
        distill_weight=args.distill_weight,
        preset=args.preset,
        align_every=args.align_every if args.align else 0,
        early_exit_layer=getattr(args, "exit_layer", 0),
        eval_every=args.eval_every,
        save_every=args.save_every,
        seed=args.seed,
        resume=args.resume,
        extra={
            "target": args.target,
            "corpus": args.corpus,
            "max_chars": args.max_chars,
            "align": args.align,
            "align_count": args.align_count,
            "align_max_new_tokens": args.align_max_new_tokens,
        },
    )


def _draft_data(args: argparse.Namespace, target) -> tuple:
    """The corpus's training and held-out token streams (None without ``--corpus``) and the target's own
    answers to the ``--align`` prompts (None without; generated once, then read from the cache)."""
    from specdec.models import default_cache_dir
    from specdec.pipeline import Pipeline
    from specdec.training import generate_answers, load_prompts, read_documents, split_stream, tokenize_stream

    train_stream = heldout = alignment = None
    if args.corpus:
        docs = [d for path in args.corpus for d in read_documents(path, args.text_field, args.max_chars)]
        train_stream, heldout = split_stream(tokenize_stream(docs, target.tokenizer), args.heldout_fraction)
    if args.align:
        prompts = [p for spec in args.align for p in load_prompts(spec, args.align_count)]
        cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
        with tqdm(total=len(prompts), desc="alignment answers (cached once)") as bar:
            alignment = generate_answers(
                Pipeline(target.model, target.tokenizer),
                prompts,
                source=target.source,
                max_new_tokens=args.align_max_new_tokens,
                cache_dir=cache / "answers",
                progress=bar.update,
            )
    return train_stream, heldout, alignment
