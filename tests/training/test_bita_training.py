"""The BiTA adapter and its trainer on tiny models: the SAR loss learns, resume is exact, ``best/``
follows the tree decoding will run, files round-trip and refuse the wrong model, the CLI trains and
continues adapters (the packed training pass itself: test_sar.py)."""

import json

import pytest
import torch

from specdec.errors import InvalidArgumentError, ModelNotFoundError, VocabularyMismatchError
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.pipeline import Pipeline
from specdec.training import generate_answers
from specdec.training.bita import BiTATrainConfig, selected_score, train_bita
from tiny import make_llama, make_tokenizer, random_answers_file


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=2)
    prompts = [
        f"{a} {b}" for a in ("the quick", "def add(a, b):", "Once upon") for b in ("fox", "dog", "cat")
    ]
    out = generate_answers(
        Pipeline(target, tok),
        prompts * 2,
        source="tiny",
        max_new_tokens=24,
        cache_dir=tmp_path_factory.mktemp("a"),
    )
    return target, out


def config(tmp_path, **overrides):
    base = dict(
        output_dir=str(tmp_path),
        steps=12,
        batch_size=4,
        groups=8,
        eval_every=6,
        save_every=6,
        eval_sequences=4,
    )
    return BiTATrainConfig(**{**base, **overrides})


def test_training_learns_and_resumes_exactly(tmp_path, answers):
    target, data = answers
    torch.manual_seed(0)
    adapter = BiTAAdapter(model_signature(target), 4, 3, "deep")
    best = train_bita(target, adapter, data, config(tmp_path / "full"))
    log = [
        __import__("json").loads(line) for line in (tmp_path / "full" / "log.jsonl").read_text().splitlines()
    ]
    assert log[-1]["loss"] < log[0]["loss"] and (best / "bita.json").is_file()
    assert log[-1]["sar_tokens_seen"] > 0 and "accepted_efficient" in log[5]

    torch.manual_seed(0)
    first = BiTAAdapter(model_signature(target), 4, 3, "deep")
    train_bita(target, first, data, config(tmp_path / "cut", steps=6))
    resumed = train_bita(
        target,
        BiTAAdapter(model_signature(target), 4, 3, "deep"),
        data,
        config(tmp_path / "cut", resume=True),
    )
    a = BiTAAdapter.from_pretrained(tmp_path / "full" / "checkpoint-12")
    b = BiTAAdapter.from_pretrained(tmp_path / "cut" / "checkpoint-12")
    assert torch.equal(a.prompts, b.prompts) and torch.equal(a.masks, b.masks)
    assert resumed.is_dir()

    # a time limit ends the run on a checkpoint after the step that crosses it; resume finishes it exactly
    torch.manual_seed(0)
    timed = BiTAAdapter(model_signature(target), 4, 3, "deep")
    train_bita(target, timed, data, config(tmp_path / "timed", time_limit_s=1e-9))
    assert [p.name for p in sorted((tmp_path / "timed").glob("checkpoint-*"))] == ["checkpoint-1"]
    train_bita(target, timed, data, config(tmp_path / "timed", resume=True))
    c = BiTAAdapter.from_pretrained(tmp_path / "timed" / "checkpoint-12")
    assert torch.equal(a.prompts, c.prompts) and torch.equal(a.masks, c.masks)


def test_best_is_the_checkpoint_that_accepts_most_with_the_tree_decoding_runs(tmp_path, answers):
    """``select_widths`` scores the tree decoding will run (here the top 2 of the first mask) and
    ``best/`` follows it; the default scores the efficient tree, as runs before the option did."""
    target, data = answers
    torch.manual_seed(0)
    adapter = BiTAAdapter(model_signature(target), 4, 3, "deep")
    best = train_bita(
        target, adapter, data, config(tmp_path / "two", eval_every=3, save_every=3, select_widths=(2,))
    )
    log = [json.loads(line) for line in (tmp_path / "two" / "log.jsonl").read_text().splitlines()]
    evals = [r for r in log if "accepted_selected" in r]
    assert len(evals) == 4 and any(r["accepted_selected"] != r["accepted_efficient"] for r in evals)
    chosen = max(evals, key=lambda r: r["accepted_selected"])  # max keeps the first of equals, as train does
    assert log[-1]["best_step"] == chosen["step"]
    chosen_weights = BiTAAdapter.from_pretrained(tmp_path / "two" / f"checkpoint-{chosen['step']}")
    assert torch.equal(BiTAAdapter.from_pretrained(best).masks, chosen_weights.masks)
    torch.manual_seed(0)
    plain = BiTAAdapter(model_signature(target), 4, 3, "deep")
    train_bita(target, plain, data, config(tmp_path / "efficient", steps=3, eval_every=3))
    record = json.loads((tmp_path / "efficient" / "log.jsonl").read_text().splitlines()[-1])
    assert record["accepted_selected"] == record["accepted_efficient"]
    assert selected_score({"accepted_efficient": 0.5}) == 0.5  # a best/ recorded before the option
    with pytest.raises(InvalidArgumentError, match="select_widths"):
        config(tmp_path, select_widths=(0,))


