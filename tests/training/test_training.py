import copy
import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from specdec.errors import DataNotFoundError, EmptyDataError, InvalidArgumentError, VocabularyMismatchError
from specdec.models import truncated_copy
from specdec.pipeline import Pipeline
from specdec.training import (
    DraftShape,
    TrainConfig,
    build_draft,
    distillation,
    evaluate,
    fixed_windows,
    generate_answers,
    read_documents,
    split_stream,
    tokenize_stream,
    train_draft,
    trainer,
)
from specdec.training import answers as answers_module
from specdec.training import prompts as prompts_module
from specdec.training.prompts import self_written_prompts, user_turn_prefix
from tiny import make_gpt2, make_llama, make_tokenizer

SHAKESPEARE = Path(__file__).resolve().parents[2].parent / "shared/data/train/tinyshakespeare/input.txt"


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def streams(tok):
    if not SHAKESPEARE.is_file():
        pytest.skip(f"tinyshakespeare not found at {SHAKESPEARE} (../shared is absent)")
    docs = read_documents(SHAKESPEARE, max_chars=60_000)
    return split_stream(tokenize_stream(docs, tok), 0.1)


@pytest.fixture(scope="module")
def target(tok):
    return make_llama(len(tok), seed=0, layers=2, hidden=32)


def small_config(tmp_path, **overrides) -> TrainConfig:
    base = dict(
        output_dir=str(tmp_path),
        steps=60,
        batch_size=8,
        seq_len=32,
        lr=3e-3,
        warmup_steps=5,
        eval_every=1000,
        save_every=1000,
        distill_weight=0.5,
        freeze_embeddings=False,
    )
    return TrainConfig(**{**base, **overrides})


def test_training_lowers_loss_and_raises_agreement(tmp_path, tok, target, streams):
    """Pretrain a tiny target on tinyshakespeare (CE only), then distil a fresh draft from it with
    the Tandem-Distil preset: the loss falls and agreement with the target rises."""
    train, heldout = streams
    teacher_dir = train_draft(
        copy.deepcopy(target),
        target,
        tok,
        small_config(tmp_path / "teacher", distill_weight=0.0),
        train_stream=train,
        heldout_stream=heldout,
    )
    teacher = type(target).from_pretrained(teacher_dir).eval()
    draft = build_draft(teacher, DraftShape(num_layers=1, init="fresh"), seed=3)
    windows = fixed_windows(heldout, 16, 33)
    before = evaluate(draft, teacher, windows)
    config = small_config(tmp_path / "draft", preset="tandem-distil", steps=80)
    final = train_draft(draft, teacher, tok, config, train_stream=train, heldout_stream=heldout)
    after = evaluate(type(draft).from_pretrained(final), teacher, windows)
    assert after["heldout_ce"] < before["heldout_ce"] - 0.5
    assert after["top1_agreement"] > before["top1_agreement"] + 0.1
    assert after["alpha"] > before["alpha"] + 0.1
    log = [json.loads(line) for line in (tmp_path / "draft" / "log.jsonl").read_text().splitlines()]
    assert len(log) == 80 and "heldout_ce" in log[-1]
    assert {r["lambda"] for r in log} == {0.0, 0.5}  # the preset's two stages
    assert sum(r["ce"] for r in log[-5:]) < sum(r["ce"] for r in log[:5]) - 2.5
    assert json.loads((tmp_path / "draft" / "train_config.json").read_text())["preset"] == "tandem-distil"


def test_distillation_is_zero_for_identical_models():
    logits = torch.randn(2, 5, 11)
    for temperature in (0.5, 1.0, 3.0):
        assert distillation(logits, logits.clone(), temperature).abs().item() < 1e-6
    assert distillation(logits, torch.randn(2, 5, 11)).item() > 0.01
    entropy = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean()
    torch.testing.assert_close(distillation(logits, logits, kind="soft_ce"), entropy)


