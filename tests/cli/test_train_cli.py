import json

import pytest

from specdec.cli.main import main

TEXT = "the quick brown fox jumps over the lazy dog. " * 40


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return path


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "question.jsonl"
    rows = [
        {"question_id": i, "category": c, "turns": ["the quick brown", "again"]}
        for i, c in enumerate(["qa", "rag"])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_train_export_and_evaluate_a_draft(tmp_path, tiny_model_dir, corpus, prompts):
    out = tmp_path / "run"
    train = (
        f"train draft --target {tiny_model_dir} --output {out} --corpus {corpus} --layers 1 --batch-size 2 "
        "--seq-len 16 --eval-every 2 --save-every 2 --heldout-fraction 0.2"
    ).split()
    assert main([*train, "--steps", "4"]) == 0
    assert (out / "final" / "config.json").is_file() and (out / "checkpoint-2").is_dir()
    assert main([*train, "--steps", "6", "--resume"]) == 0  # continues from the last checkpoint (step 2)
    assert len((out / "log.jsonl").read_text().splitlines()) == 4 + 6 - 2
    report_path = tmp_path / "eval.json"
    evaluate = (
        f"eval draft --target {tiny_model_dir} --draft {out / 'final'} --heldout {corpus} "
        f"--spec-bench {prompts} --max-new-tokens 8 --windows 4 --seq-len 16 --out {report_path}"
    ).split()
    assert main(evaluate) == 0
    report = json.loads(report_path.read_text())
    assert 0 <= report["text"]["top1_agreement"] <= 1 and 0 <= report["text"]["alpha"] <= 1
    assert report["prompts"]["count"] == 2 and report["prompts"]["tokens_per_target_call"] >= 1
    dest = tmp_path / "drafts"
    export = (
        f"train export --draft {out / 'final'} --base {tiny_model_dir} --name tiny-draft "
        f"--eval-report {report_path} --dest {dest}"
    ).split()
    assert main(export) == 0
    manifest = json.loads((dest / "tiny-draft" / "specdec_draft.json").read_text())
    assert manifest["base"] == str(tiny_model_dir) and manifest["training_config"]["steps"] == 6
    assert "eval" in manifest


@pytest.mark.parametrize(
    ("extra", "message"),
    [("--lambda 2", "λ"), ("--temperature 0", "temperature"), ("--corpus /no/such.txt", "not found")],
)
def test_train_bad_input(tmp_path, tiny_model_dir, corpus, capsys, extra, message):
    args = f"train draft --target {tiny_model_dir} --output {tmp_path / 'o'} --steps 1 {extra}".split()
    if "--corpus" not in extra:
        args += ["--corpus", str(corpus)]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_train_early_exit_then_decode_with_it(tmp_path, tiny_model_dir, corpus, capsys):
    out = tmp_path / "ee"
    train = (
        f"train early-exit --target {tiny_model_dir} --output {out} --corpus {corpus} --exit-layer 1 "
        "--steps 2 --batch-size 2 --seq-len 16 --heldout-fraction 0.2 --eval-every 2"
    ).split()
    assert main(train) == 0
    assert json.loads((out / "train_config.json").read_text())["early_exit_layer"] == 1
    model = out / "final"
    generate = (
        f"generate hi --no-chat --model {model} --drafter early-exit-1 --method bild --max-new-tokens 5"
    )
    assert main(generate.split()) == 0
    assert "bild (early-exit-1)" in capsys.readouterr().out
    assert main([*train[:-2], "--exit-layer", "9"]) == 2
    assert "num_layers" in capsys.readouterr().err


def test_allocator_is_recorded_and_cpu_training_under_glibc_gets_the_hint(monkeypatch):
    import specdec.cli.train as train_cli
    from specdec.benchmarks.report import allocator, machine_info

    monkeypatch.setattr(train_cli.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(train_cli.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert allocator() == machine_info()["allocator"] == "glibc"
    assert "libjemalloc.so.2" in train_cli.allocator_hint()

    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    monkeypatch.setenv("MALLOC_CONF", "dirty_decay_ms:-1")
    assert allocator() == "libjemalloc.so.2 (MALLOC_CONF=dirty_decay_ms:-1)"
    assert train_cli.allocator_hint() is None

    monkeypatch.setenv("LD_PRELOAD", "libfoo.so")  # a preload that is no allocator changes nothing
    assert allocator() == "glibc"
    monkeypatch.setattr(train_cli.platform, "libc_ver", lambda: ("", ""))
    assert train_cli.allocator_hint() is None  # musl, macOS: not glibc's behaviour


def test_exporting_a_checkpoint_a_run_never_saved_is_a_clear_error(tmp_path, tiny_model_dir, capsys):
    """A run stopped before its first evaluation has a log and a config but no best/ (a lease's deadline)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "train_config.json").write_text("{}")
    (run / "log.jsonl").write_text('{"step": 1}\n')
    export = f"train export --draft {run / 'best'} --base {tiny_model_dir} --name x --dest {tmp_path}".split()
    assert main(export) == 2
    assert "no checkpoint folder" in capsys.readouterr().err
