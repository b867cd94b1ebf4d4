"""Every trainer (draft, tandem, eagle3, bita) under ``accelerate launch`` with two CPU processes (gloo)
follows the same loss trajectory and ends at the same weights as one process at the same global batch:
each step's batch is drawn by (seed, step) and dealt out by rank, and each process weighs its loss by its
share of the batch's answer positions, so the averaged gradient is the whole batch's. Each log line
records the processes that ran it, so a launcher that quietly ran one process fails here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from specdec.pipeline import Pipeline
from specdec.training.answers import generate_answers
from specdec.training.primary_cache import CacheSpec, build_primary_cache
from tiny import make_llama, make_tokenizer

PROMPTS = [
    f"{a} {b}" for a in ("the quick", "def add(a, b):", "Once upon", "a small model") for b in ("fox", "cat")
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0)  # the model of the tiny_model_dir fixture
    answers = generate_answers(
        Pipeline(target, tok),
        PROMPTS * 2,
        source="mp",
        max_new_tokens=16,
        cache_dir=tmp_path_factory.mktemp("a"),
    )
    folder = tmp_path_factory.mktemp("cache")
    build_primary_cache(target, answers, folder, CacheSpec("mp", (0, 1, 2), 8, 64), shard_size=8)
    return folder


@pytest.fixture(scope="module")
def answers_file(cache) -> Path:
    """The answers file the cache was built from (what `train bita` reads)."""
    return next(cache.parent.glob("a*/**/answers-*.jsonl"))


def train(command: list[str], output: Path, processes: int) -> list[dict]:
    """Run ``specdec COMMAND --output OUTPUT`` in one process, or under ``accelerate launch`` in several."""
    launch = [sys.executable, "-m", "specdec.cli.main"]
    if processes > 1:  # --multi_gpu on a machine without GPUs: DDP over gloo (--cpu would run one process)
        launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
        launch += ["--num_processes", str(processes), "--num_machines", "1", "--mixed_precision", "no"]
        launch += ["--dynamo_backend", "no", "-m", "specdec.cli.main"]
    env = os.environ | {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [*launch, *command, "--output", str(output)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (output / "log.jsonl").read_text().splitlines()]


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return {k: v for f in sorted(folder.rglob("*.safetensors")) for k, v in load_file(str(f)).items()}


def command_for(kind: str, target: Path, cache: Path, answers: Path, tmp_path: Path) -> list[str]:
    """A few steps of ``train KIND`` on the tiny target, a batch of 4 (2 per process with two)."""
    common = ["--target", str(target), "--steps", "4", "--batch-size", "4", "--warmup", "1"]
    common += ["--eval-every", "4", "--save-every", "4"]
    if kind == "draft":  # text windows on odd steps, the target's answers (masked, uneven rows) on even
        corpus, questions = tmp_path / "corpus.txt", tmp_path / "questions.jsonl"
        corpus.write_text(" ".join(PROMPTS * 400))
        questions.write_text("".join(json.dumps({"question": p}) + "\n" for p in PROMPTS))
        command = ["train", "draft", *common, "--corpus", str(corpus), "--align", f"gsm8k:{questions}"]
        command += ["--align-max-new-tokens", "12", "--layers", "1", "--seq-len", "32"]
        return [*command, "--cache-dir", str(tmp_path)]
    common += ["--eval-sequences", "2", "--bf16", "off"]
    if kind == "bita":
        return ["train", "bita", *common, "--answers", str(answers), "--groups", "2"]
    common += ["--cache", str(cache)]
    if kind == "tandem":
        return ["train", "tandem", *common, "--layers", "1"]
    return ["train", "eagle3", *common, "--aux-layers", "0,1,2", "--draft-vocab", "full"]


@pytest.mark.parametrize("kind", ["tandem", "eagle3", "draft", "bita"])
def test_two_processes_train_as_one_at_the_same_global_batch(
    tmp_path, tiny_model_dir, cache, answers_file, kind
):
    command = command_for(kind, tiny_model_dir, cache, answers_file, tmp_path)
    one = train(command, tmp_path / "one", 1)
    two = train(command, tmp_path / "two", 2)
    first = [0] if kind == "eagle3" else []  # eagle3 scores its starting head before training
    assert [r["step"] for r in two] == [r["step"] for r in one] == [*first, 1, 2, 3, 4]
    one, two = one[len(first) :], two[len(first) :]
    assert {r["processes"] for r in one} == {1} and {r["processes"] for r in two} == {2}  # really two
    seen = "sar_tokens_seen" if kind == "bita" else "tokens_seen"
    assert [r.get(seen) for r in two] == [r.get(seen) for r in one]
    assert [r["loss"] for r in two] == pytest.approx([r["loss"] for r in one], rel=1e-4)
    assert one[0]["loss"] != pytest.approx(
        one[-1]["loss"], rel=1e-3
    )  # it trained: the comparison means something
    saved = "final" if kind == "draft" else "checkpoint-4"
    a, b = weights(tmp_path / "one" / saved), weights(tmp_path / "two" / saved)
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


class Ranks:
    """What rank_picks reads of an Accelerator."""

    def __init__(self, index: int, processes: int):
        self.process_index, self.num_processes = index, processes


def test_processes_deal_out_one_batch_and_refuse_an_uneven_split():
    from specdec.errors import InvalidArgumentError
    from specdec.training.distributed import rank_picks

    whole, _ = rank_picks(1000, 6, 3, 7, Ranks(0, 1))
    parts = [rank_picks(1000, 6, 3, 7, Ranks(r, 2))[0] for r in range(2)]
    assert sorted(parts[0] + parts[1]) == sorted(whole) and parts[0] != parts[1]
    assert rank_picks(1000, 6, 3, 8, Ranks(0, 1))[0] != whole  # another step, another batch
    with pytest.raises(InvalidArgumentError, match="does not split evenly"):
        rank_picks(1000, 5, 3, 7, Ranks(0, 2))