def test_resume_reproduces_an_uninterrupted_run(tmp_path, tok, target, streams):
    train, heldout = streams
    full_dir, resumed_dir = tmp_path / "full", tmp_path / "resumed"
    config = dict(steps=10, save_every=5)
    full = train_draft(
        build_draft(target, DraftShape(1, init="fresh"), seed=1),
        target,
        tok,
        small_config(full_dir, **config),
        train_stream=train,
        heldout_stream=heldout,
    )
    # An interrupted run left checkpoint-5 behind; a new process resumes from it.
    resumed_dir.mkdir()
    (resumed_dir / "checkpoint-5").symlink_to(full_dir / "checkpoint-5", target_is_directory=True)
    resumed = train_draft(
        build_draft(target, DraftShape(1, init="fresh"), seed=99),
        target,
        tok,
        small_config(resumed_dir, resume=True, **config),
        train_stream=train,
        heldout_stream=heldout,
    )
    a, b = (type(target).from_pretrained(p).state_dict() for p in (full, resumed))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_alignment_data_is_deterministic_and_cached(tmp_path, tok, target, monkeypatch):
    pipe = Pipeline(target, tok)
    prompts = ["the quick brown fox", "def add(a, b):", "Once upon a time"]
    first = generate_answers(pipe, prompts, source="tiny", max_new_tokens=6, cache_dir=tmp_path)
    fresh = generate_answers(pipe, prompts, source="tiny", max_new_tokens=6, cache_dir=tmp_path / "again")
    assert [e.answer_ids for e in first] == [e.answer_ids for e in fresh]
    assert all(len(e.answer_ids) == 6 for e in first)
    assert first[0].prompt_ids == pipe.encode(prompts[0], chat=True)

    def fail(*args, **kwargs):
        raise AssertionError("cache miss: generation ran again")

    monkeypatch.setattr(answers_module.Pipeline, "generate", fail)
    cached = generate_answers(pipe, prompts, source="tiny", max_new_tokens=6, cache_dir=tmp_path)
    assert [e.__dict__ for e in cached] == [e.__dict__ for e in first]
    assert len(list(tmp_path.glob("answers-*.jsonl"))) == 1


def answer_ce(model, examples) -> float:
    """Mean CE of the answer tokens given prompt + earlier answer tokens (what alignment trains)."""
    losses = []
    with torch.no_grad():
        for ex in examples:
            ids = torch.tensor([ex.prompt_ids + ex.answer_ids])
            logits = model(ids).logits[0, len(ex.prompt_ids) - 1 : -1]
            losses.append(torch.nn.functional.cross_entropy(logits, torch.tensor(ex.answer_ids)).item())
    return sum(losses) / len(losses)


def test_alignment_only_training(tmp_path, tok, target):
    """Without a corpus, the draft learns the target's own answers: their CE falls by a wide margin."""
    pipe = Pipeline(target, tok)
    data = generate_answers(
        pipe, ["the quick", "def f():"], source="tiny", max_new_tokens=8, cache_dir=tmp_path
    )
    draft = build_draft(target, DraftShape(1, init="fresh"), seed=2)
    before = answer_ce(draft, data)
    final = train_draft(
        draft,
        target,
        tok,
        small_config(tmp_path / "out", steps=30),
        train_stream=None,
        heldout_stream=None,
        alignment=data,
    )
    trained = type(draft).from_pretrained(final)
    assert answer_ce(trained, data) < before - 1.0
    log = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert {r["source"] for r in log} == {"alignment"} and len(log) == 30


def test_build_draft_from_target_layers(tok):
    target = make_llama(len(tok), seed=0, layers=4, hidden=32)
    draft = build_draft(target, DraftShape(num_layers=2, init_layers=(0, 3)))
    assert draft.config.num_hidden_layers == 2
    assert torch.equal(draft.model.layers[1].mlp.up_proj.weight, target.model.layers[3].mlp.up_proj.weight)
    assert torch.equal(draft.model.embed_tokens.weight, target.model.embed_tokens.weight)
    narrow = build_draft(target, DraftShape(num_layers=1, hidden_size=16, num_heads=2))
    assert narrow(torch.tensor([[5, 6, 7]])).logits.shape == (1, 3, len(tok))


def test_clear_errors(tmp_path, tok, target):
    with pytest.raises(DataNotFoundError, match="not found"):
        read_documents(tmp_path / "missing.txt")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(EmptyDataError, match="no text"):
        read_documents(empty)
    with pytest.raises(InvalidArgumentError, match="λ"):
        small_config(tmp_path, distill_weight=1.5)
    with pytest.raises(InvalidArgumentError, match="temperature"):
        small_config(tmp_path, temperature=0.0)
    with pytest.raises(VocabularyMismatchError):
        train_draft(
            make_gpt2(len(tok) + 5),
            target,
            tok,
            small_config(tmp_path),
            train_stream=torch.arange(100),
            heldout_stream=None,
        )


