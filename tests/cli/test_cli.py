import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdec.cli.generate import add_generate_arguments, method_from_args
from specdec.cli.main import build_parser, main
from specdec.inputs import non_negative_int, positive_int
from specdec.models.packaged import BEST_DRAFTERS, drafter_digest


def test_generate_on_a_local_model_folder(tiny_model_dir, capsys):
    code = main(
        [
            "generate",
            "the quick brown",
            "--model",
            str(tiny_model_dir),
            "--drafter",
            "first-1",
            "--max-new-tokens",
            "6",
            "--compare",
            "--gamma",
            "3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "generation stats" in out and "sps (first-1-layers)" in out
    assert "greedy output identical to plain decoding: True" in out


def test_generate_with_bild(tiny_model_dir, capsys):
    args = ["generate", "the quick brown", "--model", str(tiny_model_dir), "--drafter", "first-1"]
    code = main([*args, "--max-new-tokens", "6", "--method", "bild", "--fallback", "0.01", "--rollback", "5"])
    assert code == 0
    out = capsys.readouterr().out
    assert "bild (first-1-layers)" in out and "nanx" not in out  # no plain run: no speedup to print


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "bild", "--fallback", "2"], "fallback_threshold"),
        (["--temperature", "-1"], "temperature"),
        (["--drafter", "first-x"], "first-N"),
        (["--device", "banana"], "unknown device"),
        (["--seed", str(2**64)], "seed"),
        (["--seed", "-1"], "seed"),
        (["--stop", ""], "stop"),
        (["--gamma", "0"], "γ"),
        (["--gamma", "often"], "gamma"),
    ],
)
def test_bad_input_exits_with_a_clear_message(tiny_model_dir, capsys, args, message):
    code = main(["generate", "hi", "--model", str(tiny_model_dir), "--no-chat", *args])
    assert code == 2
    assert message in capsys.readouterr().err


# Integer options left to what reads them: seeds (range-checked where they are used) and ports (the operating
# system's to refuse).
ANY_INTEGER = {"--seed", "--shuffle-seed", "--port"}


def integer_options(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, option, its argparse type) for every option of every command that takes an integer."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from integer_options(sub, (*words, name))
        elif action.type in (int, positive_int, non_negative_int):
            yield words, action.option_strings[0], action.type


def test_every_integer_option_says_what_it_accepts():
    """A count refuses 0 and negatives before any model loads (``bench spec --per-task 0`` was a division
    by zero, ``--max-new-tokens 0`` loaded models and started a bench): no option takes a bare ``int`` but
    seeds and ports."""
    options = list(integer_options(build_parser()))
    assert len(options) > 100  # the walk reaches every command's options
    bare = {(words, option) for words, option, kind in options if kind is int and option not in ANY_INTEGER}
    assert bare == set()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["bench", "spec", "--per-task", "0"], "--per-task"),
        (["bench", "spec", "--max-new-tokens", "-3"], "--max-new-tokens"),
        (["bench", "bild", "--articles", "0"], "--articles"),
        (["generate", "hi", "--max-new-tokens", "0"], "--max-new-tokens"),
        (["train", "eagle3", "--cache", "x", "--output", "y", "--steps", "0"], "--steps"),
        (["data", "answers", "--prompts", "self-intents", "--count", "two"], "--count"),
        (["serve", "--max-batch", "0"], "--max-batch"),
    ],
)
def test_a_count_below_one_is_a_usage_error(capsys, args, option):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert f"argument {option}: must be an integer >= 1" in capsys.readouterr().err


@given(st.integers(-(10**6), 10**6))
def test_integer_option_types_accept_exactly_their_range(value):
    for kind, least in ((positive_int, 1), (non_negative_int, 0)):
        if value >= least:
            assert kind(str(value)) == value
        else:
            with pytest.raises(argparse.ArgumentTypeError, match=f">= {least}"):
                kind(str(value))


def test_zero_still_turns_top_k_off():
    args = build_parser().parse_args(["generate", "hi", "--top-k", "0"])
    assert args.top_k == 0


def test_missing_model(capsys):
    assert main(["generate", "hi", "--model", "./no/such/model"]) == 2
    assert "no/such/model" in capsys.readouterr().err


