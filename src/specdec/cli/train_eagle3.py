"""`specdec train eagle3`: train an EAGLE-3 head on a primary cache (written in the speculators layout)."""

from __future__ import annotations

import argparse
from pathlib import Path

from specdec.cli.train import add_cache_argument, add_resume_arguments, bf16_pays
from specdec.inputs import non_negative_int, positive_int

DEFAULT_DRAFT_VOCAB = "smollm2-135m-draft:2048"


def add_eagle3_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="the frozen model the head drafts for")
    add_cache_argument(parser, "with the aux hidden states")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument(
        "--aux-layers", default=None, help="target hidden-state indices read, e.g. 2,15,27 (default: vLLM's)"
    )
    parser.add_argument(
        "--draft-vocab",
        default=None,
        help="FOLDER:N: the N tokens the target writes most (FOLDER's draft_vocab.json, or a packaged "
        f"draft's); 'full' for the whole vocabulary (default for a new head: {DEFAULT_DRAFT_VOCAB}); with "
        "--init-from, a wider vocabulary than the head's widens it (its own tokens kept)",
    )
    parser.add_argument("--init-from", type=Path, default=None, help="continue from this head's weights")
    parser.add_argument(
        "--intermediate-size",
        type=positive_int,
        default=None,
        help="the head's MLP width (default: the target's); with --init-from, a wider one than the head's "
        "widens it, drafting exactly as before until training moves the new units",
    )
    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--steps", type=positive_int, default=1000)
    opt.add_argument("--ttt-steps", type=positive_int, default=4, help="chain depth unrolled in training")
    opt.add_argument("--batch-size", type=positive_int, default=16, help="sequences per step")
    opt.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=None,
        help="split each step into micro-batches of at most this many padded tokens, shortest first (the "
        "same step, less padding where sequence lengths differ; e.g. 4096)",
    )
    opt.add_argument("--lr", type=float, default=1e-3)
    opt.add_argument("--warmup", type=non_negative_int, default=50)
    opt.add_argument("--eval-every", type=positive_int, default=100)
    opt.add_argument("--eval-sequences", type=positive_int, default=64)
    opt.add_argument("--heldout-fraction", type=float, default=0.05)
    opt.add_argument("--save-every", type=positive_int, default=100)
    opt.add_argument("--seed", type=int, default=0)
    add_resume_arguments(opt)
    opt.add_argument("--bf16", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--cache-dir", default=None)


def draft_vocabulary(spec: str, model) -> torch.Tensor | None:  # noqa: F821
    """``FOLDER:N`` → the ascending target ids of the draft vocabulary (None: the full vocabulary)."""
    from specdec.drafters.factory import eos_ids, vocab_folder
    from specdec.errors import InvalidArgumentError
    from specdec.models.draft_vocab import top_tokens

    if spec == "full":
        return None
    folder, _, size = spec.rpartition(":")
    if not folder or not size.isdigit():
        raise InvalidArgumentError(f"--draft-vocab expects FOLDER:N or 'full', got {spec!r}")
    return top_tokens(vocab_folder(folder), int(size), eos_ids(model))


def build_head(args: argparse.Namespace, target) -> Eagle3Head:  # noqa: F821
    """The head to train: ``--init-from``'s (widened to ``--intermediate-size`` and to ``--draft-vocab``
    where those are wider), or a new one reading ``--aux-layers`` over ``--draft-vocab``, seeded by
    ``--seed``."""
    import torch
    from transformers import LlamaConfig

    from specdec.errors import InvalidArgumentError
    from specdec.models.eagle3 import Eagle3Head, default_aux_layers, widened, with_vocabulary
    from specdec.models.eagle3_layout import load_head

    text = target.config.get_text_config()
    width = args.intermediate_size
    if args.init_from is not None:
        head = load_head(args.init_from, text.num_hidden_layers)
        if width is not None and width != head.config.intermediate_size:
            head = widened(head, width, seed=args.seed)
        if args.draft_vocab is not None:
            wanted = draft_vocabulary(args.draft_vocab, target)
            wanted = torch.arange(text.vocab_size) if wanted is None else wanted
            wanted = torch.unique(torch.cat([wanted, head.draft_ids]))  # sorted; the head's own tokens kept
            if len(wanted) > len(head.draft_ids):
                head = with_vocabulary(head, wanted, target.get_output_embeddings().weight)
        return head
    if args.aux_layers:
        try:
            aux = tuple(int(h) for h in args.aux_layers.split(","))
        except ValueError as err:
            raise InvalidArgumentError(
                f"--aux-layers expects integers like 2,15,27, got {args.aux_layers!r}"
            ) from err
    else:
        aux = default_aux_layers(text.num_hidden_layers)
    torch.manual_seed(args.seed)  # the head's initial weights, the same for every process and rerun
    layer = {"num_hidden_layers": 1, "tie_word_embeddings": False}
    layer |= {} if width is None else {"intermediate_size": width}
    layer = LlamaConfig(**{**text.to_dict(), **layer})
    vocab = draft_vocabulary(args.draft_vocab or DEFAULT_DRAFT_VOCAB, target)
    return Eagle3Head(layer, aux, text.hidden_size, vocab)


def run_train_eagle3(args: argparse.Namespace) -> Path:
    from specdec.benchmarks.report import machine_info
    from specdec.models import load_model
    from specdec.training.eagle3 import Eagle3TrainConfig, train_eagle3
    from specdec.training.primary_cache import PrimaryCache

    cache = PrimaryCache(args.cache)
    target = load_model(args.target, cache_dir=args.cache_dir).model
    head = build_head(args, target)
    config = Eagle3TrainConfig(
        output_dir=str(args.output),
        steps=args.steps,
        ttt_steps=args.ttt_steps,
        batch_size=args.batch_size,
        max_batch_tokens=args.max_batch_tokens,
        lr=args.lr,
        warmup_steps=args.warmup,
        heldout_fraction=args.heldout_fraction,
        eval_every=args.eval_every,
        eval_sequences=args.eval_sequences,
        save_every=args.save_every,
        seed=args.seed,
        resume=args.resume,
        time_limit_s=args.time_limit,
        bf16=args.bf16 == "on" or (args.bf16 == "auto" and bf16_pays()),
        extra={
            "target": args.target,
            "cache": [str(folder) for folder in args.cache],
            "cache_meta": cache.meta,
            "draft_vocab": args.draft_vocab,
            "draft_vocab_size": len(head.d2t),
            "init_from": None if args.init_from is None else str(args.init_from),
            "intermediate_size": head.config.intermediate_size,
            "machine": machine_info(),
        },
    )
    verifier = {"name_or_path": args.target, "architectures": list(target.config.architectures or [])}
    embeddings = target.get_input_embeddings().weight.float()
    best = train_eagle3(head, embeddings, cache, config, verifier)
    print(f"best checkpoint: {best}")
    return best