def test_early_exit_training_lowers_both_losses_and_aligns_the_exit(tmp_path, tok, streams):
    """BiLD §4.4: the averaged CE of the exit (first layer + shared head) and the final layer."""
    train, heldout = streams
    model = make_llama(len(tok), seed=0, layers=3, hidden=32)
    windows = fixed_windows(heldout, 16, 33)
    before_exit = evaluate(truncated_copy(model, 1), model, windows)
    before_final = evaluate(model, model, windows)
    config = small_config(tmp_path, early_exit_layer=1, distill_weight=0.0, eval_every=30)
    final = train_draft(copy.deepcopy(model), model, tok, config, train_stream=train, heldout_stream=heldout)
    tuned = type(model).from_pretrained(final)
    after_exit = evaluate(truncated_copy(tuned, 1), tuned, windows)
    after_final = evaluate(tuned, tuned, windows)
    assert after_exit["heldout_ce"] < before_exit["heldout_ce"] - 1.0
    assert after_final["heldout_ce"] < before_final["heldout_ce"] - 1.0
    assert after_exit["top1_agreement"] > before_exit["top1_agreement"] + 0.1
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert {"exit_ce", "final_ce", "final_heldout_ce", "top1_agreement"} <= set(log[-1])
    assert log[-1]["ce"] == pytest.approx((log[-1]["exit_ce"] + log[-1]["final_ce"]) / 2, rel=1e-5)
    with pytest.raises(InvalidArgumentError):
        TrainConfig(output_dir=str(tmp_path), early_exit_layer=-1)


def test_an_early_exit_is_what_gets_distilled(tok, target):
    """With an early exit and λ > 0, KD pulls the exit's logits towards the target (the exit is the
    drafter BiLD runs); the loss mixes the averaged CE with it."""
    model = make_llama(len(tok), seed=3, layers=3, hidden=32).eval()
    exit_model = truncated_copy(model, 1)
    tokens = torch.randint(3, len(tok), (2, 17), generator=torch.Generator().manual_seed(0))
    config = TrainConfig(output_dir="unused", distill_weight=0.5, temperature=2.0)
    batch = trainer._Batch(tokens, None, None, 0.5, "text")
    terms = trainer._losses(model, exit_model, target, batch, config)
    with torch.no_grad():
        teacher = target(tokens).logits[:, :-1]
        exit_kd = distillation(exit_model(tokens).logits[:, :-1], teacher, 2.0, "kl")
        final_kd = distillation(model(tokens).logits[:, :-1], teacher, 2.0, "kl")
    assert terms["kd"].item() == pytest.approx(exit_kd.item(), rel=1e-5)
    assert terms["kd"].item() != pytest.approx(final_kd.item(), rel=1e-3)
    assert terms["ce"].item() == pytest.approx((terms["exit_ce"] + terms["final_ce"]).item() / 2, rel=1e-6)
    assert terms["loss"].item() == pytest.approx((0.5 * terms["ce"] + 0.5 * terms["kd"]).item(), rel=1e-6)


def test_evaluate_runs_without_dropout_and_restores_modes(tok):
    """GPT-2 has dropout: evaluation must not sample it, nor leave a model switched to training."""
    draft, target = make_gpt2(len(tok), seed=1), make_gpt2(len(tok), seed=0)
    draft.eval(), target.train()  # a loaded draft (eval-draft) and a model being fine-tuned (early exit)
    windows = torch.randint(3, len(tok), (4, 17), generator=torch.Generator().manual_seed(0))
    first, second = evaluate(draft, target, windows), evaluate(draft, target, windows)
    assert first == second
    assert not draft.training and target.training


def count_generate_calls(monkeypatch) -> list[int]:
    """Batch sizes of the target's generate calls from here on (they still run)."""
    calls = []
    original = answers_module.Pipeline.generate

    def counting(self, batch, **kw):
        calls.append(len(batch))
        return original(self, batch, **kw)

    monkeypatch.setattr(answers_module.Pipeline, "generate", counting)
    return calls


