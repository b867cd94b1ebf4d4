"""``specdec data answers``: the target's own answers to training prompts (corpora, requests it writes
itself, multi-turn conversations it answers turn by turn), generated once and cached, with a manifest of
how they were made.

Generation is the long pole of every training campaign (hours on a CPU), so it is a command of its
own: run it once (in the background, with ``nohup``), rerun the same command to resume after an
interruption, and point ``specdec train ...`` at the file it prints.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from specdec.inputs import positive_int

if TYPE_CHECKING:
    from specdec.pipeline import Pipeline


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
    parser.add_argument(
        "--answers-from",
        default=None,
        help="a folder of answer ids exported without their prompts (e.g. benchmarks/data/sharegpt-rounds): "
        "rebuild the answer cache from them and the prompts given here, checked against their digests, "
        "and generate only what they lack",
    )
    parser.add_argument("--cache-dir", default=None)


def run_answers(args: argparse.Namespace) -> list[Path]:
    from specdec.models import default_cache_dir, load_model
    from specdec.pipeline import Pipeline
    from specdec.training.answers import answers_path, generate_answers
    from specdec.training.conversations import answer_conversations, load_conversations
    from specdec.training.prompts import INTENT_OPENERS, load_prompts

    own = ("self", "self-intents")
    answers_from = _answers_folder(args.answers_from)
    intents = _intent_openers(args, INTENT_OPENERS)  # a bad --opener fails before the target loads
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
    prompts = [p for found in corpora for p in found] + _self_written(args, pipe, source, cache, intents)
    distinct = list(dict.fromkeys(prompts))
    kept = [p for p in distinct if len(pipe.encode(p, chat=True)) <= args.max_prompt_tokens]
    settings = {"source": source, "max_new_tokens": args.max_new_tokens, "cache_dir": cache}
    files = []
    if kept:
        with tqdm(total=len(kept), desc="target answers (cached, resumable)") as bar:
            answers = generate_answers(
                pipe,
                kept,
                batch_size=args.batch_size,
                progress=bar.update,
                answers_from=answers_from,
                **settings,
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
                answers_from=answers_from,
                **settings,
            )
    counts = {"prompts": len(prompts), "distinct": len(distinct), "too_long": len(distinct) - len(kept)}
    manifest = write_manifest(args, files, counts, time.perf_counter() - started, cache)
    for path, answers in files:
        print(f"{len(answers)} answers, {sum(len(a.answer_ids) for a in answers)} answer tokens: {path}")
    print(f"manifest: {manifest}")
    return [path for path, _ in files]


def _self_written(
    args: argparse.Namespace, pipe: Pipeline, source: str, cache: Path, intents: tuple[str, ...]
) -> list[str]:
    """The requests the target writes itself (`self`, and `self-intents` steered by ``intents``), cached
    under ``cache`` so a stopped run resumes where it was."""
    from specdec.training.prompts import self_written_prompts

    prompts: list[str] = []
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
    return prompts


def _answers_folder(folder: str | None) -> Path | None:
    """``--answers-from``'s folder, checked before the target loads: it must hold an export's manifest."""
    from specdec.errors import DataNotFoundError
    from specdec.training.answers import ANSWER_IDS_MANIFEST

    if folder is None:
        return None
    if not (Path(folder) / ANSWER_IDS_MANIFEST).is_file():
        raise DataNotFoundError(f"--answers-from: no {ANSWER_IDS_MANIFEST} in {folder}")
    return Path(folder)


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
