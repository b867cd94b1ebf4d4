import json
import shutil

import pytest
import torch

from specdec.benchmarks import specbench
from specdec.benchmarks.data import SPEC_BENCH_TASKS, load_spec_bench, prompt_seed, spec_bench_task
from specdec.benchmarks.report import bootstrap_interval, mean_interval, summarize
from specdec.benchmarks.specbench import default_drafters, static_cache_length
from specdec.cli.main import main
from specdec.errors import InvalidArgumentError
from specdec.models.packaged import BEST_DRAFTERS, drafter_digest, packaged_drafts, packaged_eagle3s


def write_questions(path, per_category: int = 3):
    categories = ["writing", "translation", "summarization", "qa", "math_reasoning", "rag"]
    rows = [
        {"question_id": 100 * i + j, "category": c, "turns": [f"the quick brown fox {c} {j}", "second turn"]}
        for i, c in enumerate(categories)
        for j in range(per_category)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_stratified_subset(tmp_path):
    prompts = load_spec_bench(write_questions(tmp_path / "q.jsonl"), per_task=2)
    assert [p["task"] for p in prompts] == [t for t in SPEC_BENCH_TASKS for _ in range(2)]
    assert all(p["prompt"].startswith("the quick brown fox") for p in prompts)  # first turns only
    for per_task in (0, -2):  # a division by zero, and an odd subset, before the check
        with pytest.raises(InvalidArgumentError, match="per_task"):
            load_spec_bench(write_questions(tmp_path / "q.jsonl"), per_task=per_task)


def test_mt_bench_categories_are_one_task_and_the_others_their_own():
    assert [spec_bench_task(c) for c in ("writing", "roleplay", "coding")] == ["mt_bench"] * 3
    assert [spec_bench_task(t) for t in SPEC_BENCH_TASKS] == list(SPEC_BENCH_TASKS)


def test_bench_runs_every_method_and_writes_reports(tmp_path, tiny_model_dir):
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"
    args = (
        f"bench spec --model {tiny_model_dir} --drafters prompt-lookup,first-1 --heuristic-for first-1 "
        f"--spec-bench {questions} --per-task 1 --limit 3 --max-new-tokens 8 --out {out} --markdown {md}"
        " --device cpu --dtype float32"
    ).split()
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert (report["config"]["device"], report["config"]["dtype"]) == ("cpu", "float32")
    assert report["config"]["drafter_digests"] == {"prompt-lookup": None, "first-1": None}  # no own weights
    assert "drafter weights (sha256" in md.read_text()
    assert "(float32 on cpu)" in md.read_text()
    methods = [
        "hf-plain",
        "ours-plain",
        "hf-assisted[prompt-lookup]",
        "ours-sps[prompt-lookup]",
        "hf-assisted[first-1]",
        "ours-sps[first-1]",
        "ours-sps[first-1, +2/-1]",
    ]
    assert [m for m in report["summary"] if not m.startswith("_")] == methods
    assert len(report["records"]) == 3 * len(methods)
    # greedy: every method reproduces HF's plain greedy output on every prompt
    assert all(report["summary"][m]["identical_to_reference"] == 1.0 for m in methods)
    assert 0.0 <= report["summary"]["ours-sps[first-1]"]["alpha"] <= 1.0
    table = md.read_text()
    assert "| ours-sps[first-1] |" in table and "speedup vs HF plain" in table and "bootstrap" in table
    for name in methods:
        entry = report["summary"][name]
        low, high = entry["speedup_vs_ours_plain_ci95"]
        assert low <= entry["speedup_vs_ours_plain"] <= high
    assert report["machine"]["cpu_features"] is not None
    # interleaved per prompt, each prompt starting with a different method
    firsts = [report["records"][i * len(methods)]["method"] for i in range(3)]
    assert len(set(firsts)) == 3
    md.unlink()
    assert (
        main(["bench", "spec", "--from-json", str(out), "--markdown", str(md)]) == 0
    )  # re-rendered, nothing re-run
    assert md.read_text() == table


def test_a_summary_that_fails_loses_no_records(tmp_path, tiny_model_dir, monkeypatch):
    """The records are on disk before the summary is computed; ``--from-json`` summarises them later."""
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"

    def broken(records, methods):
        raise RuntimeError("a summary bug")

    monkeypatch.setattr(specbench, "summarize", broken)
    args = (
        f"bench spec --model {tiny_model_dir} --drafters prompt-lookup --no-hf --spec-bench {questions} "
        f"--per-task 1 --limit 2 --max-new-tokens 4 --out {out} --markdown {md} --device cpu --dtype float32"
    ).split()
    with pytest.raises(RuntimeError, match="a summary bug"):
        main(args)
    saved = json.loads(out.read_text())
    assert saved["summary"] is None and not md.exists()
    assert len(saved["records"]) == 4  # two prompts, two methods, the first prompt in the methods' order
    assert [r["method"] for r in saved["records"][:2]] == ["ours-plain", "ours-sps[prompt-lookup]"]
    monkeypatch.undo()
    assert main(["bench", "spec", "--from-json", str(out), "--markdown", str(md)]) == 0
    summary = json.loads(out.read_text())["summary"]
    assert [m for m in summary if not m.startswith("_")] == ["ours-plain", "ours-sps[prompt-lookup]"]
    assert summary["ours-sps[prompt-lookup]"]["identical_to_reference"] == 1.0
    assert "| ours-sps[prompt-lookup] |" in md.read_text()


def test_sampled_bench_compares_verify_rules_against_seeded_plain_decoding(tmp_path, tiny_model_dir):
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"
    args = (
        f"bench spec --model {tiny_model_dir} --drafters first-1 --heuristic-for none --temperature 0.9 "
        f"--verify coupled,rejection --spec-bench {questions} --per-task 1 --limit 3 --max-new-tokens 8 "
        f"--out {out} --markdown {md}"
    ).split()
    assert main(args) == 0
    summary = json.loads(out.read_text())["summary"]
    assert [m for m in summary if not m.startswith("_")] == [
        "ours-plain",
        "ours-sps[first-1]",
        "ours-sps[first-1, rejection]",
    ]  # no HF baselines when sampling
    assert summary["_reference"] == "ours-plain"
    assert summary["ours-sps[first-1]"]["identical_to_reference"] == 1.0  # coupled: same seed, same text
    assert "sampled: temperature 0.9" in md.read_text()
    single = {(r["method"], r["question_id"]): r["tokens"] for r in json.loads(out.read_text())["records"]}
    assert main([*args, "--num-samples", "3"]) == 2  # the first run's files are kept
    assert main([*args, "--num-samples", "3", "--overwrite"]) == 0
    report = json.loads(out.read_text())
    assert report["summary"]["ours-sps[first-1]"]["identical_to_reference"] == 1.0
    for r in report["records"]:  # sample 0 is the single-sample run's text (keyed draws), then two more
        first = single[(r["method"], r["question_id"])]
        assert len(r["tokens"]) >= len(first) + 2
        if "rejection" not in r["method"]:  # rejection's text follows the adaptive γ schedule (timings)
            assert r["tokens"][: len(first)] == first
    assert "3 samples per prompt" in md.read_text()
    assert main([*args[: args.index("--temperature")], "--num-samples", "2"]) == 2  # greedy: one sample


def test_string_question_ids_seed_sampled_runs(tmp_path, tiny_model_dir):
    """Regression: a user's own question file with string ids (``"alpaca-0"``) once stopped the bench,
    which used the raw id as the sampling seed. Seeds are a hash of the id: any id works, and the same
    id gets the same seed (and so the same sampled text) in every run."""
    questions = tmp_path / "q.jsonl"
    rows = [{"question_id": f"alpaca-{i}", "category": "qa", "turns": [f"a question {i}"]} for i in range(2)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = (
        f"bench spec --model {tiny_model_dir} --drafters first-1 --heuristic-for none --temperature 0.9 "
        f"--spec-bench {questions} --per-task 2 --max-new-tokens 6"
    ).split()
    texts = []
    for run in ("a", "b"):
        assert main([*args, "--out", str(tmp_path / f"{run}.json")]) == 0
        records = json.loads((tmp_path / f"{run}.json").read_text())["records"]
        texts.append({(r["method"], r["question_id"]): r["tokens"] for r in records})
        assert (tmp_path / f"{run}.md").is_file()  # the table beside the JSON by default
    assert texts[0] == texts[1] and len(texts[0]) == 4
    assert prompt_seed("alpaca-0") != prompt_seed("alpaca-1") and 0 <= prompt_seed(7) < 2**64


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_a_device_this_machine_lacks_is_a_clear_error(tmp_path, tiny_model_dir, capsys):
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    args = f"bench spec --model {tiny_model_dir} --spec-bench {questions} --limit 1 --device cuda".split()
    assert main(args) == 2
    assert "not available on this machine" in capsys.readouterr().err


def test_missing_prompts_file_is_a_clear_error(tmp_path, tiny_model_dir, capsys):
    assert (
        main(["bench", "spec", "--model", str(tiny_model_dir), "--spec-bench", str(tmp_path / "none.jsonl")])
        == 2
    )
    assert "Spec-Bench prompts not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("--fast-drafters prompt-lookup", "needs --engine with fast"),
        ("--engine eager,fast --fast-drafters first-1", "not in --drafters: first-1"),
    ],
)
def test_bad_fast_drafters_are_a_clear_error(tmp_path, tiny_model_dir, capsys, options, message):
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    args = f"bench spec --model {tiny_model_dir} --spec-bench {questions} --limit 1 --drafters prompt-lookup"
    assert main([*args.split(), *options.split(), "--out", str(tmp_path / "r.json")]) == 2
    assert message in capsys.readouterr().err


