"""Sequence-level alignment data (BiLD §3.5.1): prompts answered greedily by the target.

Fine-tuning the draft on the target's own greedy answers teaches it exactly what greedy
verification checks: at every answer position the label *is* the target's argmax. Generation is
the expensive part, so the set is cached under a key of everything that determines it (target,
prompts, length, chat template) and reused by later runs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specdec.errors import DataNotFoundError, EmptyDataError
from specdec.pipeline import Pipeline

# Instruction templates that turn corpus snippets into chat prompts unlike the evaluation sets.
TEMPLATES = {
    "gsm8k": "{text}",
    "continue": "Continue the following text for a few sentences:\n\n{text}",
    "summarize": "Summarize the following passage in two sentences:\n\n{text}",
    "explain-code": "Explain what the following Python code does:\n\n{text}",
}


@dataclass
class AlignmentExample:
    prompt_ids: list[int]
    answer_ids: list[int]


def load_prompts(spec: str, limit: int, seed: int = 0, snippet_chars: int = 600) -> list[str]:
    """Prompts from ``KIND:PATH`` (KIND a key of :data:`TEMPLATES`); gsm8k reads ``question``."""
    kind, _, path = spec.partition(":")
    if kind not in TEMPLATES or not path:
        raise EmptyDataError(
            f"alignment prompts must be KIND:PATH with KIND in {sorted(TEMPLATES)}, got {spec!r}"
        )
    file = Path(path)
    if not file.is_file():
        raise DataNotFoundError(f"alignment prompt file not found: {file}")
    opener = gzip.open if file.name.endswith(".gz") else open
    texts: list[str] = []
    with opener(file, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            text = row.get("question") if kind == "gsm8k" else row.get("text", "")
            # Long documents give several snippets, spread through the document.
            for start in range(0, min(len(text), 20 * snippet_chars), 4 * snippet_chars):
                snippet = text[start : start + snippet_chars].strip()
                if len(snippet) > 40:
                    texts.append(snippet)
                if kind == "gsm8k":
                    break
            if len(texts) >= 4 * limit:
                break
    if not texts:
        raise EmptyDataError(f"no prompts found in {file}")
    step = max(1, len(texts) // limit)
    return [TEMPLATES[kind].format(text=t) for t in texts[::step][:limit]]


def alignment_key(source: str, prompts: Sequence[str], max_new_tokens: int, template: str | None) -> str:
    digest = hashlib.sha256()
    for part in (source, str(max_new_tokens), template or "", *prompts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def generate_alignment_data(
    pipeline: Pipeline,
    prompts: Sequence[str],
    *,
    source: str,
    max_new_tokens: int,
    cache_dir: Path,
    batch_size: int = 8,
    progress=None,
) -> list[AlignmentExample]:
    """Greedy target answers to ``prompts`` (chat template applied), cached as JSON lines."""
    template = getattr(pipeline.tokenizer, "chat_template", None)
    path = Path(cache_dir) / f"alignment-{alignment_key(source, prompts, max_new_tokens, template)}.jsonl"
    if path.is_file():
        return [AlignmentExample(**json.loads(line)) for line in path.read_text().splitlines()]
    examples = []
    for start in range(0, len(prompts), batch_size):
        batch = list(prompts[start : start + batch_size])
        out = pipeline.generate(batch, method="plain", max_new_tokens=max_new_tokens, chat=True)
        for prompt, answer in zip(batch, out.token_ids, strict=True):
            examples.append(AlignmentExample(pipeline.encode(prompt, chat=True), answer))
        if progress is not None:
            progress(len(batch))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(e.__dict__) + "\n" for e in examples))
    os.replace(tmp, path)  # a half-written file would be taken for a finished cache
    return examples
