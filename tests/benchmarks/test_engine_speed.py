import json

import pytest
import torch

from specdec.benchmarks.engine_speed import SHAPES, random_model, weight_bytes
from specdec.cli.main import main


def test_bench_engine_writes_every_runner_beside_the_bound(tmp_path):
    out, md = tmp_path / "speed.json", tmp_path / "SPEED.md"
    args = (
        f"bench engine --shapes tiny --engines eager,compiled --prompt-tokens 8 --new-tokens 6 --repeats 1 "
        f"--out {out} --markdown {md}"
    ).split()
    assert main(args) == 0
    result = json.loads(out.read_text())["results"]["tiny"]
    assert list(result["runners"]) == ["hf-plain", "ours-eager", "ours-compiled"]
    for row in result["runners"].values():
        assert row["identical_to_first"] is True  # fp32 greedy: the same tokens as HF generate
        assert row["seconds_full"] > 0 and row["seconds_one"] > 0  # their order is the machine's noise
        if row["decode_tok_s"] is None:  # noise swamped five tiny steps: reported, never a made-up rate
            assert row["seconds_full"] <= row["seconds_one"] and row["share_of_bound"] is None
        else:
            assert row["decode_tok_s"] == pytest.approx(5 / (row["seconds_full"] - row["seconds_one"]))
            assert row["share_of_bound"] == pytest.approx(row["decode_tok_s"] / result["bound_tok_s"])
    assert result["compiled_build_seconds"] > 0 and result["copy_bandwidth_gb_s"] > 0
    text = md.read_text()
    assert "| tiny |" in text and "ours-compiled" in text and "Compiled engine built" in text


def test_weight_bytes_count_what_a_step_reads():
    """Untied: the input table is not read by a decode step; tied: the shared table counts once."""
    untied = random_model("tiny", torch.device("cpu"), torch.float32)
    table = untied.get_input_embeddings().weight
    total = sum(p.numel() for p in untied.parameters()) * 4
    assert weight_bytes(untied) == total - table.numel() * 4
    assert not SHAPES["tiny"]["tie_word_embeddings"] and SHAPES["smollm2-135m"]["tie_word_embeddings"]
    bf16 = random_model("tiny", torch.device("cpu"), torch.bfloat16)
    assert weight_bytes(bf16) * 2 == weight_bytes(untied)


@pytest.mark.parametrize(
    "extra, message",
    [
        ("--shapes gpt-5", "unknown shape 'gpt-5'"),
        ("--engines turbo", "--engines takes some of eager, compiled, graphs"),
        *([] if torch.cuda.is_available() else [("--engines graphs", "compiled-graphs need --device cuda")]),
        ("--new-tokens 1", "--new-tokens must be >= 2"),
        ("--graph-width 17", "--graph-width must be in 1..16"),
        ("--dtype int8", "unknown dtype"),
    ],
)
def test_bad_arguments_are_clear_errors(tmp_path, capsys, extra, message):
    args = f"bench engine --shapes tiny --out {tmp_path / 'o.json'} --markdown {tmp_path / 'o.md'} {extra}"
    assert main(args.split()) == 2
    assert message in capsys.readouterr().err