def records(times: list[float], tokens: int = 10) -> list[dict]:
    return [{"question_id": i, "tokens": [0] * tokens, "time": t} for i, t in enumerate(times)]


def _record(method: str, engine: str, question: int, time: float, target_calls: int | None = None) -> dict:
    stats = None
    if target_calls is not None:
        stats = {"new_tokens": 4, "target_calls": target_calls, "target_time": time, "draft_time": 0.0}
        stats |= {"proposed_tokens": 0, "accepted_tokens": 0, "tokens_per_target_call": 4 / target_calls}
    row = {"method": method, "engine": engine, "question_id": question, "task": "qa", "tokens": [5] * 4}
    return row | {"time": time, "stats": stats}


@pytest.mark.parametrize("with_hf", [True, False])
def test_a_run_on_the_fast_engine_alone_compares_everything_with_its_plain_decoding(with_hf):
    """--engine fast without eager: HF's rows (eager-tagged) and the reference fall back to the fast plain
    rows (a whole run once crashed in its summary for want of eager plain rows)."""
    records = [_record("ours-plain[fast]", "fast", q, 2.0, 4) for q in range(3)]
    records += [_record("ours-sps[x, fast]", "fast", q, 1.0, 2) for q in range(3)]
    records += [_record("hf-plain", "eager", q, 4.0) for q in range(3)] if with_hf else []
    methods = ["ours-plain[fast]", "ours-sps[x, fast]", *(["hf-plain"] if with_hf else [])]
    summary = summarize(records, methods)
    assert summary["_reference"] == ("hf-plain" if with_hf else "ours-plain[fast]")
    assert summary["ours-sps[x, fast]"]["speedup_vs_ours_plain"] == pytest.approx(2.0)
    if with_hf:
        assert summary["hf-plain"]["speedup_vs_ours_plain"] == pytest.approx(0.5)
        assert summary["ours-plain[fast]"]["speedup_vs_hf_plain"] == pytest.approx(2.0)


