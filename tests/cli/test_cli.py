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
