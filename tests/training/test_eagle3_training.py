"""`train eagle3`: the training-time test learns to guess the target's next tokens at every depth, resumes
exactly, writes heads in the speculators layout that the ``eagle3:`` drafter loads, and the trained head
gets drafts accepted, losslessly."""

import itertools
import json
from collections import Counter

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from specdec.cli.main import main
from specdec.decoders import PlainDecoding, Request, SpeculativeSampling, StopCriteria
from specdec.drafters import make_drafter
from specdec.engine import Engine
from specdec.models.draft_vocab import write_vocab_file
from specdec.models.eagle3_layout import load_head
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, row_keys
from specdec.training.answers import generate_answers
from specdec.training.eagle3 import Eagle3TrainConfig, train_eagle3
from specdec.training.primary_cache import CacheSpec, build_primary_cache, micro_batches
from tiny import chain_of, chains_against_fresh, make_eagle3_head, make_llama, make_tokenizer

PROMPTS = [
    f"{a} {b}" for a in ("the quick", "def add(a, b):", "Once upon", "a small model") for b in ("fox", "cat")
]
SAMPLED = SamplingConfig(temperature=1.0, top_k=20)
VERIFIER = {"name_or_path": "tiny", "architectures": ["LlamaForCausalLM"]}


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def target(tok):
    return make_llama(len(tok), seed=0, layers=4)


@pytest.fixture(scope="module")
def answers(tmp_path_factory, tok, target):
    pipe = Pipeline(target, tok)
    return generate_answers(
        pipe, PROMPTS * 4, source="tiny4", max_new_tokens=24, cache_dir=tmp_path_factory.mktemp("a")
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory, target, answers):
    spec = CacheSpec("tiny4", (1, 2, 3), top_k=8, max_len=64)
    return build_primary_cache(
        target, answers, tmp_path_factory.mktemp("cache"), spec, shard_size=16, batch_size=8
    )


def config(tmp_path, **overrides) -> Eagle3TrainConfig:
    settings = {"steps": 60, "batch_size": 8, "ttt_steps": 3, "lr": 3e-3, "warmup_steps": 5}
    settings |= {"eval_every": 20, "eval_sequences": 4, "save_every": 20, "heldout_fraction": 0.1}
    return Eagle3TrainConfig(output_dir=str(tmp_path / "run"), **(settings | overrides))


def embeddings(target):
    return target.get_input_embeddings().weight


def test_the_head_learns_every_depth_and_keeps_the_best(tmp_path, target, cache):
    best = train_eagle3(make_eagle3_head(target), embeddings(target), cache, config(tmp_path), VERIFIER)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[0]["step"] == 0 and log[0]["best_step"] == 0  # the starting head's scores come first
    assert log[-1]["accepted_per_chain"] > log[0]["accepted_per_chain"]
    first, last = log[1]["loss_per_pass"], log[-1]["loss_per_pass"]
    assert all(b < 0.7 * a for a, b in zip(first, last, strict=True))  # every unrolled depth learned
    evals = [r for r in log if "accepted_per_chain" in r]
    assert max(r["accepted_per_chain"] for r in evals) > 0.5
    saved = json.loads((best / "config.json").read_text())
    assert saved["speculators_config"]["proposal_methods"][0]["speculative_tokens"] == 3
    assert load_head(best).aux_layers == (1, 2, 3)


def test_resume_reproduces_an_uninterrupted_run(tmp_path, target, cache):
    straight = train_eagle3(
        make_eagle3_head(target), embeddings(target), cache, config(tmp_path, steps=20), VERIFIER
    )
    resumed_dir = tmp_path / "two"
    train_eagle3(
        make_eagle3_head(target),
        embeddings(target),
        cache,
        config(resumed_dir, steps=20, save_every=10),
        VERIFIER,
    )
    # a run stopped at step 10 and resumed: drop its later checkpoints and go on
    import shutil

    shutil.rmtree(resumed_dir / "run" / "checkpoint-20")
    (resumed_dir / "run" / "log.jsonl").write_text(
        "".join(line + "\n" for line in (resumed_dir / "run" / "log.jsonl").read_text().splitlines()[:11])
    )
    train_eagle3(
        make_eagle3_head(target),
        embeddings(target),
        cache,
        config(resumed_dir, steps=20, resume=True),
        VERIFIER,
    )
    a = load_head(straight.parent / "checkpoint-20").state_dict()
    b = load_head(resumed_dir / "run" / "checkpoint-20").state_dict()
    assert all(torch.allclose(a[k].float(), b[k].float(), atol=1e-6) for k in a)

    # a time limit ends the run on a checkpoint after the step that crosses it; resume finishes it
    timed = tmp_path / "timed"
    head, vectors = make_eagle3_head(target), embeddings(target)
    train_eagle3(head, vectors, cache, config(timed, steps=20, time_limit_s=1e-9), VERIFIER)
    assert [p.name for p in (timed / "run").glob("checkpoint-*")] == ["checkpoint-1"]
    train_eagle3(make_eagle3_head(target), vectors, cache, config(timed, steps=20, resume=True), VERIFIER)
    c = load_head(timed / "run" / "checkpoint-20").state_dict()
    assert all(torch.allclose(a[k].float(), c[k].float(), atol=1e-6) for k in a)