def test_a_text_file_named_gguf_is_a_clear_error(tmp_path, capsys):
    fake = tmp_path / "model.gguf"
    fake.write_text("not a model")
    assert main(["generate", "hi", "--model", str(fake), "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "is not a GGUF model" in capsys.readouterr().err


def test_cuda_on_a_machine_without_it(tiny_model_dir, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["generate", "hi", "--model", str(tiny_model_dir), "--device", "cuda"]) == 2
    assert "not available on this machine" in capsys.readouterr().err


def test_a_seeded_sampled_run_prints_the_same_text_every_time(tiny_model_dir, capsys):
    args = ["generate", "the quick brown", "--model", str(tiny_model_dir), "--drafter", "first-1"]
    args += ["--temperature", "0.9", "--seed", "7", "--max-new-tokens", "12", "--no-chat", "--compare"]
    outputs = []
    for verify in ("coupled", "coupled", "rejection"):
        assert main([*args, "--verify", verify]) == 0
        out = capsys.readouterr().out
        outputs.append(out.split("tokens from the draft accepted")[1].split("generation stats")[0])
        if verify == "coupled":
            assert "sampled output (seed 7) identical to plain decoding: True" in out
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "plain", "--fallback", "0.5"], "--fallback is an option of --method bild, not of"),
        (["--method", "sps", "--standalone"], "--standalone is an option of --method tandem"),
        (["--method", "plain", "--gamma", "3"], "--gamma is an option of --method sps / tandem"),
        (["--method", "bita", "--gamma", "3"], "not of bita"),
        (["--method", "bild", "--verify", "rejection"], "--verify is an option of"),
        (["--method", "plain", "--drafter", "first-1"], "--drafter is an option of"),
        (["--bild", "--no-speculative"], "--bild and --no-speculative choose different methods"),
        (["--method", "sps", "--bild"], "choose different methods"),
        (["--method", "tandem", "--drafter", "first-1"], "needs a tandem:PATH drafter"),
        (["--method", "bita", "--drafter", "prompt-lookup"], "needs a bita:PATH or lookup"),
        (["--method", "bita", "--drafter", "lookup+first-1"], "needs a bita:PATH or lookup"),
    ],
)
def test_options_of_another_method_and_conflicting_choices_are_errors(tiny_model_dir, capsys, args, message):
    """Nothing is silently ignored: an option that the chosen method does not take says whose it is."""
    assert main(["generate", "hi", "--model", str(tiny_model_dir), "--no-chat", *args]) == 2
    assert message in capsys.readouterr().err


def test_plain_method_and_the_deprecated_flag_run_the_same(tiny_model_dir, capsys):
    base = ["generate", "the quick brown", "--model", str(tiny_model_dir), "--no-chat"]
    base += ["--max-new-tokens", "5"]
    assert main([*base, "--method", "plain"]) == 0
    new = capsys.readouterr()
    assert main([*base, "--no-speculative"]) == 0
    old = capsys.readouterr()
    assert "--no-speculative is now --method plain" in old.err and "now" not in new.err
    text = next(line for line in new.out.splitlines() if line.strip())
    assert text in old.out


def test_compile_builds_the_fast_engine(tiny_model_dir, monkeypatch):
    import specdec.cli.generate as generate

    built = []

    class Recording(generate.Pipeline):
        def __init__(self, *args, compile: bool = False, **kwargs):
            built.append(compile)
            super().__init__(*args, **kwargs)  # eager: compiling a tiny model here would only cost time

    monkeypatch.setattr(generate, "Pipeline", Recording)
    base = ["generate", "the quick brown", "--model", str(tiny_model_dir), "--max-new-tokens", "3"]
    assert main([*base, "--compile"]) == 0 and main(base) == 0
    assert built == [True, False]


def test_old_command_names_still_work_and_say_the_new_one(tmp_path, capsys):
    assert main(["bench-engine", "--shapes", "nope", "--out", str(tmp_path / "o.json")]) == 2
    assert "`bench-engine` is now `bench engine`" in capsys.readouterr().err
    assert main(["bench", "--spec-bench", str(tmp_path / "none.jsonl")]) == 2
    assert "`bench` is now `bench spec`" in capsys.readouterr().err


def test_help_shows_the_task_groups(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "commands, by task:" in out and "bench {spec, engine, serving, server, bild}" in out


def test_drafters_lists_every_spec_and_the_packaged_drafters_with_digests(capsys):
    assert main(["drafters"]) == 0
    out = capsys.readouterr().out
    assert "prompt-lookup" in out and "tandem+router:PATH" in out and "bita[SHAPE]:PATH" in out
    assert "smollm2-135m-draft" in out and "tandem:smollm2-135m-tandem" in out
    assert drafter_digest("smollm2-135m-draft") in out
    assert "eagle3:smollm2-135m-eagle3" in out and drafter_digest("smollm2-135m-eagle3") in out


def test_the_packaged_model_speculates_with_its_best_drafter_and_any_other_with_prompt_lookup():
    parser = argparse.ArgumentParser()
    add_generate_arguments(parser)
    for model, drafter in (("smollm2-135m", BEST_DRAFTERS["smollm2-135m"]), ("my/model", "prompt-lookup")):
        args = parser.parse_args(["hi", "--model", model])
        method_from_args(args)
        assert args.drafter == drafter
    args = parser.parse_args(["hi", "--method", "bild"])
    method_from_args(args)
    assert args.drafter == "prompt-only-lookup"  # measured for BiLD apart (copying from the prompt only)
    args = parser.parse_args(["hi", "--drafter", "first-2"])
    method_from_args(args)
    assert args.drafter == "first-2"  # a named drafter is never replaced
