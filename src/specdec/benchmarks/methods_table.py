"""The README's table of methods, rendered from a results page's JSON (``benchmarks/results_page.sh``), so
the numbers users read first are the run's, never typed by hand (a test compares the README with it).

``python -m specdec.benchmarks.methods_table RESULTS.json`` prints the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specdec.benchmarks.data import SPEC_BENCH_TASKS
from specdec.models.packaged import BEST_DRAFTERS

DRAFT = "int8:vocab-2048:smollm2-135m-draft"
TANDEM = "int8:vocab-2048:tandem:smollm2-135m-tandem"
EAGLE3_TREE = "int8:tree-2:eagle3:smollm2-135m-eagle3"
LOOKUP_EAGLE3_CHAIN = "lookup+bf16:eagle3:smollm2-135m-eagle3"
LOOKUP_EAGLE3_TREE = "lookup+int8:tree-2:eagle3:smollm2-135m-eagle3"
BITA = "bita:smollm2-135m-bita"
#: (row name, results method, how to ask for it, what it needs); every row is lossless.
ROWS = (
    ("plain decoding", "ours-plain", "`--method plain`", "nothing"),
    ("prompt lookup", "ours-sps[prompt-lookup]", "`--drafter prompt-lookup`", "nothing"),
    ("speculative sampling, shipped draft", f"ours-sps[{DRAFT}]", f"`--drafter {DRAFT}`", "a trained draft"),
    (
        "prompt lookup, else the draft",
        f"ours-sps[lookup+{DRAFT}]",
        f"`--drafter lookup+{DRAFT}`",
        "a trained draft",
    ),
    ("EAGLE-3 head, top-2 tree", f"ours-sps[{EAGLE3_TREE}]", f"`--drafter {EAGLE3_TREE}`", "a trained head"),
    (
        "prompt lookup, else the EAGLE-3 head's top-2 tree",
        f"ours-sps[{LOOKUP_EAGLE3_TREE}]",
        f"`--drafter {LOOKUP_EAGLE3_TREE}`",
        "a trained head",
    ),
    (
        "prompt lookup, else the EAGLE-3 head's chain",
        f"ours-sps[{LOOKUP_EAGLE3_CHAIN}]",
        f"`--drafter {LOOKUP_EAGLE3_CHAIN}`",
        "a trained head",
    ),
    ("Tandem + SPEED", f"ours-sps[{TANDEM}]", "`--method tandem`", "a trained secondary"),
    (
        "Tandem + SPEED with its router",
        f"ours-sps[{TANDEM.replace('tandem:', 'tandem+router:')}, γ ≤ 8]",
        "`--method tandem --drafter …tandem+router:…`",
        "a trained secondary",
    ),
    (
        "prompt lookup, else BiTA at its measured best shape",
        f"ours-sps[lookup+{BITA}]",
        "`--method bita`",
        "a trained adapter",
    ),
    ("BiTA, measured best shape", f"ours-sps[{BITA}]", f"`--drafter {BITA}`", "a trained adapter"),
    (
        "BiTA, efficient tree",
        "ours-sps[bita[efficient]:smollm2-135m-bita]",
        "`--drafter bita[efficient]:smollm2-135m-bita`",
        "a trained adapter",
    ),
    (
        "HF assisted generation, prompt lookup",
        "hf-assisted[prompt-lookup]",
        "transformers' `prompt_lookup_num_tokens=10`",
        "nothing",
    ),
    (
        "HF assisted generation, the draft (fp32, full head)",
        "hf-assisted[smollm2-135m-draft]",
        "transformers' `assistant_model`",
        "a trained draft",
    ),
)
TASK_NAMES = {
    "math_reasoning": "math",
    "mt_bench": "MT-bench",
    "qa": "QA",
    "rag": "RAG",
    "summarization": "summ.",
    "translation": "transl.",
}


def compiled(row: tuple[str, str, str, str]) -> tuple[str, str, str, str]:
    """The same row on the fast engine (``--compile``; ``bench spec --engine eager,fast``)."""
    name, key, how, needs = row
    key = "ours-plain[fast]" if key == "ours-plain" else key.removesuffix("]") + ", fast]"
    return f"{name}, compiled", key, f"{how} `--compile`", needs


def methods_table(report: dict) -> str:
    """Speed over our plain decoding (all prompts, with the run's 95 % interval, and per task) and over HF
    ``generate``, for every row the run has; a row the run also has on the fast engine follows its eager
    one, compared with plain decoding on the fast engine (both sides compiled)."""
    summary = report["summary"]
    tasks = [t for t in SPEC_BENCH_TASKS if t in summary["ours-plain"]["by_task"]]
    head = ["method", "how", "needs", "× our plain [95 %]", "× HF generate", *(TASK_NAMES[t] for t in tasks)]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|" + "---:|" * (len(head) - 3)]
    default = f"ours-sps[{BEST_DRAFTERS['smollm2-135m']}]"  # what `generate` speculates with
    for row in ROWS:
        for fast, (name, key, how, needs) in enumerate((row, compiled(row))):
            if key not in summary:
                continue
            s, plain = summary[key], summary["ours-plain[fast]" if fast else "ours-plain"]["by_task"]
            low, high = s["speedup_vs_ours_plain_ci95"]
            how = f"{how} (default)" if key == default else how
            cells = [name, how, needs, f"{s['speedup_vs_ours_plain']:.2f}× [{low:.2f}, {high:.2f}]"]
            cells.append(f"{s['speedup_vs_hf_plain']:.2f}×" if s.get("speedup_vs_hf_plain") else "–")
            cells += [f"{s['by_task'][t] / plain[t]:.2f}×" for t in tasks]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(methods_table(json.loads(Path(sys.argv[1]).read_text())))
