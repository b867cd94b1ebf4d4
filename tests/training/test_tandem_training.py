"""The primary cache and the Tandem trainer on tiny models: the cache holds what the primary computes,
resumes by shard; training learns, keeps the best checkpoint, resumes exactly, and the baseline
trains on the same batches."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM

from specdec.cli.main import main
from specdec.decoders import SpeculativeSampling
from specdec.drafters.tandem import TandemDrafter
from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.models.tandem import TandemModel, primary_signature
from specdec.pipeline import Pipeline
from specdec.training import DraftShape, build_draft, generate_answers
from specdec.training import primary_cache as cache_module
from specdec.training.primary_cache import CacheSpec, PrimaryCache, build_primary_cache, sequence_of, split
from specdec.training.tandem import TandemTrainConfig, train_tandem
from specdec.training.tandem_objective import evaluate_on_cache
from tiny import make_llama, make_tokenizer

PROMPTS = [
    f"{a} {b}"
    for a in ("the quick", "def add(a, b):", "Once upon", "a small model", "speculative")
    for b in ("fox", "dog", "tree", "cat")
]


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def primary(tok):
    return make_llama(len(tok), seed=0, layers=2, hidden=32)


@pytest.fixture(scope="module")
def answers(tmp_path_factory, tok, primary):
    return generate_answers(
        Pipeline(primary, tok),
        PROMPTS * 3,
        source="tiny",
        max_new_tokens=24,
        cache_dir=tmp_path_factory.mktemp("a"),
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory, primary, answers):
    spec = CacheSpec("tiny", (1, 2), top_k=8, max_len=64)
    return build_primary_cache(
        primary, answers, tmp_path_factory.mktemp("cache"), spec, shard_size=16, batch_size=5
    )


def test_the_cache_holds_what_the_primary_computes(primary, answers, cache):
    assert len(cache) == len(answers)
    for index in (0, 17, len(answers) - 1):
        tokens, next_is_answer = sequence_of(answers[index], 64)
        row = cache.sequence(index)
        assert row["tokens"].tolist() == tokens and row["next_is_answer"].tolist() == next_is_answer
        with torch.inference_mode():
            out = primary(torch.tensor([tokens]), output_hidden_states=True)
        for h in (1, 2):
            torch.testing.assert_close(
                torch.from_numpy(row[f"hidden-{h}"].astype("float32")),
                out.hidden_states[h][0],
                rtol=2e-3,
                atol=2e-3,
            )
        assert torch.equal(torch.from_numpy(row["topk_ids"].astype("int64")), out.logits[0].topk(8).indices)
        torch.testing.assert_close(
            torch.from_numpy(row["logsumexp"].copy()), out.logits[0].logsumexp(-1), rtol=1e-4, atol=1e-4
        )
    assert sum(next_is_answer) == len(answers[index].answer_ids)


def test_the_cache_resumes_at_the_first_missing_shard(tmp_path, primary, answers, monkeypatch):
    spec = CacheSpec("tiny", (2,), top_k=4, max_len=64)
    folder = tmp_path / "c"
    build_primary_cache(primary, answers[:40], folder, spec, shard_size=16)
    before = {p.name: (p / "tokens.npy").read_bytes() for p in folder.glob("shard-*")}
    import shutil

    shutil.rmtree(folder / "shard-00001")
    with pytest.raises(DataNotFoundError, match="incomplete"):
        PrimaryCache(folder)
    computed = []
    original = cache_module._primary_outputs
    monkeypatch.setattr(
        cache_module,
        "_primary_outputs",
        lambda p, chunk, *a: computed.append(len(chunk)) or original(p, chunk, *a),
    )
    build_primary_cache(primary, answers[:40], folder, spec, shard_size=16)
    assert computed == [16]
    assert {p.name: (p / "tokens.npy").read_bytes() for p in folder.glob("shard-*")} == before
    with pytest.raises(InvalidArgumentError, match="built differently"):
        build_primary_cache(primary, answers[:40], folder, CacheSpec("tiny", (1,), 4, 64), shard_size=16)


def test_a_batch_comes_on_the_device_asked_for_hidden_states_included(cache):
    """Training and evaluation read batches on the model's device (a GPU run's held-out evaluation read
    CPU tensors with a CUDA model before); ``meta`` stands in for an accelerator here."""
    here, there = cache.batch([0, 3]), cache.batch([0, 3], device="meta")
    assert here.keys() == there.keys() and there["hidden"].keys() == here["hidden"].keys()
    for name, tensor in [*((k, v) for k, v in there.items() if k != "hidden"), *there["hidden"].items()]:
        assert tensor.is_meta, name
    for name in ("tokens", "valid", "topk_ids"):
        assert there[name].shape == here[name].shape and there[name].dtype == here[name].dtype


def test_several_caches_read_as_one_in_order_with_the_layers_they_share(tmp_path, primary, answers, cache):
    other = build_primary_cache(
        primary, answers[:20], tmp_path / "b", CacheSpec("tiny", (2,), 8, 64), shard_size=16
    )
    both = PrimaryCache([*cache.folders, tmp_path / "b"])
    assert len(both) == len(cache) + 20 and both.parts == [
        range(len(cache)),
        range(len(cache), len(cache) + 20),
    ]
    assert both.hidden_layers == (2,) and both.meta == {"parts": [cache.meta, other.meta]}
    for index in (0, len(cache) - 1):
        assert both.sequence(index)["tokens"].tolist() == cache.sequence(index)["tokens"].tolist()
    for index in (0, 19):
        assert (
            both.sequence(len(cache) + index)["tokens"].tolist() == other.sequence(index)["tokens"].tolist()
        )
    batch = both.batch([0, len(cache) + 3])
    assert set(batch["hidden"]) == {2} and batch["topk_ids"].shape[-1] == 8
    build_primary_cache(primary, answers[:5], tmp_path / "k4", CacheSpec("tiny", (2,), 4, 64), shard_size=16)
    with pytest.raises(InvalidArgumentError, match="must agree on 'top_k'"):
        PrimaryCache([tmp_path / "b", tmp_path / "k4"])
    with pytest.raises(DataNotFoundError, match="no primary cache"):
        PrimaryCache([tmp_path / "b", tmp_path / "missing"])


@given(
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=5),
    fraction=st.floats(0.01, 0.99),
    prefix=st.integers(1, 10),
)
def test_the_heldout_split_takes_every_folders_tail_and_any_prefix_spans_the_folders(sizes, fraction, prefix):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    parts = [range(start, start + size) for start, size in zip(starts, sizes, strict=True)]
    train, heldout = split(SimpleNamespace(parts=parts), fraction)
    assert sorted([*train, *heldout]) == list(range(sum(sizes))) and not set(train) & set(heldout)
    for part in parts:
        mine = [i for i in heldout if i in part]
        assert mine == list(part[len(part) - max(1, int(len(part) * fraction)) :])  # the tail, in order
    assert len({next(j for j, p in enumerate(parts) if i in p) for i in heldout[:prefix]}) == min(
        prefix, len(parts)
    )
    if len(parts) == 1:  # one folder: the split the trainers always made
        held = max(1, int(sizes[0] * fraction))
        assert (train, heldout) == (range(sizes[0] - held), range(sizes[0] - held, sizes[0]))


def tandem_for(primary, seed=0):
    secondary = build_draft(
        primary, DraftShape(num_layers=1, hidden_size=16, num_heads=2, init="fresh"), seed=seed
    )
    return TandemModel(secondary, primary_signature(primary), (2,))


def config(tmp_path, **overrides):
    base = dict(
        output_dir=str(tmp_path),
        steps=60,
        batch_size=8,
        lr=3e-3,
        warmup_steps=5,
        eval_every=20,
        save_every=20,
        heldout_fraction=0.2,
        eval_sequences=12,
    )
    return TandemTrainConfig(**{**base, **overrides})


def test_tandem_distil_learns_and_keeps_the_best_checkpoint(tmp_path, tok, primary, cache):
    model = tandem_for(primary)
    _, heldout = split(cache, 0.2)
    before = evaluate_on_cache(model, cache, heldout, gamma_train=2)
    best = train_tandem(model, cache, config(tmp_path), tok)
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(log) == 60 and {r["lambda"] for r in log} == {0.0, 0.5}  # Tandem-Distil's two stages
    evals = [r for r in log if "heldout_agreement" in r]
    assert [r["step"] for r in evals] == [20, 40, 60]
    top = max(evals, key=lambda r: r["accepted_per_block_g5"])
    assert top["accepted_per_block_g5"] > before["accepted_per_block_g5"] + 0.1
    assert top["heldout_agreement"] > before["heldout_agreement"] + 0.1
    loaded = TandemModel.from_pretrained(best)
    assert evaluate_on_cache(loaded, cache, range(heldout.start, heldout.start + 12), 2)[
        "accepted_per_block_g5"
    ] == pytest.approx(top["accepted_per_block_g5"])
    out = Pipeline(primary, tok, drafter=TandemDrafter(loaded, tok)).generate(
        PROMPTS[:2], method=SpeculativeSampling(3), max_new_tokens=16, chat=True
    )
    plain = Pipeline(primary, tok).generate(PROMPTS[:2], max_new_tokens=16, chat=True)
    assert out.token_ids == plain.token_ids and out.stats.acceptance_rate > 0.1


def test_resume_reproduces_an_uninterrupted_run(tmp_path, tok, primary, cache):
    full = train_tandem(
        tandem_for(primary), cache, config(tmp_path / "full", steps=10, save_every=5, eval_every=5), tok
    )
    resumed_dir = tmp_path / "resumed"
    resumed_dir.mkdir()
    (resumed_dir / "checkpoint-5").symlink_to(tmp_path / "full" / "checkpoint-5", target_is_directory=True)
    train_tandem(
        tandem_for(primary, seed=9),
        cache,
        config(resumed_dir, steps=10, save_every=5, eval_every=5, resume=True),
        tok,
    )
    a = TandemModel.from_pretrained(tmp_path / "full" / "checkpoint-10").state_dict()
    b = TandemModel.from_pretrained(resumed_dir / "checkpoint-10").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert full.name == "best"

    # a time limit ends the run on a checkpoint after the step that crosses it; resume finishes it exactly
    timed = tmp_path / "timed"
    train_tandem(tandem_for(primary), cache, config(timed, steps=10, save_every=5, time_limit_s=1e-9), tok)
    assert [p.name for p in timed.glob("checkpoint-*")] == ["checkpoint-1"]
    train_tandem(tandem_for(primary, seed=9), cache, config(timed, steps=10, save_every=5, resume=True), tok)
    c = TandemModel.from_pretrained(timed / "checkpoint-10").state_dict()
    assert all(torch.equal(a[k], c[k]) for k in a)


def test_the_baseline_draft_trains_on_the_same_batches(tmp_path, tok, primary, cache):
    draft = build_draft(primary, DraftShape(num_layers=1, hidden_size=16, num_heads=2, init="fresh"))
    best = train_tandem(draft, cache, config(tmp_path, architecture="draft", steps=40), tok)
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    tandem_tokens = [r["tokens_seen"] for r in log]
    assert tandem_tokens == sorted(tandem_tokens) and (best / "config.json").is_file()
    with pytest.raises(InvalidArgumentError, match="does not match"):
        train_tandem(draft, cache, config(tmp_path / "x"), tok)  # a plain draft under architecture="tandem"
    with pytest.raises(InvalidArgumentError, match="reads primary layers"):
        train_tandem(TandemModel(draft, primary_signature(primary), (0,)), cache, config(tmp_path / "y"), tok)


def test_the_cli_runs_the_whole_recipe(tmp_path, tiny_model_dir, answers, monkeypatch, capsys):
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text("".join(json.dumps(a.__dict__) + "\n" for a in answers))
    cache_dir = tmp_path / "cache"
    assert (
        main(
            [
                "data",
                "primary",
                "--target",
                str(tiny_model_dir),
                "--answers",
                str(answers_file),
                "--output",
                str(cache_dir),
                "--secondary-layers",
                "1",
                "--top-k",
                "8",
                "--max-len",
                "64",
            ]
        )
        == 0
    )
    for architecture in ("tandem", "draft"):
        out = tmp_path / architecture
        args = [
            "train",
            "tandem",
            "--target",
            str(tiny_model_dir),
            "--cache",
            str(cache_dir),
            "--output",
            str(out),
            "--architecture",
            architecture,
            "--layers",
            "1",
            "--steps",
            "6",
            "--eval-every",
            "3",
            "--save-every",
            "3",
            "--eval-sequences",
            "4",
            "--bf16",
            "off",
        ]
        assert main(args) == 0
        assert (out / "best").is_dir() and json.loads((out / "train_config.json").read_text())["extra"][
            "machine"
        ]["cpu"]
    text_source = tmp_path / "books.jsonl"
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "near", "the", "cat"]
    text_source.write_text(
        "".join(json.dumps({"text": " ".join(words[i:] + words[:i]) * 8}) + "\n" for i in range(6))
    )
    text_file = tmp_path / "text.jsonl"
    target = ["--target", str(tiny_model_dir)]
    text_args = ["--source", str(text_source), "--count", "6", "--tokens", "40", "--output", str(text_file)]
    assert main(["data", "text", *target, *text_args]) == 0
    text_cache = tmp_path / "text-cache"
    primary_args = ["--secondary-layers", "1", "--top-k", "8", "--max-len", "64", "--output", str(text_cache)]
    assert main(["data", "primary", *target, "--answers", str(text_file), *primary_args]) == 0
    report_file, markdown = tmp_path / "eval.json", tmp_path / "TANDEM.md"
    eval_args = [
        "eval",
        "tandem",
        *(
            "--model",
            f"tandem={tmp_path / 'tandem' / 'best'}",
            "--model",
            f"draft={tmp_path / 'draft' / 'best'}",
        ),
        *("--cache", f"answers={cache_dir}", "--heldout-cache", f"text={text_cache}"),
        *("--run", f"tandem={tmp_path / 'tandem'}", "--run", f"draft={tmp_path / 'draft'}"),
        *("--heldout-fraction", "0.3", "--skip", "4", "--gamma-train", "2"),
        *("--out", str(report_file), "--markdown", str(markdown), "--plot", str(tmp_path / "budget.png")),
    ]
    assert main(eval_args) == 0
    report = json.loads(report_file.read_text())
    for cache_name in ("answers", "text"):
        for name in ("tandem", "draft"):
            row = report["tables"][cache_name][name]
            assert row["positions"] > 0 and 0 < row["relative_tv"] <= 1 and row["ce_gt"] > 0
            # Two implementations of agreement with the primary must give one number.
            assert row["relative_accuracy"] == pytest.approx(row["heldout_agreement"])
            if cache_name == "answers":  # the answers are the primary's own greedy choices
                assert row["accuracy_gt"] == pytest.approx(row["relative_accuracy"])
    assert report["tables"]["text"]["tandem"]["sequences"] == [0, 6]  # never trained on: all of it
    steps = [p["tokens_seen"] for p in report["budget"]["tandem"]]
    assert len(steps) == 2 and steps[0] < steps[1]
    assert "| tandem |" in markdown.read_text() and (tmp_path / "budget.png").stat().st_size > 0
    digests = report["digests"]  # the weights each row ran with, on the page too
    assert len(set(digests.values())) == 2 and all(
        f"{n} {d}" in markdown.read_text() for n, d in digests.items()
    )
    dest = tmp_path / "drafts"
    export = ["train", "export", "--draft", str(tmp_path / "tandem" / "best"), "--base", str(tiny_model_dir)]
    assert main([*export, "--name", "tiny-tandem", "--dest", str(dest)]) == 0
    lone = tmp_path / "lone" / "best"  # a checkpoint outside its run: a clear error, nothing written
    shutil.copytree(tmp_path / "tandem" / "best", lone)
    loose = ["train", "export", "--draft", str(lone), "--base", str(tiny_model_dir), "--name", "lone"]
    assert main([*loose, "--dest", str(dest)]) == 2
    assert "not a checkpoint inside a training run" in capsys.readouterr().err
    assert not (dest / "lone").exists()
    manifest = json.loads((dest / "tiny-tandem" / "secondary" / "specdec_draft.json").read_text())
    assert "model.embed_tokens.weight" in manifest["shared"] and manifest["training_config"]["steps"] == 6
    from specdec.drafters import make_drafter
    from specdec.models import load_model, packaged

    monkeypatch.setattr(packaged, "DRAFTS_DIR", dest)
    target = load_model(tiny_model_dir)
    drafter = make_drafter("tandem:tiny-tandem", target.model, target.tokenizer, cache_dir=tmp_path / "c")
    trained = TandemModel.from_pretrained(tmp_path / "tandem" / "best")
    theirs = dict(trained.named_parameters())
    for name, mine in drafter.tandem.named_parameters():  # shared with the base: exact; its own: bf16
        shared = "embed_tokens" in name or "lm_head" in name
        torch.testing.assert_close(mine, theirs[name] if shared else theirs[name].to(torch.bfloat16).float())
    prompts = ["the quick fox", "def add(a, b):"]
    plain = Pipeline(target.model, target.tokenizer).generate(prompts, max_new_tokens=12)
    spec = Pipeline(target.model, target.tokenizer, drafter=drafter).generate(
        prompts, method=SpeculativeSampling(3), max_new_tokens=12
    )
    assert spec.token_ids == plain.token_ids
    from specdec.drafters.factory import tandem_folder

    by_path = TandemModel.from_pretrained(tandem_folder(str(dest / "tiny-tandem"), str(tmp_path / "c")))
    for name, mine in by_path.named_parameters():  # the exported folder given by path loads as by name
        torch.testing.assert_close(mine, dict(drafter.tandem.named_parameters())[name], rtol=0, atol=0)
    # Exported folders (own tensors in bf16, the rest the base's) are scored as they ship, beside checkpoints
    export = ["train", "export", "--draft", str(tmp_path / "draft" / "best"), "--base", str(tiny_model_dir)]
    assert main([*export, "--name", "tiny-draft", "--dest", str(dest)]) == 0
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "c"))
    shipped = [*("--model", f"tandem={dest / 'tiny-tandem'}", "--model", f"draft={dest / 'tiny-draft'}")]
    out = ["--out", str(tmp_path / "shipped.json"), "--markdown", str(tmp_path / "SHIPPED.md")]
    assert main(["eval", "tandem", *shipped, "--heldout-cache", f"text={text_cache}", *out]) == 0
    exported = json.loads((tmp_path / "shipped.json").read_text())["tables"]["text"]
    for name in ("tandem", "draft"):
        mine, theirs = exported[name], report["tables"]["text"][name]
        assert mine["positions"] == theirs["positions"]
        assert mine["relative_tv"] == pytest.approx(theirs["relative_tv"], abs=0.05)
    assert (
        main(
            [
                "train",
                "tandem",
                "--target",
                str(tiny_model_dir),
                "--cache",
                str(tmp_path / "nothing"),
                "--output",
                str(tmp_path / "z"),
            ]
        )
        == 2
    )


def test_router_trains_and_sets_the_block_length(tmp_path, tok, primary, cache):
    from specdec.drafters.tandem import TandemDrafter
    from specdec.models.router import BlockRouter
    from specdec.training.router import train_router

    best = train_tandem(tandem_for(primary), cache, config(tmp_path / "t", steps=30, eval_every=30), tok)
    tandem = TandemModel.from_pretrained(best)
    report = train_router(tandem, cache, best / "router", steps=40, gamma=3, heldout_fraction=0.2)
    assert report["heldout_mean_abs_error"] < 0.5 and 0 <= report["heldout_disagreements_caught_at_tau"] <= 1
    router = BlockRouter.from_pretrained(best / "router")
    plain = Pipeline(primary, tok).generate(PROMPTS[:2], max_new_tokens=16, chat=True)
    drafts = {}
    for tau in (0.0, 0.5, 1.0):  # stop before every token, learned, never stop
        drafter = TandemDrafter(tandem, tok, router=router, tau=tau)
        out = Pipeline(primary, tok, drafter=drafter).generate(
            PROMPTS[:2], method=SpeculativeSampling(4), max_new_tokens=16, chat=True
        )
        assert out.token_ids == plain.token_ids
        drafts[tau] = out.stats.proposed_tokens / out.stats.row_steps
    assert drafts[0.0] == 0 and drafts[1.0] > 3 and drafts[0.0] <= drafts[0.5] <= drafts[1.0]
    assert (
        main(["train", "router", "--tandem", str(best), "--cache", str(cache.folders[0]), "--steps", "3"])
        == 0
    )


def test_text_samples_cut_documents_into_scored_continuations(tmp_path, tok):
    from specdec.training.answers import read_answers, text_samples, write_answers

    source = tmp_path / "t.jsonl"
    source.write_text(
        "".join(json.dumps({"text": f"doc {i} " + "the fox and the dog " * 30}) + "\n" for i in range(5))
    )
    samples = text_samples(source, tok, count=3, length=12)
    assert len(samples) == 3 and all(len(s.prompt_ids) == 1 and len(s.answer_ids) == 11 for s in samples)
    many = text_samples(source, tok, count=12, length=12)  # more windows than documents
    assert len(many) == 12 and len({tuple(s.answer_ids) for s in many}) > 1
    write_answers(tmp_path / "out.jsonl", samples)
    assert read_answers(tmp_path / "out.jsonl") == samples
    with pytest.raises(DataNotFoundError):
        text_samples(tmp_path / "missing.jsonl", tok, 1)


def test_a_cache_resumes_only_from_the_same_answers_in_the_same_order(tmp_path, primary, answers):
    spec = CacheSpec("tiny", (2,), top_k=4, max_len=64)
    build_primary_cache(primary, answers[:20], tmp_path, spec, shard_size=16)
    with pytest.raises(InvalidArgumentError, match="built differently"):
        build_primary_cache(primary, answers[:20][::-1], tmp_path, spec, shard_size=16)


def test_losses_on_answer_positions_match_the_masked_full_pass(primary, cache):
    from specdec.training.tandem_objective import answer_positions, losses, student_logits

    tandem, batch = tandem_for(primary), cache.batch([0, 5, 9])
    keep = answer_positions(batch)
    with torch.no_grad():
        ce, kd = losses(student_logits(tandem, batch, 2, keep=keep), batch, temperature=1.0)
        full = student_logits(tandem, batch, 2)[:, :-1]
    mask = keep[:, :-1]
    expected_ce = torch.nn.functional.cross_entropy(full[mask], batch["tokens"][:, 1:][mask])
    teacher = torch.softmax(batch["topk_values"][:, :-1][mask].float(), -1)
    log_p = torch.log_softmax(full[mask], -1).gather(-1, batch["topk_ids"][:, :-1][mask])
    torch.testing.assert_close(ce, expected_ce)
    torch.testing.assert_close(kd, -(teacher * log_p).sum(-1).mean())
    assert int(mask.sum()) == sum(int(cache.sequence(i)["next_is_answer"].sum()) for i in (0, 5, 9)) > 0


def test_tandem_ce_branched_from_distils_half_way_point_is_the_straight_ce_run(tmp_path, tok, primary, cache):
    """Tandem-Distil is CE up to half-way, so Tandem-CE can continue from there instead of starting over."""
    steps = dict(steps=10, save_every=5, eval_every=5)
    train_tandem(tandem_for(primary), cache, config(tmp_path / "distil", **steps), tok)
    straight = train_tandem(tandem_for(primary), cache, config(tmp_path / "ce", preset="ce", **steps), tok)
    branch = tmp_path / "branch"
    source = str(tmp_path / "distil" / "checkpoint-5")
    best = train_tandem(
        tandem_for(primary, seed=9), cache, config(branch, preset="ce", branch_from=source, **steps), tok
    )
    a = TandemModel.from_pretrained(tmp_path / "ce" / "checkpoint-10").state_dict()
    b = TandemModel.from_pretrained(branch / "checkpoint-10").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    straight_log = (tmp_path / "ce" / "log.jsonl").read_text().splitlines()
    branch_log = (branch / "log.jsonl").read_text().splitlines()
    assert [json.loads(x)["loss"] for x in branch_log] == [json.loads(x)["loss"] for x in straight_log]
    assert best.is_dir() and straight.is_dir()
    assert json.loads((branch / "train_config.json").read_text())["branch_from"] == source
    with pytest.raises(InvalidArgumentError, match="checkpoint-K"):
        train_tandem(tandem_for(primary), cache, config(tmp_path / "x", branch_from=str(tmp_path)), tok)


def primary_cache_by_cli(tmp_path, model_dir, answers) -> Path:
    """`specdec data primary` over ``answers`` (embeddings as the one hidden layer, top-8 logits)."""
    answers_file, cache_dir = tmp_path / "answers.jsonl", tmp_path / "cache"
    answers_file.write_text("".join(json.dumps(a.__dict__) + "\n" for a in answers))
    data = ["--answers", str(answers_file), "--output", str(cache_dir), "--hidden-layers", "0"]
    assert (
        main(["data", "primary", "--target", str(model_dir), *data, "--top-k", "8", "--max-len", "64"]) == 0
    )
    return cache_dir


def test_identity_projections_read_the_copied_layers_by_default(tmp_path, tiny_model_dir, answers, capsys):
    """`--projection-init identity` without a layer map: each secondary layer reads the primary's input
    to the layer it was copied from (a 1-layer secondary copies layer 0, so it reads the embeddings)."""
    cache_dir, out = primary_cache_by_cli(tmp_path, tiny_model_dir, answers), tmp_path / "run"
    target = ["--target", str(tiny_model_dir)]
    train = ["train", "tandem", *target, "--cache", str(cache_dir), "--output", str(out), "--layers", "1"]
    options = ["--steps", "2", "--eval-every", "2", "--save-every", "2", "--eval-sequences", "4"]
    options += ["--bf16", "off", "--projection-init", "identity", "--time-limit", "3600"]
    assert main([*train, *options]) == 0
    recorded = json.loads((out / "train_config.json").read_text())
    assert recorded["extra"]["layer_map"] == [0] and recorded["extra"]["projection_init"] == "identity"
    assert recorded["time_limit_s"] == 3600
    assert main([*train, *options, "--hidden-size", "16", "--heads", "2"]) == 2
    assert "identity projections need" in capsys.readouterr().err


@pytest.mark.parametrize("architecture", ["draft", "tandem"])
def test_init_from_starts_from_given_weights_with_a_fresh_schedule(
    tmp_path, tiny_model_dir, answers, architecture
):
    """`--init-from` a trained model (new data for a shipped drafter): training starts from exactly
    those weights, under a new optimiser and schedule, and the run records where it came from."""
    cache_dir = primary_cache_by_cli(tmp_path, tiny_model_dir, answers)
    target = ["--target", str(tiny_model_dir)]
    train = ["train", "tandem", *target, "--cache", str(cache_dir), "--architecture", architecture]
    options = [
        "--steps",
        "3",
        "--eval-every",
        "3",
        "--save-every",
        "3",
        "--eval-sequences",
        "4",
        "--bf16",
        "off",
    ]
    options += (
        ["--layers", "1", "--projection-init", "identity"] if architecture == "tandem" else ["--layers", "1"]
    )
    assert main([*train, "--output", str(tmp_path / "first"), *options]) == 0
    source = tmp_path / "first" / "checkpoint-3"
    again = [*train, "--output", str(tmp_path / "second"), "--init-from", str(source)]
    assert (
        main(
            [
                *again,
                "--steps",
                "1",
                "--eval-every",
                "1",
                "--save-every",
                "1",
                "--warmup",
                "1",
                "--eval-sequences",
                "4",
                "--bf16",
                "off",
                "--lr",
                "0",
            ]
        )
        == 0
    )
    started = tmp_path / "second" / "checkpoint-1"
    load = TandemModel.from_pretrained if architecture == "tandem" else AutoModelForCausalLM.from_pretrained
    a, b = load(source).state_dict(), load(started).state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # lr 0: the given weights
    config = json.loads((tmp_path / "second" / "train_config.json").read_text())
    assert config["extra"]["init_from"] == str(source) and "shape" not in config["extra"]


def test_a_cli_cache_on_another_device_is_a_clear_error_or_the_same_cache(
    tmp_path, tiny_model_dir, answers, capsys
):
    """`data primary --device cuda`: without CUDA a specdec error naming the device; with it, the cache a CPU
    run writes (fp32 outputs within rounding of each other, the same tokens and answer masks)."""
    (tmp_path / "cpu").mkdir()
    cpu = primary_cache_by_cli(tmp_path / "cpu", tiny_model_dir, answers)
    gpu_args = ["--answers", str(tmp_path / "cpu" / "answers.jsonl"), "--output", str(tmp_path / "gpu")]
    gpu_args += ["--target", str(tiny_model_dir), "--hidden-layers", "0", "--top-k", "8", "--max-len", "64"]
    if not torch.cuda.is_available():
        assert main(["data", "primary", *gpu_args, "--device", "cuda"]) == 2
        assert "'cuda' is not available" in capsys.readouterr().err
        assert not (tmp_path / "gpu").exists()
        return
    assert main(["data", "primary", *gpu_args, "--device", "cuda"]) == 0
    a, b = PrimaryCache(cpu), PrimaryCache(tmp_path / "gpu")
    first, second = a.batch(range(len(a))), b.batch(range(len(b)))
    assert torch.equal(first["tokens"], second["tokens"])
    assert torch.equal(first["next_is_answer"], second["next_is_answer"])
    torch.testing.assert_close(first["hidden"][0], second["hidden"][0], atol=1e-2, rtol=1e-2)
