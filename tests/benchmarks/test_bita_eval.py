"""`specdec eval-bita` on a tiny model: acceptance per tree shape, measured costs, the chosen shape
written beside the adapter and used by `bita[auto]`."""

import json

import torch

from specdec.benchmarks.bita_eval import accepted_full
from specdec.cli.main import main
from specdec.drafters import make_drafter
from specdec.drafters.bita import TreeShape
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.training.sar import IGNORE
from tiny import random_answers_file


def test_full_tree_acceptance_counts_leading_depths_in_the_top_k():
    logits = torch.zeros(1, 2, 3, 5)
    for d in range(3):
        logits[0, :, d, d] = 2.0  # top-1 at depth d is token d
        logits[0, :, d, 4] = 1.0  # top-2 is token 4
    labels = torch.tensor([[[0, 4, 3], [4, 1, IGNORE]]])
    assert accepted_full(logits, labels, 2).tolist() == [[2.0, 2.0]]
    assert accepted_full(logits, labels, 1).tolist() == [[1.0, 0.0]]
    assert TreeShape.parse("efficient", 3).block_width() == 1 + 12 + 13 * 3
    assert TreeShape.parse("2", 3).block_width() == 1 + 2 + 3 * 1  # one mask a group: the tree is 1 deep
    assert TreeShape.parse("2,1", 3).block_width() == 1 + 3 + 4 * 2


def test_eval_bita_chooses_a_shape_that_bita_auto_uses(tmp_path, tiny_model_dir, capsys):
    answers = random_answers_file(tmp_path / "answers.jsonl", 40)
    model = load_model(str(tiny_model_dir)).model
    torch.manual_seed(0)
    BiTAAdapter(model_signature(model), 4, 3, "deep").save_pretrained(tmp_path / "a")
    out, md = tmp_path / "eval.json", tmp_path / "BITA.md"
    args = f"eval bita --adapter deep={tmp_path / 'a'} --target {tiny_model_dir} --answers {answers}"
    args += f" --heldout-fraction 0.5 --skip 4 --sequences 8 --groups 4 --out {out} --markdown {md}"
    assert main(args.split()) == 0
    report = json.loads(out.read_text())
    chosen = report["adapters"]["deep"]["chosen"]
    shapes = report["adapters"]["deep"]["shapes"]
    assert chosen == max(shapes, key=lambda s: shapes[s]["predicted_speedup"])
    assert all(r["cost_ratio"] > 0 and r["accepted_per_step"] >= 0 for r in shapes.values())
    for r in shapes.values():  # the paper's no-cache setting, from measured full forwards
        assert r["uncached_cost_ratio"] > 0
        assert r["uncached_speedup"] == (r["accepted_per_step"] + 1) / r["uncached_cost_ratio"]
    assert report["uncached_costs"]["1"] == 1.0
    assert json.loads((tmp_path / "a" / "tree_shape.json").read_text())["shape"] == chosen.replace("/", ",")
    assert "chosen shape" in md.read_text() and "Table 3" in md.read_text()
    digest = report["adapters"]["deep"]["digest"]
    assert len(digest) == 16 and f"weights sha256 {digest}" in md.read_text()  # the weights it judged
    spec = f"bita[auto]:{tmp_path / 'a'}"
    assert (
        main(f"generate hi --no-chat --model {tiny_model_dir} --drafter {spec} --max-new-tokens 4".split())
        == 0
    )
    assert make_drafter(f"bita:{tmp_path / 'a'}", model, None).shape == TreeShape.parse(chosen, 3)
    record = json.loads((tmp_path / "a" / "tree_shape.json").read_text())
    assert record["device"] == "cpu"
    elsewhere = {**record, "shape": "full-3" if chosen != "full-3" else "full-2", "device": "cuda"}
    (tmp_path / "a" / "tree_shape.json").write_text(json.dumps(elsewhere))  # measured on a GPU: not here
    assert make_drafter(f"bita:{tmp_path / 'a'}", model, None).shape == TreeShape.parse("2", 3)
    assert make_drafter(f"bita[auto]:{tmp_path / 'a'}", model, None).shape == TreeShape.parse(
        elsewhere["shape"], 3
    )
    (tmp_path / "a" / "tree_shape.json").unlink()
    assert make_drafter(f"bita:{tmp_path / 'a'}", model, None).shape == TreeShape.parse("2", 3)  # on a CPU
    assert (
        main(f"generate hi --no-chat --model {tiny_model_dir} --drafter {spec} --max-new-tokens 4".split())
        == 2
    )
    assert "eval bita" in capsys.readouterr().err
