"""`specdec train bita`: tune a BiTA adapter on the target's own answers (the shared answers cache)."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from specdec.cli.train import add_resume_arguments, bf16_pays
from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int


def add_bita_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="the frozen model the adapter drafts for")
    parser.add_argument(
        "--answers", action="append", required=True, help="answers file(s) from `specdec data answers`"
    )
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument(
        "--kind", choices=("deep", "shallow", "none"), default="deep", help="prompt design (Table 3 ablation)"
    )
    parser.add_argument(
        "--prompts", type=non_negative_int, default=16, help="P prompt tokens (0 with --kind none)"
    )
    parser.add_argument("--masks", type=positive_int, default=3, help="M mask tokens")
    parser.add_argument(
        "--init-from",
        default=None,
        metavar="ADAPTER",
        help="continue this adapter (a folder or a packaged name); its kind, prompts and masks are kept",
    )
    opt = parser.add_argument_group("optimisation (defaults: the official preset, lr 3e-2 cosine)")
    opt.add_argument("--steps", type=positive_int, default=1000)
    opt.add_argument("--batch-size", type=positive_int, default=8, help="sequences per step")
    opt.add_argument("--groups", type=positive_int, default=32, help="mask groups packed per sequence")
    opt.add_argument("--lr", type=float, default=3e-2)
    opt.add_argument("--warmup", type=non_negative_int, default=20)
    opt.add_argument("--max-len", type=positive_int, default=256)
    opt.add_argument("--eval-every", type=positive_int, default=100)
    opt.add_argument("--eval-sequences", type=positive_int, default=64)
    opt.add_argument(
        "--select-shape",
        default="efficient",
        metavar="SHAPE",
        help="the tree best/ is chosen for, by held-out tokens accepted per step: the shape decoding will "
        "run (efficient, straight, or widths such as 2 or 2/1; only top-1 nodes branch)",
    )
    opt.add_argument("--heldout-fraction", type=float, default=0.05)
    opt.add_argument("--save-every", type=positive_int, default=100)
    opt.add_argument("--seed", type=int, default=0)
    opt.add_argument("--shuffle-seed", type=int, default=0, help="answers from all files are mixed by it")
    add_resume_arguments(opt)
    opt.add_argument("--bf16", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--cache-dir", default=None)


def run_train_bita(args: argparse.Namespace) -> Path:
    import torch

    from specdec.benchmarks.report import machine_info
    from specdec.drafters.bita import bita_folder
    from specdec.models import load_model
    from specdec.models.bita import BiTAAdapter, model_signature
    from specdec.training.answers import read_answers
    from specdec.training.bita import BiTATrainConfig, train_bita

    for path in args.answers:
        if not Path(path).is_file():
            raise DataNotFoundError(f"answers file {path} not found (make one with `specdec data answers`)")
    config = BiTATrainConfig(
        output_dir=str(args.output),
        steps=args.steps,
        batch_size=args.batch_size,
        groups=args.groups,
        lr=args.lr,
        warmup_steps=args.warmup,
        max_len=args.max_len,
        heldout_fraction=args.heldout_fraction,
        eval_every=args.eval_every,
        eval_sequences=args.eval_sequences,
        save_every=args.save_every,
        seed=args.seed,
        resume=args.resume,
        time_limit_s=args.time_limit,
        bf16=args.bf16 == "on" or (args.bf16 == "auto" and bf16_pays()),
        extra={"target": args.target, "answers": list(args.answers), "machine": machine_info()},
    )
    start = None if args.init_from is None else BiTAAdapter.from_pretrained(bita_folder(args.init_from))
    masks = args.masks if start is None else start.num_masks
    # checked before the answers and the target load: a wrong shape fails in a second, not minutes in
    config.select_widths = selection_widths(args.select_shape, masks)
    answers = [a for path in args.answers for a in read_answers(Path(path))]
    order = random.Random(args.shuffle_seed).sample(range(len(answers)), len(answers))
    answers = [answers[i] for i in order]
    target = load_model(args.target, cache_dir=args.cache_dir)
    if start is not None:
        adapter = start
        adapter.check_model(target.model, args.target)
        config.extra["init_from"] = args.init_from
    else:
        prompts = 0 if args.kind == "none" else args.prompts
        torch.manual_seed(args.seed)  # the adapter's initial weights: a run is reproducible from its command
        adapter = BiTAAdapter(
            model_signature(target.model), prompts, args.masks, args.kind, model_name=args.target
        )
    config.extra["adapter"] = {
        "kind": adapter.kind,
        "num_prompts": adapter.num_prompts,
        "num_masks": adapter.num_masks,
    }
    best = train_bita(target.model, adapter, answers, config)
    print(f"best checkpoint: {best}")
    return best


def selection_widths(spec: str, num_masks: int) -> tuple[int, ...]:
    """``--select-shape`` as the widths the held-out walk scores; a full tree (every candidate
    branching) is not a walk of top-1 nodes, so it cannot be the selection's."""
    from specdec.drafters.bita import TreeShape

    shape = TreeShape.parse(spec, num_masks)
    if shape.full:
        raise InvalidArgumentError(f"--select-shape {spec}: a full tree is not a walk of top-1 nodes")
    shape.check_depth(num_masks)
    return shape.widths
