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

from specdec.inputs import positive_int


def add_answers_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument(
        "--prompts",
        action="append",
        required=True,
        help="KIND:PATH (KIND: gsm8k, continue, summarize, explain-code, passage-question: a passage, then a "
        "question about it); conversations:PATH (a JSONL of "
        "{'turns': [...]}, e.g. ShareGPT's user turns: the target answers every turn itself); `self`: "
        "requests the target writes itself from its chat template's user turn (Magpie); `self-intents`: "
        "the same, steered by openers over the intents users bring; repeatable",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed of self-written requests")
    parser.add_argument(
        "--opener",
        action="append",
        default=None,
        help="with `self-intents`: steer the requests with these openers instead of the built-in intents "
        "(row i starts with the (i mod n)-th), to add data for a task the drafters lack, e.g. "
        "--opener 'Translate the following German text into English:'; repeatable",
    )
    parser.add_argument(
        "--request-tokens",
        type=positive_int,
        default=64,
        help="longest self-written request; longer ones are dropped (at 64, most of SmolLM2's edit, summary "
        "and code requests: they carry the text or code to work on)",
    )
    parser.add_argument(
        "--snippet-chars",
        type=positive_int,
        default=600,
        help="characters of each corpus passage in KIND:PATH prompts (~4 a token: 2400 for RAG-length ones)",
    )
    parser.add_argument(
        "--count", type=positive_int, default=1000, help="prompts (or conversations) per source"
    )
    parser.add_argument("--max-new-tokens", type=positive_int, default=256)
    parser.add_argument(
        "--max-prompt-tokens",
        type=positive_int,
        default=1024,
        help="prompts longer than this (chat template included) are left out, and counted",
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=None, help="turns answered per conversation (all)"
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, help="prompts generated together")
    parser.add_argument(
        "--dtype",
        default="float32",
        help="the target's dtype while it writes (bf16 is ~3x faster on AVX-512 BF16)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="where the target writes (cuda: minutes instead of hours; the cache key holds the dtype only, "
        "so a run resumes on either device)",
    )
    parser.add_argument("--cache-dir", default=None)


def run_answers(args: argparse.Namespace) -> list[Path]:
    from specdec.models import default_cache_dir, load_model
    from specdec.pipeline import Pipeline
    from specdec.training.answers import answers_path, generate_answers
    from specdec.training.conversations import answer_conversations, load_conversations
    from specdec.training.prompts import INTENT_OPENERS, load_prompts, self_written_prompts

    own = ("self", "self-intents")
    intents = _intent_openers(args, INTENT_OPENERS)
    single = [s for s in args.prompts if s not in own and not s.startswith("conversations:")]
    corpora = [load_prompts(spec, args.count, snippet_chars=args.snippet_chars) for spec in single]
    chats = [
        load_conversations(Path(s.partition(":")[2]), args.count)
        for s in args.prompts
        if s.startswith("conversations:")
    ]
    target = load_model(args.target, dtype=args.dtype, device=args.device, cache_dir=args.cache_dir)
    source = f"{target.source}:{target.model.dtype}"
    pipe = Pipeline(target.model, target.tokenizer)
    cache = (Path(args.cache_dir) if args.cache_dir else default_cache_dir()) / "answers"
    started = time.perf_counter()
    prompts = [p for found in corpora for p in found]
    for spec, openers in (("self", ("",)), ("self-intents", intents)):
        if spec in args.prompts:
            with tqdm(total=args.count, desc=f"{spec} requests (cached, resumable)") as bar:
                prompts += self_written_prompts(
                    pipe,
                    args.count,
                    source=source,
                    cache_dir=cache,
                    seed=args.seed,
                    openers=openers,
                    max_new_tokens=args.request_tokens,
                    batch_size=args.batch_size,
                    progress=bar.update,
                )
    distinct = list(dict.fromkeys(prompts))
    kept = [p for p in distinct if len(pipe.encode(p, chat=True)) <= args.max_prompt_tokens]
    settings = {"source": source, "max_new_tokens": args.max_new_tokens, "cache_dir": cache}
    files = []
    if kept:
        with tqdm(total=len(kept), desc="target answers (cached, resumable)") as bar:
            answers = generate_answers(
                pipe, kept, batch_size=args.batch_size, progress=bar.update, **settings
            )
        files.append((answers_path(pipe, kept, **settings), answers))
    for conversations in chats:
        with tqdm(desc="conversation turns (cached, resumable)") as bar:
            files += answer_conversations(
                pipe,
                conversations,
                max_prompt_tokens=args.max_prompt_tokens,
                rounds=args.rounds,
                batch_size=args.batch_size,
                progress=bar.update,
                **settings,
            )
    counts = {"prompts": len(prompts), "distinct": len(distinct), "too_long": len(distinct) - len(kept)}
    manifest = write_manifest(args, files, counts, time.perf_counter() - started, cache)
    for path, answers in files:
        print(f"{len(answers)} answers, {sum(len(a.answer_ids) for a in answers)} answer tokens: {path}")
    print(f"manifest: {manifest}")
    return [path for path, _ in files]


def _intent_openers(args: argparse.Namespace, default: tuple[str, ...]) -> tuple[str, ...]:
    """The openers that steer `self-intents` requests: ``--opener``'s, else the built-in intents."""
    from specdec.errors import InvalidArgumentError

    if not args.opener:
        return default
    if "self-intents" not in args.prompts:
        raise InvalidArgumentError("--opener steers self-written requests: it needs --prompts self-intents")
    if not all(o.strip() for o in args.opener):
        raise InvalidArgumentError("--opener must be non-empty text")
    return tuple(args.opener)


def write_manifest(args: argparse.Namespace, files: list, counts: dict, elapsed: float, folder: Path) -> Path:
    """Record how the answer files were made (settings, counts, digests, time, machine) in ``folder``, the
    answer cache they were written to (also when none were: every request dropped, say)."""
    import hashlib
    import json

    from specdec.benchmarks.report import machine_info

    entries = [
        {
            "file": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "answers": len(answers),
            "answer_tokens": sum(len(a.answer_ids) for a in answers),
            "cut_at_limit": sum(len(a.answer_ids) >= args.max_new_tokens for a in answers),
        }
        for path, answers in files
    ]
    settings = {k: v for k, v in vars(args).items() if k not in ("func", "command", "what")}
    record = {
        "settings": settings,
        "single_turn_prompts": counts,
        "files": entries,
        "seconds_this_run": round(elapsed, 1),
        "machine": machine_info(),
    }
    name = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = folder / f"manifest-{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str))
    return path


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
