import pytest

from specdec.cli.main import main


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
    code = main([*args, "--max-new-tokens", "6", "--bild", "--fallback", "0.01", "--rollback", "5"])
    assert code == 0
    assert "bild (first-1-layers)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bild", "--fallback", "2"], "fallback_threshold"),
        (["--temperature", "-1"], "temperature"),
        (["--max-new-tokens", "0"], "max_new_tokens"),
        (["--drafter", "first-x"], "first-N"),
    ],
)
def test_bad_input_exits_with_a_clear_message(tiny_model_dir, capsys, args, message):
    code = main(["generate", "hi", "--model", str(tiny_model_dir), "--no-chat", *args])
    assert code == 2
    assert message in capsys.readouterr().err


def test_missing_model(capsys):
    assert main(["generate", "hi", "--model", "./no/such/model"]) == 2
    assert "no/such/model" in capsys.readouterr().err