def test_bootstrap_interval():
    base = records([1.0, 2.0, 1.5, 3.0, 0.5])
    assert bootstrap_interval(records([0.5, 1.0, 0.75, 1.5, 0.25]), base) == pytest.approx([2.0, 2.0])
    low, high = bootstrap_interval(records([0.4, 1.4, 0.9, 2.6, 0.6]), base)
    assert low < 8.0 / 5.9 < high and high - low > 0.05  # spread from prompts that gain unequally


def test_mean_interval():
    assert mean_interval([1.5] * 7) == pytest.approx([1.5, 1.5])
    low, high = mean_interval([-2.0, 0.5, 3.0, 1.0, -1.0, 2.5])
    assert low < 4.0 / 6 < high and low < 0 < high  # a mean change whose sign the prompts leave open


def test_compiled_baselines_and_engines_reproduce_hf_plain(tmp_path, tiny_model_dir):
    """--hf-compile adds HF's static cache + compiled decoding step, --engine eager,fast our methods on
    compiled engines too; every output is HF plain's, and the warm-ups that pay the compiles are
    reported."""
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    out, md = tmp_path / "bench.json", tmp_path / "BENCH.md"
    args = (
        f"bench spec --model {tiny_model_dir} --drafters prompt-lookup,first-1 --heuristic-for none "
        f"--hf-compile --engine eager,fast --spec-bench {questions} --per-task 1 --limit 2 "
        f"--max-new-tokens 8 --out {out} --markdown {md}"
    ).split()
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert [m for m in report["summary"] if not m.startswith("_")] == [
        "hf-plain",
        "hf-static-compile",
        "ours-plain",
        "ours-plain[fast]",
        "hf-assisted[prompt-lookup]",
        "ours-sps[prompt-lookup]",
        "ours-sps[prompt-lookup, fast]",
        "hf-assisted[first-1]",
        "ours-sps[first-1]",
        "ours-sps[first-1, fast]",
    ]
    assert all(s["identical_to_reference"] == 1.0 for k, s in report["summary"].items() if k[0] != "_")
    assert report["config"]["engines"] == ["eager", "fast"]
    assert report["compile_seconds"] > 0 and "fast target engine built in" in md.read_text()
    assert set(report["warm_up_seconds"]) == {m for m in report["summary"] if not m.startswith("_")}
    assert "includes packing and compile" in md.read_text()


