"""``specdec train tandem`` and ``specdec train router``: a Tandem secondary (or its equally sized
distilled-draft baseline) on a primary cache, and its adaptive block length router."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specdec.cli.train import (
    add_cache_argument,
    add_resume_arguments,
    add_shape_arguments,
    bf16_pays,
    shape_from_args,
)
from specdec.inputs import non_negative_int, positive_int


def add_tandem_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="the primary")
    add_cache_argument(parser)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument(
        "--architecture",
        choices=("tandem", "draft"),
        default="tandem",
        help="draft: the equally sized distilled draft, same data, losses and steps (the baseline)",
    )
    parser.add_argument(
        "--preset", choices=("distil", "ce"), default="distil", help="Tandem-Distil or Tandem-CE"
    )
    add_shape_arguments(parser)
    parser.add_argument(
        "--layer-map",
        default=None,
        help="primary hidden-state index per secondary layer, e.g. 15,30 (default: evenly spaced; "
        "with --projection-init identity, the layers the secondary was copied from)",
    )
    parser.add_argument(
        "--projection-init",
        choices=("random", "identity"),
        default="random",
        help="random: the paper; identity: each copied layer starts reading the primary's own input to it",
    )
    _add_optimisation_arguments(parser.add_argument_group("optimisation"))
    parser.add_argument("--cache-dir", default=None)


def _add_optimisation_arguments(opt) -> None:
    opt.add_argument(
        "--gamma", type=positive_int, default=2, help="γ_train, the block length of the training mask"
    )
    opt.add_argument("--steps", type=positive_int, default=1000)
    opt.add_argument("--batch-size", type=positive_int, default=8, help="sequences per step")
    opt.add_argument("--lr", type=float, default=3e-4)
    opt.add_argument("--warmup", type=non_negative_int, default=50)
    opt.add_argument("--lambda", dest="distill_weight", type=float, default=0.5)
    opt.add_argument("--eval-every", type=positive_int, default=100)
    opt.add_argument(
        "--eval-sequences", type=positive_int, default=64, help="held-out sequences for selection"
    )
    opt.add_argument(
        "--heldout-fraction", type=float, default=0.05, help="the cache's tail kept out of training"
    )
    opt.add_argument("--save-every", type=positive_int, default=200)
    opt.add_argument("--seed", type=int, default=0)
    add_resume_arguments(opt)
    opt.add_argument(
        "--branch-from",
        type=Path,
        default=None,
        help="continue from another run's checkpoint-K (e.g. Tandem-CE from Tandem-Distil's half-way point)",
    )
    opt.add_argument(
        "--init-from",
        default=None,
        help="start from these weights (a draft for --architecture draft, a Tandem folder otherwise; a "
        "packaged name or a folder) with a fresh optimiser and schedule: new data for a shipped model",
    )
    opt.add_argument(
        "--bf16",
        choices=("auto", "on", "off"),
        default="auto",
        help="autocast (auto: AVX-512 BF16/AMX CPU or GPU)",
    )


def run_train_tandem(args: argparse.Namespace) -> Path:
    from specdec.benchmarks.report import machine_info
    from specdec.models import load_model
    from specdec.training.primary_cache import PrimaryCache
    from specdec.training.tandem import TandemTrainConfig, train_tandem

    cache = PrimaryCache(args.cache)
    config = TandemTrainConfig(
        output_dir=str(args.output),
        architecture=args.architecture,
        preset=args.preset,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_steps=args.warmup,
        gamma=args.gamma,
        distill_weight=args.distill_weight,
        eval_every=args.eval_every,
        eval_sequences=args.eval_sequences,
        heldout_fraction=args.heldout_fraction,
        save_every=args.save_every,
        seed=args.seed,
        resume=args.resume,
        time_limit_s=args.time_limit,
        branch_from=str(args.branch_from) if args.branch_from else None,
        bf16=args.bf16 == "on" or (args.bf16 == "auto" and bf16_pays()),
        extra={
            "target": args.target,
            "cache": [str(folder) for folder in args.cache],
            "cache_meta": cache.meta,
            "machine": machine_info(),
        },
    )
    target = load_model(args.target, cache_dir=args.cache_dir)
    if args.init_from:
        config.extra["init_from"] = args.init_from
        model = given_model(args)
    else:
        model = fresh_model(args, target.model, config)
    best = train_tandem(model, cache, config, target.tokenizer)
    print(f"best checkpoint: {best}")
    return best


def given_model(args: argparse.Namespace):
    """The weights ``--init-from`` names: a draft model, or a Tandem folder or packaged name."""
    from specdec.drafters.factory import tandem_folder
    from specdec.models import load_model
    from specdec.models.tandem import TandemModel

    if args.architecture == "draft":
        return load_model(args.init_from, cache_dir=args.cache_dir).model
    return TandemModel.from_pretrained(tandem_folder(args.init_from, args.cache_dir))


def fresh_model(args: argparse.Namespace, primary, config):
    """A new secondary (or draft) of the shape the arguments give, built from ``primary``; its shape,
    layer map and projection init are recorded in ``config.extra``."""
    from specdec.models.tandem import TandemModel, primary_signature
    from specdec.training import build_draft
    from specdec.training.draft_model import default_init_layers

    shape = shape_from_args(args)
    config.extra["shape"] = shape.__dict__
    secondary = build_draft(primary, shape, seed=args.seed)
    if args.architecture != "tandem":
        return secondary
    layer_map = tuple(int(h) for h in args.layer_map.split(",")) if args.layer_map else None
    if layer_map is None and args.projection_init == "identity" and shape.init == "target":
        layer_map = shape.init_layers or default_init_layers(
            primary.config.num_hidden_layers, shape.num_layers
        )
    model = TandemModel(
        secondary, primary_signature(primary), layer_map, projection_init=args.projection_init
    )
    config.extra["layer_map"] = list(model.layer_map)
    config.extra["projection_init"] = args.projection_init
    return model


def add_router_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tandem",
        type=Path,
        required=True,
        help="a trained Tandem secondary (the router goes in TANDEM/router)",
    )
    add_cache_argument(parser)
    parser.add_argument("--steps", type=positive_int, default=300)
    parser.add_argument("--batch-size", type=positive_int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--gamma", type=positive_int, default=5, help="block length of the drafting situation it learns in"
    )
    parser.add_argument("--tau", type=float, default=0.8, help="the stop threshold its held-out report uses")
    parser.add_argument("--seed", type=int, default=0)


def run_train_router(args: argparse.Namespace) -> dict:
    from specdec.models.tandem import TandemModel
    from specdec.training.primary_cache import PrimaryCache
    from specdec.training.router import train_router

    report = train_router(
        TandemModel.from_pretrained(args.tandem),
        PrimaryCache(args.cache),
        args.tandem / "router",
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        gamma=args.gamma,
        tau=args.tau,
        seed=args.seed,
    )
    print(json.dumps(report, indent=1))
    return report
