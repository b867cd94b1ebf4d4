"""``specdec data text | primary | draft-vocab``: held-out human text in the answers format (``data
answers``, in :mod:`specdec.cli.data_answers`, writes the target's own); the primary's outputs over
either; the target's token frequencies, which a draft's trimmed output head keeps the top of.

Each is cached and resumable like the answers: rerun the same command after an interruption.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from tqdm.auto import tqdm

from specdec.inputs import positive_int


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="whose tokenizer cuts the text")
    parser.add_argument("--source", type=Path, required=True, help="a JSONL(.gz) of {'text': ...} rows")
    parser.add_argument(
        "--count", type=positive_int, default=256, help="windows, spread through the documents"
    )
    parser.add_argument("--tokens", type=positive_int, default=256, help="tokens per sample")
    parser.add_argument("--output", type=Path, required=True, help="the answers-format JSONL to write")
    parser.add_argument("--cache-dir", default=None)


def run_text(args: argparse.Namespace) -> Path:
    from specdec.models import load_model
    from specdec.training.answers import text_samples, write_answers

    tokenizer = load_model(args.target, cache_dir=args.cache_dir).tokenizer
    samples = text_samples(args.source, tokenizer, args.count, args.tokens)
    write_answers(args.output, samples)
    print(f"{len(samples)} samples, {sum(len(s.answer_ids) for s in samples)} tokens: {args.output}")
    return args.output


def add_primary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="the primary whose outputs are cached")
    parser.add_argument(
        "--answers", action="append", required=True, help="answers file(s) from `data answers`"
    )
    parser.add_argument("--output", type=Path, required=True, help="the cache folder (rerun to resume)")
    parser.add_argument(
        "--hidden-layers",
        default=None,
        help="primary hidden-state indices to store, e.g. 15,30 (default: Tandem's map, --secondary-layers)",
    )
    parser.add_argument("--secondary-layers", type=positive_int, default=2, help="for the default layer map")
    parser.add_argument(
        "--top-k", type=positive_int, default=64, help="logits kept per token for distillation"
    )
    parser.add_argument(
        "--max-len", type=positive_int, default=384, help="longer sequences lose their prompt's start"
    )
    parser.add_argument(
        "--dtype", default="float32", help="the primary's dtype for this pass (bf16 on AVX-512 BF16)"
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="where the primary runs (cuda: a million answer tokens in seconds; the cache records the dtype "
        "only, so a cut-off cache resumes on either device)",
    )
    parser.add_argument("--batch-size", type=positive_int, default=16)
    parser.add_argument(
        "--shuffle-seed",
        type=int,
        default=0,
        help="answers from all files are mixed by this seed, so the held-out tail spans every source",
    )
    parser.add_argument("--cache-dir", default=None)


def run_primary(args: argparse.Namespace) -> Path:
    from specdec.errors import InvalidArgumentError
    from specdec.models import load_model
    from specdec.models.tandem import default_layer_map
    from specdec.training.answers import distinct_answers, read_answers
    from specdec.training.primary_cache import CacheSpec, build_primary_cache

    target = load_model(args.target, dtype=args.dtype, device=args.device, cache_dir=args.cache_dir)
    depth = target.model.config.num_hidden_layers
    if args.hidden_layers:
        try:
            layers = tuple(int(h) for h in args.hidden_layers.split(","))
        except ValueError as err:
            raise InvalidArgumentError(
                f"--hidden-layers expects integers like 15,30, got {args.hidden_layers!r}"
            ) from err
    else:
        layers = default_layer_map(depth, args.secondary_layers)
    if not all(0 <= h <= depth for h in layers):
        raise InvalidArgumentError(f"hidden-state indices must be in [0, {depth}], got {list(layers)}")
    read = [a for path in args.answers for a in read_answers(Path(path))]
    answers = distinct_answers(read)
    if len(answers) < len(read):
        print(f"{len(read) - len(answers)} repeated prompts across the answers files kept once")
    order = random.Random(args.shuffle_seed).sample(range(len(answers)), len(answers))
    answers = [answers[i] for i in order]
    spec = CacheSpec(
        f"{target.source}:{target.model.dtype}", tuple(sorted(set(layers))), args.top_k, args.max_len
    )
    started = time.perf_counter()
    with tqdm(total=len(answers), desc="primary outputs (cached, resumable)") as bar:
        cache = build_primary_cache(
            target.model, answers, args.output, spec, batch_size=args.batch_size, progress=bar.update
        )
    elapsed = time.perf_counter() - started
    print(f"{len(cache)} sequences, {cache.tokens()} answer tokens, {elapsed:.0f} s this run: {args.output}")
    return args.output


def add_draft_vocab_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--answers", action="append", required=True, help="answers file(s) to count")
    parser.add_argument("--output", type=Path, required=True, help="the draft's folder (draft_vocab.json)")


def run_draft_vocab(args: argparse.Namespace) -> Path:
    from specdec.errors import DataNotFoundError
    from specdec.models.draft_vocab import token_counts, write_vocab_file
    from specdec.training.answers import read_answers

    if not args.output.is_dir():
        raise DataNotFoundError(f"draft folder {args.output} not found")
    counts = token_counts(a.answer_ids for path in args.answers for a in read_answers(Path(path)))
    path = write_vocab_file(args.output, counts, {"answers": [Path(a).name for a in args.answers]})
    total = sum(counts.values())
    for size in (1024, 4096, 8192, 16384):
        covered = sum(c for _, c in counts.most_common(size))
        print(f"top {size:>5} tokens cover {covered / total:.2%} of {total:,} answer tokens")
    print(f"wrote {path}")
    return path
