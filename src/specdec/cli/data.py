"""``specdec data answers``: the target's own answers to training prompts, generated once and cached.

Generation is the long pole of every training campaign (hours on a CPU), so it is a command of its
own: run it once (in the background, with ``nohup``), rerun the same command to resume after an
interruption, and point ``specdec train ...`` at the file it prints.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tqdm.auto import tqdm


def add_answers_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument(
        "--prompts",
        action="append",
        required=True,
        help="KIND:PATH (KIND: gsm8k, continue, summarize, explain-code), repeatable",
    )
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
    from specdec.models import default_cache_dir, load_model
    from specdec.pipeline import Pipeline
    from specdec.training.answers import answers_key, generate_answers, load_prompts

    prompts = [p for spec in args.prompts for p in load_prompts(spec, args.count)]
    target = load_model(args.target, dtype=args.dtype, cache_dir=args.cache_dir)
    source = f"{target.source}:{target.model.dtype}"
    pipe = Pipeline(target.model, target.tokenizer)
    cache = (Path(args.cache_dir) if args.cache_dir else default_cache_dir()) / "answers"
    started = time.perf_counter()
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