@given(st.lists(st.integers(1, 100), min_size=1, max_size=24), st.one_of(st.none(), st.integers(1, 400)))
def test_micro_batches_cover_every_row_once_within_the_token_limit(lengths, limit):
    groups = micro_batches(lengths, limit)
    assert sorted(r for g in groups for r in g) == list(range(len(lengths)))
    if limit is None:
        assert groups == [list(range(len(lengths)))]
        return
    order = [lengths[r] for g in groups for r in g]
    assert order == sorted(order)  # shortest first: each group pads to little more than its rows
    assert all(len(g) == 1 or len(g) * max(lengths[r] for r in g) <= limit for g in groups)
    # greedy: a group was closed only because the next row would not fit
    assert all((len(a) + 1) * lengths[b[0]] > limit for a, b in itertools.pairwise(groups))


def test_micro_batches_take_the_same_steps_as_whole_batches(tmp_path, target, cache):
    """Gradients summed over micro-batches, each pass's loss over the whole step's positions: the same
    weights as one padded batch (a per-micro-batch mean would weigh short sequences' tokens more)."""
    picks = list(range(8))
    assert len(micro_batches([cache.length(i) for i in picks], 96)) > 2  # the limit does split these
    runs = {}
    for name, limit in (("whole", None), ("micro", 96)):
        folder = tmp_path / name
        train_eagle3(
            make_eagle3_head(target),
            embeddings(target),
            cache,
            config(folder, steps=4, eval_every=4, save_every=4, max_batch_tokens=limit),
            VERIFIER,
        )
        runs[name] = load_head(folder / "run" / "checkpoint-4").state_dict()
    assert all(torch.allclose(runs["whole"][k], runs["micro"][k], atol=1e-5) for k in runs["whole"])
    start = make_eagle3_head(target).state_dict()
    assert any(not torch.equal(runs["whole"][k], start[k]) for k in start)  # the steps did move it


def test_the_trained_head_drafts_losslessly_with_accepted_tokens(tmp_path, tok, target, answers, cache):
    best = train_eagle3(make_eagle3_head(target), embeddings(target), cache, config(tmp_path), VERIFIER)
    prompts = [a.prompt_ids for a in answers[:4]]  # chat requests, as it was trained on
    specs = ("eagle3:", "tree-2:eagle3:", "int8:eagle3:", "bf16:tree-2:eagle3:", "dtree-2:eagle3:")
    for spec, sampling in itertools.product(specs, (SamplingConfig(), SAMPLED)):
        drafter = make_drafter(f"{spec}{best}", target, tok)
        request = Request(prompts, sampling, StopCriteria(24), row_keys(range(4), 1))
        outputs = []
        for method, d in ((SpeculativeSampling(3), drafter), (PlainDecoding(), None)):
            loop = method.loop(Engine(target), d, request)
            while loop.active:
                loop.step()
            outputs.append(loop.result())
        assert outputs[0].tokens == outputs[1].tokens
        assert sum(map(sum, outputs[0].from_draft)) > 0  # drafts were accepted: the test means something

    # Through partial acceptances (a kept sibling too). Not int8: its activations are quantised with one scale
    # per call, so a fresh drafter catching up the whole text in one call and the running one feeding a few
    # pairs per step round differently by design; the cache logic is the same at every precision.
    def whole_tree(draft):
        return draft.parents, draft.tokens.tolist()

    for spec, view in (("eagle3:", chain_of), ("tree-2:eagle3:", chain_of), ("dtree-2:eagle3:", whole_tree)):
        same, accepted = chains_against_fresh(
            lambda spec=spec: make_drafter(f"{spec}{best}", target, tok), target, prompts[0], view=view
        )
        assert all(same) and accepted > 0  # the cache holds the settled text


