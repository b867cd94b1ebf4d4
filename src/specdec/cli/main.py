"""``specdec`` command line, organised by task: use (generate, demo, serve, drafters), measure (bench …),
train (data …, train …) and evaluate (eval …). The command words of earlier releases still work, with a
line saying what they are called now."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, field

from specdec.errors import SpecDecError

TASKS = """commands, by task:
  use        generate, demo, serve, drafters, export
  measure    bench {spec, engine, serving, server, bild}
  train      data {answers, text, primary, draft-vocab}
             train {draft, early-exit, tandem, router, bita, eagle3, export}
  evaluate   eval {draft, tandem, bita}
"""


@dataclass(frozen=True)
class Command:
    """One command: where its arguments and its runner live (imported only when it runs)."""

    words: tuple[str, ...]  # ("generate",) or a group and its sub-command, ("bench", "spec")
    help: str
    module: str
    add: str | None  # the function adding its arguments (None: it has none)
    run: str
    options: dict = field(default_factory=dict)  # keyword arguments of ``add``


B, C, T = "specdec.benchmarks", "specdec.cli", "specdec.cli.train"
COMMANDS = (
    Command(
        ("generate",),
        "generate text, marking accepted draft tokens",
        f"{C}.generate",
        "add_generate_arguments",
        "run_generate",
    ),
    Command(
        ("demo",),
        "answer a prompt with and without speculation, print the speedup",
        f"{C}.generate",
        "add_demo_arguments",
        "run_demo",
    ),
    Command(
        ("serve",),
        "an OpenAI-compatible server with speculative decoding",
        f"{C}.serve",
        "add_serve_arguments",
        "run_serve",
    ),
    Command(
        ("drafters",),
        "list the drafter specs and the packaged drafters",
        f"{C}.drafters",
        None,
        "run_drafters",
    ),
    Command(
        ("export",),
        "write a draft as a folder vLLM (draft_model) and SGLang (STANDALONE) serve",
        f"{C}.export",
        "add_export_arguments",
        "run_export",
    ),
    Command(
        ("bench", "spec"),
        "Spec-Bench speed of every method against HF generate",
        f"{B}.specbench",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("bench", "engine"),
        "plain decoding speed of random-weight models vs HF and the bandwidth bound",
        f"{B}.engine_speed",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("bench", "serving"),
        "continuous batching in-process: plain vs speculative by concurrency",
        f"{B}.serving",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("bench", "server"),
        "load test of specdec serve over HTTP",
        f"{B}.server_load",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("bench", "bild"),
        "BiLD (α_FB, α_RB) grid: quality vs latency against plain and SpS",
        f"{B}.bild_sweep",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("data", "answers"),
        "the target's own answers to prompts, cached",
        f"{C}.data_answers",
        "add_answers_arguments",
        "run_answers",
    ),
    Command(
        ("data", "text"),
        "held-out human text in the answers format",
        f"{C}.data",
        "add_text_arguments",
        "run_text",
    ),
    Command(
        ("data", "primary"),
        "the primary's hidden states and top-k logits, cached",
        f"{C}.data",
        "add_primary_arguments",
        "run_primary",
    ),
    Command(
        ("data", "draft-vocab"),
        "token frequencies of target answers, for vocab-N:DRAFT",
        f"{C}.data",
        "add_draft_vocab_arguments",
        "run_draft_vocab",
    ),
    Command(
        ("train", "draft"),
        "train a small draft model for a target",
        f"{C}.train_draft",
        "add_train_arguments",
        "run_train",
    ),
    Command(
        ("train", "early-exit"),
        "fine-tune a model so its first layers draft for it (BiLD §4.4)",
        f"{C}.train_draft",
        "add_train_arguments",
        "run_train",
        {"early_exit": True},
    ),
    Command(
        ("train", "tandem"),
        "train a Tandem secondary (or its distilled-draft baseline) on a primary cache",
        f"{C}.train_tandem",
        "add_tandem_arguments",
        "run_train_tandem",
    ),
    Command(
        ("train", "router"),
        "train a Tandem secondary's adaptive block length router",
        f"{C}.train_tandem",
        "add_router_arguments",
        "run_train_router",
    ),
    Command(
        ("train", "bita"),
        "tune BiTA prompt and mask tokens on the target's own answers",
        f"{C}.train_bita",
        "add_bita_arguments",
        "run_train_bita",
    ),
    Command(
        ("train", "eagle3"),
        "train an EAGLE-3 head on a primary cache (speculators layout)",
        f"{C}.train_eagle3",
        "add_eagle3_arguments",
        "run_train_eagle3",
    ),
    Command(
        ("train", "export"),
        "package a trained drafter to load it by name",
        T,
        "add_export_arguments",
        "run_export",
    ),
    Command(
        ("eval", "draft"), "agreement, α and SpS tokens/call of a draft", T, "add_eval_arguments", "run_eval"
    ),
    Command(
        ("eval", "tandem"),
        "Tandem's Table 1, accepted tokens per block and budget curve",
        f"{B}.tandem_eval",
        "add_arguments",
        "run_from_args",
    ),
    Command(
        ("eval", "bita"),
        "BiTA: accepted tokens per tree shape, measured cost, the shape to use",
        f"{B}.bita_eval",
        "add_arguments",
        "run_from_args",
    ),
)
GROUPS = {
    "bench": "measure speed",
    "data": "training data",
    "train": "train drafters",
    "eval": "evaluate drafters",
}

RENAMED = {  # command words of earlier releases -> today's
    ("bench-engine",): ("bench", "engine"),
    ("bench-serving",): ("bench", "serving"),
    ("bench-server",): ("bench", "server"),
    ("sweep", "bild"): ("bench", "bild"),
    ("eval-draft",): ("eval", "draft"),
    ("eval-tandem",): ("eval", "tandem"),
    ("eval-bita",): ("eval", "bita"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specdec",
        description="Speculative decoding for Hugging Face causal LMs.",
        epilog=TASKS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    groups: dict = {}  # group name -> its sub-command parsers
    for command in COMMANDS:  # in the table's order: the commands users run first, first
        where = sub
        if len(command.words) == 2:
            group = command.words[0]
            if group not in groups:
                parent = sub.add_parser(group, help=GROUPS[group])
                groups[group] = parent.add_subparsers(dest="what", required=True, metavar="what")
            where = groups[group]
        child = where.add_parser(command.words[-1], help=command.help, description=command.help)
        if command.add is not None:
            getattr(importlib.import_module(command.module), command.add)(child, **command.options)
    return parser


def current_words(argv: list[str]) -> list[str]:
    """``argv`` with an earlier release's command words replaced by today's (saying so on stderr)."""
    for old, new in RENAMED.items():
        if tuple(argv[: len(old)]) == old:
            print(
                f"specdec: `{' '.join(old)}` is now `{' '.join(new)}`; the old name will go", file=sys.stderr
            )
            return [*new, *argv[len(old) :]]
    kinds = {c.words[1] for c in COMMANDS if c.words[0] == "bench"}
    if argv[:1] == ["bench"] and not (set(argv[1:2]) & (kinds | {"-h", "--help"})):
        print("specdec: `bench` is now `bench spec`; the old form will go", file=sys.stderr)
        return ["bench", "spec", *argv[1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(current_words(list(sys.argv[1:] if argv is None else argv)))
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the CLI shows its own status; transformers' bar per model is noise
    words = (args.command, *([args.what] if args.command in GROUPS else []))
    command = next(c for c in COMMANDS if c.words == words)
    try:
        if command.words[0] == "train" and command.words[1] != "export":
            from specdec.cli.train import allocator_hint

            if hint := allocator_hint():
                print(hint, file=sys.stderr)
        getattr(importlib.import_module(command.module), command.run)(args)
    except SpecDecError as err:
        print(f"specdec: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