def test_answers_resume_after_an_interruption(tmp_path, tok, target, monkeypatch):
    """A run killed mid-file (a torn last line) resumes: the complete answers are kept, the rest
    generated, and the result equals an uninterrupted run."""
    pipe = Pipeline(target, tok)
    prompts = ["the quick brown fox", "def add(a, b):", "Once upon a time", "speculative decoding", "a small"]
    kwargs = dict(source="tiny", max_new_tokens=5, batch_size=2)
    full = generate_answers(pipe, prompts, cache_dir=tmp_path / "full", **kwargs)
    (path,) = (tmp_path / "full").glob("answers-*.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / path.name).write_text("".join(lines[:3]) + lines[3][:10])  # 3 complete answers and a torn one
    calls = count_generate_calls(monkeypatch)
    resumed = generate_answers(pipe, prompts, cache_dir=torn, **kwargs)
    assert [a.__dict__ for a in resumed] == [a.__dict__ for a in full]
    assert calls == [2]  # the 4th and 5th prompts: one batch, generated again
    assert (torn / path.name).read_text() == path.read_text()


def test_gzipped_answers_read_as_the_plain_file_and_are_never_cut(tmp_path):
    """The committed batches are gzipped: they read as their plain file does, and a damaged one is a clear
    error that leaves it as it was (the plain reader's torn-line repair would have emptied it)."""
    from specdec.training.answers import TargetAnswer, read_answers, write_answers

    rows = [TargetAnswer(prompt_ids=[1, 2 + i], answer_ids=[3, 4, i]) for i in range(3)]
    write_answers(tmp_path / "a.jsonl", rows)
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress((tmp_path / "a.jsonl").read_bytes()))
    assert read_answers(packed) == read_answers(tmp_path / "a.jsonl") == rows
    damaged = tmp_path / "b.jsonl.gz"
    damaged.write_bytes(packed.read_bytes()[:-12])
    with pytest.raises(InvalidArgumentError, match="not a gzipped answers JSONL"):
        read_answers(damaged)
    assert damaged.read_bytes() == packed.read_bytes()[:-12]


def test_user_turn_prefix_is_the_template_up_to_the_users_text(tok):
    assert tok.decode(user_turn_prefix(tok)) == "<|im_start|>user\n"
    bare = copy.deepcopy(tok)
    bare.chat_template = None
    with pytest.raises(InvalidArgumentError, match="chat template"):
        user_turn_prefix(bare)


def test_self_written_prompts_keep_finished_distinct_requests(tmp_path, tok, target, monkeypatch):
    """Only requests that ended their turn are kept, once each, in order."""
    pipe = Pipeline(target, tok)
    texts = [" ask me ", "cut off", "ask me", "", "another"]
    reasons = ["eos", "length", "eos", "eos", "eos"]
    seen_prompts = []

    def scripted(self, prompts, **kw):
        seen_prompts.extend(prompts)
        n = len(prompts)
        return SimpleNamespace(texts=texts[:n], finish_reasons=reasons[:n])

    monkeypatch.setattr(prompts_module.Pipeline, "generate", scripted)
    kept = self_written_prompts(pipe, 5, source="tiny", cache_dir=tmp_path)
    assert kept == ["ask me", "another"]
    assert seen_prompts == [user_turn_prefix(tok)] * 5


