"""``specdec data answers | text | primary | draft-vocab``: the target's own answers to training
prompts, generated once and cached; held-out human text in the same format; the primary's outputs
over either; the target's token frequencies, which a draft's trimmed output head keeps the top of.

Generation is the long pole of every training campaign (hours on a CPU), so it is a command of its
own: run it once (in the background, with ``nohup``), rerun the same command to resume after an
interruption, and point ``specdec train ...`` at the file it prints.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from tqdm.auto import tqdm


def add_answers_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument(
        "--prompts",
        action="append",
        required=True,
        help="KIND:PATH (KIND: gsm8k, continue, summarize, explain-code), or `self`: requests the "
        "target writes itself from its chat template's user turn (Magpie); repeatable",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed of `--prompts self`")
    parser.add_argument("--count", type=int, default=1000, help="prompts per --prompts source")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64, help="prompts generated together")
    parser.add_argument(
        "--dtype",
        default="float32",
        help="the target's dtype while it writes (bf16 is ~3x faster on AVX-512 BF16)",
    )
    parser.add_argument("--cache-dir", default=None)


def run_answers(args: argparse.Namespace) -> Path:
    from specdec.inputs import check_count
    from specdec.models import default_cache_dir, load_model
    from specdec.pipeline import Pipeline
    from specdec.training.answers import answers_key, generate_answers, load_prompts, self_written_prompts

    check_count("--count", args.count)
    corpora = [load_prompts(spec, args.count) for spec in args.prompts if spec != "self"]
    target = load_model(args.target, dtype=args.dtype, cache_dir=args.cache_dir)
    source = f"{target.source}:{target.model.dtype}"
    pipe = Pipeline(target.model, target.tokenizer)
    cache = (Path(args.cache_dir) if args.cache_dir else default_cache_dir()) / "answers"
    started = time.perf_counter()
    prompts = [p for found in corpora for p in found]
    if "self" in args.prompts:
        with tqdm(total=args.count, desc="self-written prompts (cached, resumable)") as bar:
            prompts += self_written_prompts(
                pipe, args.count, source=source, cache_dir=cache, seed=args.seed, progress=bar.update
            )
    with tqdm(total=len(prompts), desc="target answers (cached, resumable)") as bar:
        answers = generate_answers(
            pipe,
            prompts,
            source=source,
            max_new_tokens=args.max_new_tokens,
            cache_dir=cache,
            batch_size=args.batch_size,
            progress=bar.update,
        )
    key = answers_key(source, prompts, args.max_new_tokens, pipe.tokenizer.chat_template)
    path = cache / f"answers-{key}.jsonl"
    tokens = sum(len(a.answer_ids) for a in answers)
    elapsed = time.perf_counter() - started
    print(f"{len(answers)} answers, {tokens} answer tokens, {elapsed:.0f} s this run: {path}")
    return path


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m", help="whose tokenizer cuts the text")
    parser.add_argument("--source", type=Path, required=True, help="a JSONL(.gz) of {'text': ...} rows")
    parser.add_argument("--count", type=int, default=256, help="windows, spread through the documents")
    parser.add_argument("--tokens", type=int, default=256, help="tokens per sample")
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
    parser.add_argument("--secondary-layers", type=int, default=2, help="for the default layer map")
    parser.add_argument("--top-k", type=int, default=64, help="logits kept per token for distillation")
    parser.add_argument("--max-len", type=int, default=384, help="longer sequences lose their prompt's start")
    parser.add_argument(
        "--dtype", default="float32", help="the primary's dtype for this pass (bf16 on AVX-512 BF16)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
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
    from specdec.training.answers import read_answers
    from specdec.training.primary_cache import CacheSpec, build_primary_cache

    target = load_model(args.target, dtype=args.dtype, cache_dir=args.cache_dir)
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
    answers = [a for path in args.answers for a in read_answers(Path(path))]
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
    counts = token_counts(a for path in args.answers for a in read_answers(Path(path)))
    path = write_vocab_file(args.output, counts, {"answers": [Path(a).name for a in args.answers]})
    total = sum(counts.values())
    for size in (1024, 4096, 8192, 16384):
        covered = sum(c for _, c in counts.most_common(size))
        print(f"top {size:>5} tokens cover {covered / total:.2%} of {total:,} answer tokens")
    print(f"wrote {path}")
    return path
