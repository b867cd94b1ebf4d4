import json

import pytest
import torch
from accelerate import Accelerator

from specdec.errors import InvalidArgumentError
from specdec.training.bookkeeping import RunBook, check_time_limit
from specdec.training.checkpoints import TRAINER_STATE_FILE


def book_in(tmp_path, time_limit_s=None) -> RunBook:
    weights = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([weights], lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)

    def save_weights(folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "weights.txt").write_text("w")

    return RunBook(
        tmp_path,
        Accelerator(cpu=True),
        save_weights,
        optimizer,
        scheduler,
        score=lambda scores: scores["accepted"],
        time_limit_s=time_limit_s,
    )


def test_the_best_is_the_highest_score_so_far_and_resume_restores_it(tmp_path):
    book = book_in(tmp_path)
    for step, accepted in ((1, 0.5), (2, 0.9), (3, 0.7)):
        record = {"step": step, "accepted": accepted, "heldout_loss": 1.0 / step, "loss": 2.0}
        book.tokens_seen += 10
        book.scored(record)
        book.log(record)
        assert book.end_step(step, last=step == 3, save_every=2) is False
        assert record["best_step"] == (1 if step == 1 else 2)
    assert book.best == {"step": 2, "accepted": 0.9, "heldout_loss": 0.5}  # scores only, not the loss
    state = torch.load(tmp_path / "best" / TRAINER_STATE_FILE, weights_only=False)
    assert state["step"] == 2 and state["tokens_seen"] == 20
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-3"]
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["best_step"] for r in log] == [1, 2, 2]

    again = book_in(tmp_path)
    again.resume(tmp_path / "checkpoint-3")
    assert (again.step, again.best, again.tokens_seen) == (3, book.best, 30)


def test_a_time_limit_stops_the_run_on_a_checkpoint(tmp_path):
    book = book_in(tmp_path, time_limit_s=1e-9)
    assert book.end_step(1, last=False, save_every=100) is True
    assert (tmp_path / "checkpoint-1" / "weights.txt").is_file()
    assert book.end_step(5, last=True, save_every=100) is False  # the last step ends the run anyway
    assert book_in(tmp_path / "open").end_step(1, last=False, save_every=100) is False


def test_the_config_is_written_once_per_run(tmp_path):
    from specdec.training.bita import BiTATrainConfig

    book = book_in(tmp_path)
    book.write_config(BiTATrainConfig(output_dir="first"))
    book.write_config(BiTATrainConfig(output_dir="second", resume=True))  # a resumed run keeps the file
    assert json.loads((tmp_path / "train_config.json").read_text())["output_dir"] == "first"
    book.write_config(BiTATrainConfig(output_dir="third"))  # a fresh start replaces it
    assert json.loads((tmp_path / "train_config.json").read_text())["output_dir"] == "third"


@pytest.mark.parametrize("seconds", [0, -1.0])
def test_time_limits_must_be_positive(seconds):
    with pytest.raises(InvalidArgumentError, match="time_limit_s"):
        check_time_limit(seconds)
    check_time_limit(None)
    check_time_limit(0.5)
