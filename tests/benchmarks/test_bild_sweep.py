import json
import math

import pytest
from test_specbench import write_questions

from specdec.benchmarks import bild_report, bild_sweep
from specdec.benchmarks.bild_report import best_settings, repeated_ngrams, summarize_sweep
from specdec.benchmarks.data import load_cnndm
from specdec.cli.main import main
from specdec.errors import DataNotFoundError


def write_articles(path, count: int = 2):
    rows = [
        {
            "id": f"a{i}",
            "article": "the quick brown fox jumps over the lazy dog " * 20,
            "reference": "a fox jumps",
        }
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cnndm_loader_cuts_articles_and_keeps_references(tmp_path):
    rows = load_cnndm(write_articles(tmp_path / "c.jsonl", 3), count=2, max_words=5)
    assert [r["id"] for r in rows] == ["a0", "a1"] and rows[0]["reference"] == "a fox jumps"
    assert rows[0]["prompt"].endswith("the quick brown fox jumps")
    with pytest.raises(DataNotFoundError, match="cnndm"):
        load_cnndm(tmp_path / "missing.jsonl", 1)


def test_sweep_runs_the_grid_and_writes_table_and_plot(tmp_path, tiny_model_dir):
    articles, questions = write_articles(tmp_path / "c.jsonl"), write_questions(tmp_path / "q.jsonl", 1)
    out, md, png = tmp_path / "sweep.json", tmp_path / "BILD.md", tmp_path / "sweep.png"
    args = (
        f"bench bild --model {tiny_model_dir} --drafters first-1,prompt-lookup "
        f"--early-exit {tiny_model_dir}:1 "
        f"--fallback 0,0.01 --rollback 0,inf --articles 2 --per-task 1 --max-new-tokens 6 "
        f"--cnndm {articles} --spec-bench {questions} --out {out} --markdown {md} --plot {png}"
    ).split()
    assert main(args) == 0
    report = json.loads(out.read_text())
    rows = {(r["setup"], r["dataset"], r["method"]): r for r in report["summary"]}
    separate = [m["name"] for m in report["methods"]["separate drafts"]]
    # first-1 has a confidence: 2 × 2 grid; prompt lookup has none: α_FB is not swept for it.
    assert len(separate) == 1 + (1 + 4) + (1 + 2)
    assert len(report["methods"]["early exit (1 layers)"]) == 1 + 1 + 4
    assert len(report["records"]) == (len(separate) + 6) * (2 + 6)
    # Each prompt's text once, not once a method: a 50-article sweep's records were 3 MB with them.
    assert {len(v) for v in report["prompts"].values()} == {2, 6}
    assert not any("prompt" in r for r in report["records"])
    for (_, dataset, method), row in rows.items():
        assert row["speedup_vs_plain_ci95"][0] <= row["speedup_vs_plain"] <= row["speedup_vs_plain_ci95"][1]
        if method == "plain":
            assert row["latency"] == 1.0 and row["identical"] == 1.0
            assert row["speedup_vs_plain_ci95"] == pytest.approx([1.0, 1.0])
            assert dataset != "cnndm" or row["rougeL_vs_plain_ci95"] == pytest.approx([0.0, 0.0])
        if method.startswith("sps[") or "RB 0]" in method:  # lossless: SpS, and greedy BiLD at α_RB = 0
            assert row["identical"] == 1.0 and row["agreement_rougeL"] == pytest.approx(100)
        assert ("rougeL" in row) == (dataset == "cnndm")
    never = rows[("separate drafts", "cnndm", "bild[first-1, FB 0, RB inf]")]
    assert never["rollback_pct"] == 0 and never["alpha"] == 1.0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "## Targets (CNN/DM)" in md.read_text() and "early exit (1 layers)" in md.read_text()
    # The weights each small model ran with are named (these two have none of their own), and the code.
    assert report["config"]["drafter_digests"] == {"first-1": None, "prompt-lookup": None}
    assert "`first-1` (no weights), `prompt-lookup` (no weights)" in md.read_text()
    assert f"source commit: {report['machine']['commit'] or 'not recorded'}" in md.read_text()
    assert set(best_settings(report["summary"])) == {
        ("separate drafts", "first-1"),
        ("separate drafts", "prompt-lookup"),
        ("early exit (1 layers)", "early-exit-1"),
    }
    table = md.read_text()
    md.unlink()
    assert main([*args, "--from-json", str(out)]) == 0  # re-summarised from the records, nothing re-run
    again = json.loads(out.read_text())
    assert again["records"] == report["records"] and "resummarised" in again
    assert md.read_text().replace(bild_report._resummarised(again["resummarised"]), "") == table
    assert math.isfinite(report["summary"][0]["time_s"])


def _sweep_record(method: str, article: int, tokens: int, seconds: float, text: str) -> dict:
    stats = {"total_time": seconds, "target_calls": tokens, "draft_calls": 0, "target_time": seconds}
    stats |= {"draft_time": 0.0, "proposed_tokens": 0, "accepted_tokens": 0, "new_tokens": tokens}
    stats |= {"fallback_rate": 0.0, "rollback_rate": 0.0}
    record = {
        "setup": "s",
        "dataset": "cnndm",
        "method": method,
        "id": f"a{article}",
        "reference": "the cat sat",
    }
    return record | {"text": text, "tokens": list(range(tokens)), "stats": stats}


def test_a_method_that_stops_early_is_not_counted_faster_for_it():
    """Half the tokens in half the time is plain decoding's speed, however short the latency looks; its
    ROUGE-L change is paired with plain decoding's on the same articles."""
    records = [_sweep_record("plain", i, 64, 2.0, "the cat sat") for i in range(4)]
    records += [_sweep_record("bild[x, FB 0.5, RB 5]", i, 32, 1.0, "the cat") for i in range(4)]
    rows = {r["method"]: r for r in summarize_sweep(records)}
    early = rows["bild[x, FB 0.5, RB 5]"]
    assert early["latency"] == pytest.approx(0.5)
    assert early["speedup_vs_plain"] == pytest.approx(1.0)
    assert early["speedup_vs_plain_ci95"] == pytest.approx([1.0, 1.0])
    assert early["rougeL_vs_plain"] < 0 and early["rougeL_vs_plain_ci95"][1] < 0
    assert early["rougeL"] - rows["plain"]["rougeL"] == pytest.approx(early["rougeL_vs_plain"])


def test_a_looping_text_is_counted_by_its_repeated_ngrams():
    assert repeated_ngrams([1, 2, 3, 4, 1, 2, 3, 4]) == pytest.approx(1 / 5)  # (1, 2, 3, 4) again
    assert (
        repeated_ngrams(list(range(64))) == 0.0 and repeated_ngrams([5, 5, 5]) == 0.0
    )  # nothing / too short
    records = [_sweep_record("plain", 0, 64, 2.0, "the cat sat")]
    records.append(_sweep_record("bild[x, FB 0.5, RB 5]", 0, 64, 1.0, "the cat sat") | {"tokens": [7] * 64})
    rows = {r["method"]: r for r in summarize_sweep(records)}
    assert rows["plain"]["repeated_4grams"] == 0.0
    assert rows["bild[x, FB 0.5, RB 5]"]["repeated_4grams"] == pytest.approx(100 * 60 / 61)


def test_a_sweep_whose_summary_fails_keeps_its_records(tmp_path, tiny_model_dir, monkeypatch):
    articles = write_articles(tmp_path / "c.jsonl", 1)
    out, md, png = tmp_path / "sweep.json", tmp_path / "BILD.md", tmp_path / "sweep.png"
    args = (
        f"bench bild --model {tiny_model_dir} --drafters prompt-lookup --rollback 0 --articles 1 "
        f"--per-task 0 --max-new-tokens 4 --cnndm {articles} --out {out} --markdown {md} --plot {png}"
    ).split()

    def broken(records):
        raise RuntimeError("a summary bug")

    monkeypatch.setattr(bild_sweep, "summarize_sweep", broken)
    with pytest.raises(RuntimeError, match="a summary bug"):
        main(args)
    saved = json.loads(out.read_text())
    assert saved["summary"] is None and saved["records"] and not md.exists()
    monkeypatch.undo()
    assert main([*args, "--from-json", str(out)]) == 0  # summarised from the saved records
    assert json.loads(out.read_text())["summary"] and md.exists()


def test_sweep_rejects_a_bad_grid(tmp_path, tiny_model_dir, capsys):
    articles = write_articles(tmp_path / "c.jsonl")
    base = f"bench bild --model {tiny_model_dir} --cnndm {articles} --per-task 0 --drafters first-1".split()
    assert main([*base, "--fallback", "x"]) == 2
    assert "comma-separated" in capsys.readouterr().err
    assert main([*base, "--rollback", "-1"]) == 2
    assert "rollback_threshold" in capsys.readouterr().err


def test_sweep_runs_standalone_tandem_beside_its_lossless_sps(tmp_path, tiny_model_dir, tiny_llama):
    from specdec.models.tandem import TandemModel, primary_signature
    from specdec.training import DraftShape, build_draft

    secondary = build_draft(tiny_llama, DraftShape(num_layers=1, init="fresh"), seed=0)
    tandem = tmp_path / "tandem"
    TandemModel(secondary, primary_signature(tiny_llama)).save_pretrained(tandem)
    articles, out = write_articles(tmp_path / "c.jsonl"), tmp_path / "sweep.json"
    args = (
        f"bench bild --model {tiny_model_dir} --drafters tandem:{tandem} --fallback 0.5 --rollback 2 "
        f"--tandem-gamma 2,3 --articles 2 --per-task 0 --max-new-tokens 8 --cnndm {articles} "
        f"--out {out} --markdown {tmp_path / 'T.md'} --plot {tmp_path / 't.png'}"
    ).split()
    assert main(args) == 0
    rows = {r["method"]: r for r in json.loads(out.read_text())["summary"]}
    standalone = [m for m in rows if m.startswith("tandem[")]
    assert sorted(standalone) == sorted(
        f"tandem[tandem:{tandem}, γ {g}{suffix}]" for g in (2, 3) for suffix in ("", ", no free token")
    )
    assert rows[f"sps[tandem:{tandem}]"]["identical"] == 1.0
    for method in standalone:  # unverified: an untrained secondary's text is not the primary's
        assert (
            rows[method]["identical"] < 1.0 and "rougeL" in rows[method] and "speedup_vs_sps" in rows[method]
        )