def test_self_written_prompts_are_seeded_cached_and_resume(tmp_path, tok, target, monkeypatch):
    talker = copy.deepcopy(target)  # ends its turn at about half the positions, so requests vary in length
    with torch.no_grad():
        talker.lm_head.weight[tok.eos_token_id] *= 40
    pipe = Pipeline(talker, tok)
    kwargs = dict(source="tiny", max_new_tokens=6, batch_size=2)
    first = self_written_prompts(pipe, 5, cache_dir=tmp_path / "a", **kwargs)
    assert first == self_written_prompts(pipe, 5, cache_dir=tmp_path / "b", **kwargs)  # same seed
    assert first and first != self_written_prompts(pipe, 5, cache_dir=tmp_path / "c", seed=7, **kwargs)
    (path,) = (tmp_path / "a").glob("prompts-*.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 5
    path.write_text("".join(lines[:3]) + lines[3][:4])  # killed while writing the 4th row
    calls = count_generate_calls(monkeypatch)
    assert self_written_prompts(pipe, 5, cache_dir=tmp_path / "a", **kwargs) == first
    assert calls == [2]  # rows 4 and 5, sampled again with their own seeds
    assert self_written_prompts(pipe, 5, cache_dir=tmp_path / "a", **kwargs) == first
    assert calls == [2]  # complete: read back, nothing generated


def test_data_answers_to_self_written_prompts(tmp_path, tiny_model_dir, capsys):
    from specdec.cli.main import main

    args = ["data", "answers", "--target", str(tiny_model_dir), "--prompts", "self", "--count", "6"]
    assert main([*args, "--max-new-tokens", "4", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    path = Path(next(line for line in out if "answer tokens" in line).split(": ")[-1])
    prompts = (tmp_path / "answers").glob("prompts-*.jsonl")
    assert path.is_file() and len(list(prompts)) == 1
    manifest = json.loads(Path(out[-1].removeprefix("manifest: ")).read_text())
    assert manifest["files"][0]["file"] == path.name
    assert manifest["files"][0]["answers"] == len(path.read_text().splitlines())
    assert manifest["settings"]["prompts"] == ["self"] and "machine" in manifest
    with pytest.raises(SystemExit):
        main([*args[:-1], "0", "--cache-dir", str(tmp_path)])
    assert "argument --count: must be an integer >= 1" in capsys.readouterr().err
    # Longer requests are another set of requests: cached under their own key, recorded in the manifest.
    assert main([*args, "--max-new-tokens", "4", "--request-tokens", "9", "--cache-dir", str(tmp_path)]) == 0
    last = Path(capsys.readouterr().out.splitlines()[-1].removeprefix("manifest: "))
    assert json.loads(last.read_text())["settings"]["request_tokens"] == 9
    assert last.parent == tmp_path / "answers"  # beside the caches, also when every request was dropped
    assert len(list((tmp_path / "answers").glob("prompts-*.jsonl"))) == 2
    with pytest.raises(SystemExit):
        main([*args, "--request-tokens", "0", "--cache-dir", str(tmp_path)])
    assert "argument --request-tokens: must be an integer >= 1" in capsys.readouterr().err
    # --batch-size also batches the request writing; rows keep their own seeds, so the requests (and the
    # cache key) do not depend on it, and a GPU run's cache resumes on the CPU.
    other = tmp_path / "other"
    settings = ["--max-new-tokens", "4", "--batch-size", "4", "--device", "cpu", "--cache-dir", str(other)]
    assert main([*args, *settings]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(Path(last.removeprefix("manifest: ")).read_text())["settings"]["device"] == "cpu"
    (prompts_file,) = (other / "answers").glob("prompts-*.jsonl")  # the same key as the batch-64 run's
    assert prompts_file.read_text() == (tmp_path / "answers" / prompts_file.name).read_text()


def test_data_answers_opener_steers_self_intents(tmp_path, tiny_model_dir, capsys, monkeypatch):
    """--opener replaces the built-in intents that steer self-written requests, and is recorded."""
    from specdec.cli.main import main

    steered = []

    def writer(pipe, count, *, openers, **kwargs):
        steered.append(tuple(openers))
        return [f"{openers[i % len(openers)]} text {i}" for i in range(count)]

    monkeypatch.setattr(prompts_module, "self_written_prompts", writer)
    args = ["data", "answers", "--target", str(tiny_model_dir), "--count", "4", "--max-new-tokens", "2"]
    steer = ["--opener", "Translate into English:", "--opener", "Summarize:"]
    assert main([*args, "--prompts", "self-intents", *steer, "--cache-dir", str(tmp_path)]) == 0
    assert steered == [("Translate into English:", "Summarize:")]
    manifest = Path(capsys.readouterr().out.splitlines()[-1].removeprefix("manifest: "))
    assert json.loads(manifest.read_text())["settings"]["opener"] == steer[1::2]
    assert main([*args, "--prompts", "self-intents", "--cache-dir", str(tmp_path)]) == 0
    assert steered[-1] == prompts_module.INTENT_OPENERS  # without --opener: the built-in intents
    assert main([*args, "--prompts", "self", *steer, "--cache-dir", str(tmp_path)]) == 2
    assert "needs --prompts self-intents" in capsys.readouterr().err
    assert main([*args, "--prompts", "self-intents", "--opener", " ", "--cache-dir", str(tmp_path)]) == 2
    assert "--opener must be non-empty" in capsys.readouterr().err


def test_answers_are_generated_shortest_first_and_returned_in_prompt_order(
    tmp_path, tok, target, monkeypatch
):
    """Within each chunk, prompts go shortest first (batches of similar length: less padding to attend
    over), so a stopped run still spans every length; results keep prompt order."""
    pipe = Pipeline(target, tok)
    prompts = ["a much longer prompt than the others, by far", "hi", "Once upon a time", "ok", "def f(x):"]
    seen = []
    original = answers_module.Pipeline.generate

    def recording(self, batch, **kw):
        seen.append([len(ids) for ids in batch])
        return original(self, batch, **kw)

    monkeypatch.setattr(answers_module.Pipeline, "generate", recording)
    monkeypatch.setattr(answers_module, "LENGTH_CHUNK", 3)  # chunks: prompts 0-2, then 3-4
    answers = generate_answers(
        pipe, prompts, source="tiny", max_new_tokens=4, cache_dir=tmp_path, batch_size=2
    )
    lengths = [n for batch in seen for n in batch]
    encoded = [len(pipe.encode(p, chat=True)) for p in prompts]
    assert lengths == sorted(encoded[:3]) + sorted(encoded[3:]) and [len(b) for b in seen] == [2, 2, 1]
    assert lengths != sorted(lengths)  # the longest prompt is in the first chunk
    assert [a.prompt_ids for a in answers] == [pipe.encode(p, chat=True) for p in prompts]


def test_self_written_prompts_follow_their_openers(tmp_path, tok, target, monkeypatch):
    """Row i starts from the user-turn prefix plus opener i mod k; the opener is part of the request, and
    a row that wrote nothing after its opener is dropped."""
    pipe = Pipeline(target, tok)
    openers = ("", "Translate", "Fix this code")
    texts = [" what is a cache?", " this into French: chat", "   ", "How?"]
    seen_prompts = []

    def scripted(self, prompts, **kw):
        seen_prompts.extend(prompts)
        return SimpleNamespace(texts=texts[: len(prompts)], finish_reasons=["eos"] * len(prompts))

    monkeypatch.setattr(prompts_module.Pipeline, "generate", scripted)
    kept = self_written_prompts(pipe, 4, source="tiny", cache_dir=tmp_path, openers=openers)
    assert kept == ["what is a cache?", "Translate this into French: chat", "How?"]
    prefix = user_turn_prefix(tok)
    assert seen_prompts == [
        prefix,
        prefix + tok.encode("Translate", add_special_tokens=False),
        prefix + tok.encode("Fix this code", add_special_tokens=False),
        prefix,
    ]
    plain = self_written_prompts(pipe, 4, source="tiny", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("prompts-*.jsonl"))) == 2  # openers are part of the cache key
    assert plain == ["what is a cache?", "this into French: chat", "How?"]


def test_passage_questions_ask_about_long_snippets_spread_through_each_document(tmp_path):
    from specdec.training.prompts import PASSAGE_QUESTIONS, load_prompts

    text = "".join(f"w{i:04d} " for i in range(4000))  # 24,000 characters, each word unique
    (tmp_path / "docs.jsonl").write_text(json.dumps({"text": text}) + "\n")
    prompts = load_prompts(f"passage-question:{tmp_path / 'docs.jsonl'}", 8, snippet_chars=2000)
    passages = [p.rpartition("\n\n")[0] for p in prompts]
    assert [p.rpartition("\n\n")[2] for p in prompts] == [*PASSAGE_QUESTIONS, *PASSAGE_QUESTIONS][:8]
    assert all(1990 <= len(p) <= 2000 and p in text for p in passages)
    assert passages[0].startswith("w0000") and passages[-1].startswith("w3500")  # every eighth of the text
    with pytest.raises(InvalidArgumentError, match="snippet_chars"):
        load_prompts(f"summarize:{tmp_path / 'docs.jsonl'}", 8, snippet_chars=0)


def test_repeated_prompts_across_answer_files_are_kept_once():
    from specdec.training.answers import TargetAnswer, distinct_answers

    a, b, c = TargetAnswer([1, 2], [3]), TargetAnswer([1, 2], [4]), TargetAnswer([2, 1], [3])
    assert distinct_answers([a, c, b, a]) == [a, c]


def test_a_draft_checkpoint_of_the_older_schema_still_resumes(tmp_path):
    """train_draft's checkpoints before 2026-11-25 hold only step, optimiser and schedule."""
    from specdec.training.checkpoints import TRAINER_STATE_FILE, load_trainer_state

    weights = [torch.nn.Parameter(torch.zeros(2))]
    optimizer = torch.optim.AdamW(weights, lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    old = {"step": 7, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
    torch.save(old, tmp_path / TRAINER_STATE_FILE)
    assert load_trainer_state(tmp_path, optimizer, scheduler) == (7, None, 0)
