"""``specdec export``: a draft as a folder vLLM (``draft_model``) and SGLang (``STANDALONE``) serve as is.

Unlike ``specdec train export``, which packages a trained draft so specdec loads it by name (only its own
tensors, the rest by reference), this writes a complete, ordinary HF checkpoint for another engine.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from specdec.inputs import positive_int


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--draft",
        required=True,
        help="a packaged draft (e.g. smollm2-135m-draft) or an HF folder; runtime prefixes such as "
        "vocab-N: or int8: are dropped (the engines run the full head in the target's dtype)",
    )
    parser.add_argument(
        "--target", default="smollm2-135m", help="built-in name, HF folder or .gguf the draft drafts for"
    )
    parser.add_argument("--output", required=True, type=Path, help="folder to write (new, or an export)")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "bfloat16", "float16"),
        help="weights' dtype on disk (the engines run the draft in the target's dtype anyway; "
        "bfloat16 halves the folder)",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=positive_int,
        default=5,
        help="draft tokens per step in the printed commands",
    )
    parser.add_argument("--cache-dir", default=None)


def run_export(args: argparse.Namespace) -> Path:
    """Write the folder, then print what it holds and the two commands that serve it."""
    from specdec.models.export import export_for_serving, serve_commands

    result = export_for_serving(
        args.draft, args.target, args.output, dtype=args.dtype, cache_dir=args.cache_dir
    )
    record = result.record
    print(
        f"draft written to {result.folder}: {record['architecture']}, vocabulary {record['vocab_size']} "
        f"(the target's), {record['dtype']}, weights sha256 {record['draft_sha256_16']}; "
        f"tokenizer and generation config copied from {result.target}"
    )
    if record["padded_from"] is not None:
        print(f"the draft had {record['padded_from']} token rows; the rest are the target's")
    if record["dropped"]:
        print(f"dropped runtime options: {', '.join(record['dropped'])} (the full draft is exported)")
    commands = serve_commands(result, args.num_speculative_tokens)
    print(f"\nserve with vLLM:\n  {commands['vllm']}\n\nserve with SGLang:\n  {commands['sglang']}")
    return result.folder