def test_adapter_files_round_trip_and_refuse_the_wrong_model(tmp_path, bita_target):
    torch.manual_seed(3)
    adapter = BiTAAdapter(model_signature(bita_target), 4, 3, "deep", model_name="tiny")
    adapter.save_pretrained(tmp_path / "a")
    loaded = BiTAAdapter.from_pretrained(tmp_path / "a")
    assert torch.equal(loaded.prompts, adapter.prompts) and torch.equal(loaded.masks, adapter.masks)
    loaded.check_model(bita_target, "tiny")
    with pytest.raises(VocabularyMismatchError, match="belongs to"):
        loaded.check_model(make_llama(bita_target.config.vocab_size, layers=3))
    with pytest.raises(VocabularyMismatchError, match="'tiny'"):
        loaded.check_model(bita_target, "other")
    with pytest.raises(ModelNotFoundError, match="not a BiTA adapter"):
        BiTAAdapter.from_pretrained(tmp_path)


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 3, "deep"), "P must"), ((4, 0, "deep"), "M"), ((4, 3, "none"), "P must"), ((4, 3, "wide"), "kind")],
)
def test_adapter_arguments_are_checked(bita_target, args, match):
    with pytest.raises(InvalidArgumentError, match=match):
        BiTAAdapter(model_signature(bita_target), *args)


def test_the_cli_trains_an_adapter_and_decodes_with_it(tmp_path, tiny_model_dir, capsys):
    import json

    from specdec.cli.main import main

    answers = random_answers_file(tmp_path / "answers.jsonl", 12)
    out = tmp_path / "bita"
    train = f"train bita --target {tiny_model_dir} --answers {answers} --output {out} --prompts 4 --steps 2"
    options = " --batch-size 2 --groups 4 --eval-every 2 --save-every 2 --eval-sequences 2 --bf16 off"
    assert main((train + options).split()) == 0
    assert json.loads((out / "train_config.json").read_text())["extra"]["machine"]["cpu"]
    for spec in (f"bita:{out / 'best'}", f"bita[straight]:{out / 'best'}", f"lookup+bita:{out / 'best'}"):
        generate = f"generate hi --no-chat --model {tiny_model_dir} --drafter {spec} --max-new-tokens 6"
        assert main(generate.split()) == 0
        assert main([*generate.split(), "--method", "bita"]) == 0
    assert "bita" in capsys.readouterr().out
    assert main([*train.split(), "--answers", str(tmp_path / "missing.jsonl")]) == 2
    for shape in ("full-2", "2/1/1/1", "wide"):  # not a walk of top-1 nodes, deeper than 3 masks, no shape
        assert main([*train.split(), "--output", str(tmp_path / "x"), "--select-shape", shape]) == 2
    capsys.readouterr()
    unloadable = train.replace(str(tiny_model_dir), str(tmp_path / "no-such-model"))
    assert main([*unloadable.split(), "--select-shape", "2/1/1/1"]) == 2  # refused before the target loads
    assert "a tree 4 deep needs as many mask tokens; the adapter has 3" in capsys.readouterr().err
    assert (
        main([*train.split(), *options.split(), "--output", str(tmp_path / "s"), "--select-shape", "2"]) == 0
    )
    assert json.loads((tmp_path / "s" / "train_config.json").read_text())["select_widths"] == [2]
    assert main(f"generate hi --no-chat --model {tiny_model_dir} --drafter bita:{tmp_path}".split()) == 2


def test_init_from_continues_an_adapter_with_its_own_design(tmp_path, tiny_model_dir):
    """``--init-from`` starts from the given adapter's weights (lr 0 keeps them) and keeps its prompt
    and mask counts whatever the flags say; an unknown adapter is a clear error."""
    from specdec.cli.main import main

    answers = random_answers_file(tmp_path / "answers.jsonl", 12)
    model = load_model(str(tiny_model_dir)).model
    torch.manual_seed(3)
    BiTAAdapter(model_signature(model), 4, 2, "deep").save_pretrained(tmp_path / "start")
    start = BiTAAdapter.from_pretrained(tmp_path / "start")
    out = tmp_path / "continued"
    train = f"train bita --target {tiny_model_dir} --answers {answers} --output {out} --prompts 8 --masks 3"
    options = " --steps 2 --lr 0 --batch-size 2 --groups 4 --eval-every 2 --save-every 2 --eval-sequences 2"
    assert main((train + options + f" --bf16 off --init-from {tmp_path / 'start'}").split()) == 0
    continued = BiTAAdapter.from_pretrained(out / "best")
    assert (continued.num_prompts, continued.num_masks) == (4, 2)
    for (name, mine), theirs in zip(continued.state_dict().items(), start.state_dict().values(), strict=True):
        torch.testing.assert_close(mine, theirs, msg=name)
    assert main((train + options + f" --init-from {tmp_path / 'nowhere'}").split()) == 2