def test_the_cli_trains_a_head_for_a_target_folder(tmp_path, tiny_model_dir, tok):
    two_layers = make_llama(len(tok), seed=0)  # the model saved in tiny_model_dir
    answers = generate_answers(
        Pipeline(two_layers, tok), PROMPTS, source="tiny2", max_new_tokens=12, cache_dir=tmp_path
    )
    build_primary_cache(
        two_layers, answers, tmp_path / "cache", CacheSpec("t", (0, 1, 2), 8, 64), shard_size=8
    )
    main(
        ["train", "eagle3", "--target", str(tiny_model_dir), "--cache", str(tmp_path / "cache"),
         "--output", str(tmp_path / "run"), "--aux-layers", "0,1,2", "--draft-vocab", "full", "--steps", "4",
         "--eval-every", "2", "--save-every", "2", "--eval-sequences", "2", "--heldout-fraction", "0.2",
         "--bf16", "off"]
    )  # fmt: skip
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["eagle_aux_hidden_state_layer_ids"] == [0, 1, 2] and config["norm_before_residual"] is False
    assert config["draft_vocab_size"] == len(tok)
    # Continued with a wider MLP: the widened head drafts as the one it came from (the same held-out score
    # at step 0), and is saved with its new width.
    width = 3 * config["transformer_layer_config"]["intermediate_size"]
    main(
        ["train", "eagle3", "--target", str(tiny_model_dir), "--cache", str(tmp_path / "cache"),
         "--output", str(tmp_path / "wide"), "--init-from", str(tmp_path / "run" / "best"),
         "--intermediate-size", str(width), "--steps", "2", "--eval-every", "2", "--save-every", "2",
         "--eval-sequences", "2", "--heldout-fraction", "0.2", "--bf16", "off"]
    )  # fmt: skip
    wide = json.loads((tmp_path / "wide" / "checkpoint-2" / "config.json").read_text())
    assert wide["transformer_layer_config"]["intermediate_size"] == width
    first = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    again = json.loads((tmp_path / "wide" / "log.jsonl").read_text().splitlines()[0])
    best = max(r["accepted_per_chain"] for r in first if "accepted_per_chain" in r)
    assert again["step"] == 0 and again["accepted_per_chain"] == pytest.approx(best)


def test_the_cli_widens_a_continued_heads_vocabulary(tmp_path, tiny_model_dir, tok):
    """`--init-from` with a wider `--draft-vocab`: the continued head drafts over the union of its own tokens
    and the N most frequent ones, is saved with it, and is scored at step 0 before training moves it."""
    two_layers = make_llama(len(tok), seed=0)
    answers = generate_answers(
        Pipeline(two_layers, tok), PROMPTS, source="tiny2", max_new_tokens=12, cache_dir=tmp_path
    )
    build_primary_cache(
        two_layers, answers, tmp_path / "cache", CacheSpec("t", (0, 1, 2), 8, 64), shard_size=8
    )
    ranked = Counter({token: len(tok) - token for token in range(len(tok))})  # token 0 most frequent
    (tmp_path / "vocab").mkdir()
    write_vocab_file(tmp_path / "vocab", ranked, {"answers": []})
    common = ["--target", str(tiny_model_dir), "--cache", str(tmp_path / "cache"), "--steps", "2",
              "--eval-every", "2", "--save-every", "2", "--eval-sequences", "2", "--heldout-fraction", "0.2",
              "--bf16", "off"]  # fmt: skip
    vocab = str(tmp_path / "vocab")
    main(["train", "eagle3", *common, "--output", str(tmp_path / "run"), "--aux-layers", "0,1,2",
          "--draft-vocab", f"{vocab}:40", "--time-limit", "3600"])  # fmt: skip
    start = load_head(tmp_path / "run" / "best")
    assert json.loads((tmp_path / "run" / "train_config.json").read_text())["time_limit_s"] == 3600
    main(["train", "eagle3", *common, "--output", str(tmp_path / "wide"), "--init-from",
          str(tmp_path / "run" / "best"), "--draft-vocab", f"{vocab}:120"])  # fmt: skip
    wide = load_head(tmp_path / "wide" / "checkpoint-2")
    expected = torch.unique(torch.cat([torch.arange(120), start.draft_ids]))
    assert len(start.d2t) < 120 and torch.equal(wide.draft_ids, expected)
    log = [json.loads(line) for line in (tmp_path / "wide" / "log.jsonl").read_text().splitlines()]
    assert log[0]["step"] == 0 and "accepted_per_chain" in log[0]
    config = json.loads((tmp_path / "wide" / "train_config.json").read_text())
    assert config["extra"]["draft_vocab_size"] == len(expected)


def test_a_continued_head_that_does_not_improve_keeps_its_start_as_the_best(tmp_path, target, cache):
    """Continued with a learning rate of 0, no checkpoint beats the starting head, so the
    best folder holds the starting weights (step 0), scored on the same held-out sequences."""
    start = train_eagle3(make_eagle3_head(target), embeddings(target), cache, config(tmp_path), VERIFIER)
    again = tmp_path / "again"
    best = train_eagle3(
        load_head(start), embeddings(target), cache, config(again, steps=20, lr=0.0), VERIFIER
    )
    log = [json.loads(line) for line in (again / "run" / "log.jsonl").read_text().splitlines()]
    scores = [r["accepted_per_chain"] for r in log if "accepted_per_chain" in r]
    assert log[0]["step"] == 0 and scores[0] == max(scores)
    assert log[-1]["best_step"] == 0
    a, b = load_head(start).state_dict(), load_head(best).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