def test_unknown_engine_is_a_clear_error(tmp_path, tiny_model_dir, capsys):
    questions = write_questions(tmp_path / "q.jsonl", per_category=1)
    args = f"bench spec --model {tiny_model_dir} --spec-bench {questions} --limit 1 --engine turbo".split()
    assert main(args) == 2
    assert "--engine takes eager and/or fast" in capsys.readouterr().err


def test_one_static_cache_length_holds_every_prompt():
    assert static_cache_length([10, 300, 129], 128) == 512
    assert static_cache_length([128], 128) == 256


def test_drafter_digests_name_the_weights_under_any_prefix(tmp_path, tiny_model_dir):
    """A results row names the exact weights it ran: the same folder under any spec prefix gives the same
    digest, and changed weights give another."""
    folder = tmp_path / "draft"
    shutil.copytree(tiny_model_dir, folder)
    digest = drafter_digest(str(folder))
    assert len(digest) == 16
    assert drafter_digest(f"int8:vocab-64:{folder}") == drafter_digest(f"lookup+{folder}") == digest
    assert drafter_digest("smollm2-135m-draft") not in (None, digest)  # a packaged drafter, by name
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes() + b" ")
    assert drafter_digest(str(folder)) != digest


def test_the_default_drafters_are_the_packaged_targets_best_or_derived_from_the_target():
    best = default_drafters("smollm2-135m").split(",")
    assert best[0] == "prompt-lookup" and BEST_DRAFTERS["smollm2-135m"] in best
    shipped = {*packaged_drafts(), *packaged_eagle3s()}
    assert all(spec.rpartition(":")[2] in shipped for spec in best[1:])  # names that load
    assert default_drafters("my/own-model") == "prompt-lookup,int8,first-2"  # no packaged drafts


def test_the_ceiling_comes_from_measured_tokens_per_call_for_any_drafter_shape():
    """A tree proposes siblings: 4 drafted tokens a call, 2 accepted, 3 tokens a call. The chain formula at
    α 0.5, γ 4 gives 1.94 tokens a call, below what was measured; the ceiling uses the 3 measured, and a
    run with no prefill or upkeep (its time all verify calls and drafting) reaches it exactly."""
    plain = [_record("ours-plain", "eager", q, 1.2, 12) for q in range(2)]  # 12 one-token calls, 0.1 s each
    for row in plain:
        row["tokens"] = [5] * 12
        row["stats"] |= {"new_tokens": 12, "tokens_per_target_call": 1.0}
    tree = []
    for q in range(2):
        row = _record("ours-sps[tree]", "eager", q, 4 * 0.11 + 16 * 0.005, 4)  # verify 0.11 s, c 0.05
        row["tokens"] = [5] * 12
        row["stats"] |= {"new_tokens": 12, "target_time": 0.44, "draft_time": 0.08}
        row["stats"] |= {"proposed_tokens": 16, "accepted_tokens": 8, "tokens_per_target_call": 3.0}
        tree.append(row)
    summary = summarize(plain + tree, ["ours-plain", "ours-sps[tree]"])["ours-sps[tree]"]
    assert summary["alpha"] == pytest.approx(0.5) and summary["tokens_per_target_call"] == pytest.approx(3.0)
    assert summary["verify_cost_ratio"] == pytest.approx(1.1)
    assert summary["cost_ratio_c"] == pytest.approx(0.05)
    assert summary["ceiling"] == pytest.approx(3.0 / (1.1 + 4 * 0.05))
    assert summary["speedup_vs_ours_plain"] == pytest.approx(summary["ceiling"])
    assert summary["ceiling"] > (1 - 0.5**5) / 0.5 / (4 * 0.05 + 1)  # the chain formula's "bound" is under it
