"""``specdec eval draft`` and ``export``, and what the trainers' commands share: arguments (the primary
cache, resume and time limit, a draft's shape), the bf16 choice and the allocator hint (``train draft``
itself: train_draft.py)."""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.inputs import positive_int


def add_cache_argument(parser: argparse.ArgumentParser, what: str = "from `specdec data primary`") -> None:
    """``--cache``: the primary caches a trainer reads (``train tandem``, ``router``, ``eagle3``)."""
    parser.add_argument(
        "--cache",
        type=Path,
        action="append",
        required=True,
        help=f"primary cache {what}; repeat to read several as one (held-out from each)",
    )


def add_resume_arguments(group: argparse._ArgumentGroup) -> None:
    """``--resume`` and ``--time-limit`` (a budgeted session ends on a checkpoint, then resumes): the Tandem,
    EAGLE-3 and BiTA trainers' (:class:`~specdec.training.bookkeeping.RunBook`)."""
    group.add_argument("--resume", action="store_true", help="continue from the output's last checkpoint")
    group.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop with a checkpoint once this much training time is spent (continue with --resume)",
    )


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("draft shape")
    model.add_argument("--layers", type=positive_int, default=4)
    model.add_argument("--hidden-size", type=positive_int, default=None)
    model.add_argument("--intermediate-size", type=positive_int, default=None)
    model.add_argument("--heads", type=positive_int, default=None)
    model.add_argument("--kv-heads", type=positive_int, default=None)
    model.add_argument("--init", choices=("target", "fresh"), default="target")
    model.add_argument("--init-layers", default=None, help="target layers to copy, e.g. 0,1,28,29")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--draft", required=True, type=Path, help="trained draft or Tandem folder (e.g. OUTPUT/best)"
    )
    parser.add_argument("--base", default="smollm2-135m", help="model whose tensors the draft shares")
    parser.add_argument("--name", required=True, help="name to load it by, e.g. smollm2-135m-draft")
    parser.add_argument("--eval-report", type=Path, default=None, help="eval draft JSON to record beside it")
    parser.add_argument("--dest", type=Path, default=None, help="default: the package's drafts folder")


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument(
        "--draft", required=True, help="a draft model (name, folder) or first-N / int8 / bf16"
    )
    parser.add_argument("--heldout", default=None, help="held-out text / .jsonl(.gz) file")
    parser.add_argument("--heldout-chars", type=positive_int, default=200_000)
    parser.add_argument("--windows", type=positive_int, default=32)
    parser.add_argument("--seq-len", type=positive_int, default=128)
    parser.add_argument("--spec-bench", type=Path, default=None)
    parser.add_argument("--per-task", type=positive_int, default=1)
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--gamma", type=positive_int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="write the report as JSON here")
    parser.add_argument("--cache-dir", default=None)


def shape_from_args(args: argparse.Namespace):
    """The draft shape the ``draft shape`` options describe (train draft / train tandem)."""
    from specdec.training import DraftShape

    init_layers = tuple(int(i) for i in args.init_layers.split(",")) if args.init_layers else None
    sizes = (args.layers, args.hidden_size, args.intermediate_size, args.heads, args.kv_heads)
    return DraftShape(*sizes, args.init, init_layers)


def run_eval(args: argparse.Namespace) -> dict:
    from specdec.benchmarks.data import load_spec_bench, spec_bench_path
    from specdec.drafters import ModelDrafter, make_drafter
    from specdec.models import load_model
    from specdec.training import evaluate_draft, fixed_windows, read_documents, tokenize_stream

    target = load_model(args.target, cache_dir=args.cache_dir)
    drafter = make_drafter(args.draft, target.model, target.tokenizer, cache_dir=args.cache_dir)
    if not isinstance(drafter, ModelDrafter):
        raise InvalidArgumentError(f"eval draft needs a draft model; {args.draft!r} has none")
    drafter.validate(target.model, target.tokenizer)
    windows = None
    if args.heldout:
        stream = tokenize_stream(read_documents(args.heldout, max_chars=args.heldout_chars), target.tokenizer)
        windows = fixed_windows(stream, args.windows, args.seq_len + 1)
    prompts = [p["prompt"] for p in load_spec_bench(args.spec_bench or spec_bench_path(), args.per_task)]
    with torch.inference_mode():
        report = evaluate_draft(
            target.model,
            drafter.model,
            target.tokenizer,
            heldout_windows=windows,
            prompts=prompts,
            max_new_tokens=args.max_new_tokens,
            gamma=args.gamma,
        )
    report["draft"], report["target"] = args.draft, target.source
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return report


def run_export(args: argparse.Namespace) -> Path:
    """Package a trained draft or Tandem secondary (bf16, shared base tensors by reference) so it loads by
    name."""
    from transformers import AutoModelForCausalLM

    from specdec.models import load_model
    from specdec.models.packaged import DRAFTS_DIR
    from specdec.models.tandem import CONFIG_FILE as TANDEM_CONFIG
    from specdec.training.export import export_draft, export_tandem

    if not args.draft.is_dir():  # e.g. a run stopped before its first evaluation wrote best/
        raise DataNotFoundError(f"no checkpoint folder at {args.draft}: the run has not saved one there")
    run_dir = args.draft.parent
    missing = [name for name in ("train_config.json", "log.jsonl") if not (run_dir / name).is_file()]
    if missing:
        raise DataNotFoundError(
            f"{args.draft} is not a checkpoint inside a training run: export records the run's "
            f"{' and '.join(missing)} from {run_dir} (give OUTPUT/best of `specdec train ...`)"
        )
    base = load_model(args.base)
    info = {
        "training_config": json.loads((run_dir / "train_config.json").read_text()),
        "final_log": json.loads((run_dir / "log.jsonl").read_text().splitlines()[-1]),
    }
    if args.eval_report:
        info["eval"] = json.loads(args.eval_report.read_text())
    folder = (args.dest or DRAFTS_DIR) / args.name
    if (args.draft / TANDEM_CONFIG).is_file():
        export_tandem(args.draft, folder, args.base, base.model, info)
    else:
        draft = AutoModelForCausalLM.from_pretrained(args.draft, dtype=torch.float32)
        export_draft(draft, folder, args.base, base.model, info)
    kind = "Tandem secondary" if (folder / TANDEM_CONFIG).is_file() else "draft"
    print(f"packaged {kind} written to {folder}")
    return folder


def allocator_hint() -> str | None:
    """Advice for CPU training under glibc's malloc, or None where it does not apply.

    A training step frees logits and their gradients of up to GBs; glibc returns blocks that large to
    the kernel, and the next step faults them back in page by page. Measured on a 2-core EPYC (the
    distilled draft, batch 24): about 8 s/step with half the CPU time in the kernel; 3.7 s with
    ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``; 2.0 s with jemalloc told to keep its pages."""
    from specdec.benchmarks.report import allocator

    if torch.cuda.is_available() or platform.libc_ver()[0] != "glibc" or allocator() != "glibc":
        return None
    return (
        "specdec: training on CPU with glibc's malloc, which hands each step's large tensors back to the "
        "kernel; steps ran 4x faster with `LD_PRELOAD=libjemalloc.so.2 "
        "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1` (Debian: apt install libjemalloc2)"
    )


def bf16_pays() -> bool:
    """bf16 autocast is a win on GPUs and on CPUs with native bf16 (AVX-512 BF16 or AMX)."""
    if torch.cuda.is_available():
        return True
    cpuinfo = Path("/proc/cpuinfo")
    flags = cpuinfo.read_text() if cpuinfo.is_file() else ""
    return "avx512_bf16" in flags or "amx_bf16" in flags
