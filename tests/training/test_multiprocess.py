"""Training under ``accelerate launch`` with two CPU processes (DDP over gloo) follows the same loss
trajectory and ends at the same weights as one process at the same global batch: each step's batch is
drawn by (seed, step) and dealt out by rank, and each process weighs its loss by its share of the
batch's answer positions, so the averaged gradient is the whole batch's."""

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


def train(command: list[str], output: Path, processes: int) -> list[dict]:
    """Run ``specdec COMMAND --output OUTPUT`` in one process, or under ``accelerate launch`` in several."""
    launch = [sys.executable, "-m", "specdec.cli.main"]
    if processes > 1:
        launch = [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--cpu",
            "--num_processes",
            str(processes),
        ]
        launch += [
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "-m",
            "specdec.cli.main",
        ]
    env = os.environ | {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [*launch, *command, "--output", str(output)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (output / "log.jsonl").read_text().splitlines()]


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return {k: v for f in sorted(folder.rglob("*.safetensors")) for k, v in load_file(str(f)).items()}


@pytest.mark.parametrize("kind", ["tandem", "eagle3"])
def test_two_processes_train_as_one_at_the_same_global_batch(tmp_path, tiny_model_dir, cache, kind):
    common = ["--target", str(tiny_model_dir), "--cache", str(cache), "--steps", "4", "--batch-size", "4"]
    common += ["--eval-every", "4", "--save-every", "4", "--eval-sequences", "2", "--bf16", "off"]
    if kind == "tandem":
        command = ["train", "tandem", *common, "--layers", "1", "--warmup", "1"]
    else:
        command = [
            "train",
            "eagle3",
            *common,
            "--aux-layers",
            "0,1,2",
            "--draft-vocab",
            "full",
            "--warmup",
            "1",
        ]
    one = train(command, tmp_path / "one", 1)
    two = train(command, tmp_path / "two", 2)
    assert [r["step"] for r in two] == [1, 2, 3, 4]
    assert [r["tokens_seen"] for r in two] == [r["tokens_seen"] for r in one]
    assert [r["loss"] for r in two] == pytest.approx([r["loss"] for r in one], rel=1e-4)
    assert one[0]["loss"] != pytest.approx(
        one[-1]["loss"], rel=1e-3
    )  # it trained: the comparison means something
    a, b = weights(tmp_path / "one" / "checkpoint-4"), weights(tmp_path / "two" / "checkpoint-4")
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


class Ranks:
    """What rank_picks reads of an Accelerator."""

    def __init__(self, index: int, processes: int):
        self.process_index, self.num_processes = index, processes


def test_processes_deal_out_one_batch_and_refuse_an_uneven_split():
    from specdec.errors import InvalidArgumentError
    from specdec.training.trainer import rank_picks

    whole, _ = rank_picks(1000, 6, 3, 7, Ranks(0, 1))
    parts = [rank_picks(1000, 6, 3, 7, Ranks(r, 2))[0] for r in range(2)]
    assert sorted(parts[0] + parts[1]) == sorted(whole) and parts[0] != parts[1]
    assert rank_picks(1000, 6, 3, 8, Ranks(0, 1))[0] != whole  # another step, another batch
    with pytest.raises(InvalidArgumentError, match="does not split evenly"):
        rank_picks(1000, 5, 3, 7, Ranks(0, 2))
