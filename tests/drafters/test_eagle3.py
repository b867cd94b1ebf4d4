"""The EAGLE-3 drafter: its first guess reads the target's features, later ones its own, exactly as the
training's unrolled passes compute them; and after any run of partial acceptances its cache holds what
a drafter started afresh on the settled text holds (drafted pairs rolled back, the target's in)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from specdec import make_drafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.drafters.ragged_cache import CATCH_UP_SPLIT, catch_up_groups
from specdec.engine import Engine
from specdec.engine.kernels import packing_supported
from specdec.errors import InvalidArgumentError
from specdec.models.eagle3_layout import save_head
from specdec.models.surgery import Int8Linear, reduced_precision_copy
from specdec.training.eagle3 import unrolled_logits
from tiny import (
    chains_against_fresh,
    fresh_chain,
    make_eagle3,
    make_eagle3_head,
    make_llama,
    make_tokenizer,
    tree_paths,
)

TOK = make_tokenizer()
TARGET = make_llama(len(TOK), seed=0, layers=4)
PROMPT = [5, 9, 14, 22, 5, 9, 14, 30, 31, 5, 9, 14]


def unrolled_passes(head, embeddings, sequence: list[int], depth: int) -> list[torch.Tensor]:
    """Training's unrolled passes of ``head`` over ``sequence`` with the target's hidden states: pass j at
    pair i guesses token i + 2 + j after j guesses of the head's own (here: the sequence's tokens)."""
    tokens = torch.tensor([sequence])
    with torch.no_grad():
        hidden = TARGET(tokens, output_hidden_states=True).hidden_states
        batch = {
            "tokens": tokens,
            "valid": torch.ones_like(tokens, dtype=torch.bool),
            "hidden": dict(enumerate(hidden)),
        }
        return unrolled_logits(head, embeddings, batch, depth)


def test_the_chain_is_the_training_time_test_unrolled():
    drafter = make_eagle3(TARGET)
    guesses = fresh_chain(drafter, TARGET, PROMPT)
    assert len(guesses) == 3
    passes = unrolled_passes(drafter.head, drafter.embeddings, PROMPT + guesses, 3)
    pair = len(PROMPT) - 2  # (feature before the pending token, the pending token)
    unrolled = [int(drafter.head.draft_ids[p[0, pair].argmax()]) for p in passes]
    assert unrolled == guesses


class Forgetful(Eagle3Drafter):
    """Negative control: never rolls its drafted pairs back."""

    def update(self, feedback):
        self._fed = torch.zeros_like(self._fed)
        super().update(feedback)


def test_after_each_step_the_cache_holds_the_settled_text():
    same, _ = chains_against_fresh(lambda: make_eagle3(TARGET, seed=1), TARGET, PROMPT)
    assert all(same)


def test_negative_control_a_drafter_that_keeps_its_drafted_pairs_is_caught():
    base = make_eagle3(TARGET, seed=1)
    same, _ = chains_against_fresh(lambda: Forgetful(base.head, base.embeddings), TARGET, PROMPT)
    assert not all(same)


def test_the_factory_reads_precision_and_tree_prefixes_in_any_order(tmp_path):
    folder = save_head(
        make_eagle3_head(TARGET), tmp_path / "head", {"name_or_path": "tiny", "architectures": []}
    )
    fp32 = make_drafter(f"eagle3:{folder}", TARGET, TOK)
    int8 = make_drafter(f"int8:eagle3:{folder}", TARGET, TOK)
    bf16 = make_drafter(f"tree-2:bf16:eagle3:{folder}", TARGET, TOK)
    same = make_drafter(f"bf16:tree-2:eagle3:{folder}", TARGET, TOK)
    packed = all(type(m) is not nn.Linear for m in fp32.head.modules())
    assert packed == packing_supported(make_eagle3_head(TARGET))  # prepacked wherever oneDNN can
    assert any(type(m) is Int8Linear for m in int8.head.modules()) and int8.tree_width == 1
    assert bf16.head.dtype == same.head.dtype == torch.bfloat16 and bf16.tree_width == same.tree_width == 2
    assert fresh_chain(int8, TARGET, PROMPT) == fresh_chain(
        fp32, TARGET, PROMPT
    )  # decided choices survive int8
    for bad in ("tree-1:eagle3:", "int8:bf16:eagle3:", "tree-2:tree-3:eagle3:", "wide:eagle3:"):
        with pytest.raises(InvalidArgumentError, match=r"expected \[tree-K:"):
            make_drafter(f"{bad}{folder}", TARGET, TOK)


def test_an_int8_head_keeps_the_fusion_of_the_targets_states_in_full_precision(tmp_path):
    """fc reads the target's raw hidden states, whose few huge channels would leave every other channel a
    handful of int8 levels under one per-call scale; the negative control quantises it too."""
    head = make_eagle3_head(TARGET)
    kept, control = reduced_precision_copy(head, "int8", keep=("fc",)), reduced_precision_copy(head, "int8")
    assert type(kept.fc) is nn.Linear and type(control.fc) is Int8Linear
    assert (
        sum(type(m) is Int8Linear for m in kept.modules())
        == sum(type(m) is Int8Linear for m in control.modules()) - 1
    )  # every other linear is int8
    torch.manual_seed(0)
    plain = {h: torch.randn(1, 16, TARGET.config.hidden_size) for h in head.aux_layers}
    massive = {h: x.clone() for h, x in plain.items()}
    massive[head.aux_layers[0]][..., 3] = 400.0  # a massive activation, as at a real target's first token
    with torch.no_grad():
        for hidden in (plain, massive):
            assert torch.equal(kept.fuse(hidden), head.fuse(hidden))
        error = {
            name: (control.fuse(h) - head.fuse(h)).norm()
            for name, h in (("plain", plain), ("massive", massive))
        }
    assert error["massive"] > 10 * error["plain"]  # one huge channel coarsens every other channel's int8 step
    folder = save_head(head, tmp_path / "head", {"name_or_path": "tiny", "architectures": []})
    built = make_drafter(f"int8:eagle3:{folder}", TARGET, TOK)
    assert type(built.head.fc) is not Int8Linear  # what `int8:eagle3:` builds


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 400), max_size=40))
def test_catch_up_bands_cover_every_row_once_without_padding_short_queues_to_long_ones(lengths):
    counts = torch.tensor(lengths, dtype=torch.long)
    groups = catch_up_groups(counts)
    assert sorted(torch.cat(groups).tolist()) == list(range(len(lengths)))
    if not lengths or max(lengths) <= CATCH_UP_SPLIT:
        assert len(groups) == 1  # short queues: one call, whatever their spread
        return
    for group in groups:
        assert all(2 * int(counts[row]) >= int(counts[group].max()) for row in group)


def test_a_banded_catch_up_computes_what_one_call_over_the_padded_batch_computes(monkeypatch):
    """Prompts of 150, 4 and 90 tokens: caught up in bands (150 and 90 together, 4 alone) or in one call
    padded to 150, the logits and features after each row's last pair and the cached pairs agree."""
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, len(TOK), (n,), generator=g).tolist() for n in (150, 4, 90)]

    def caught_up(split):
        monkeypatch.setattr("specdec.drafters.ragged_cache.CATCH_UP_SPLIT", split)
        drafter = make_eagle3(TARGET, seed=1)
        engine = Engine(TARGET)
        drafter.begin(
            prompts, engine.start(prompts, extra_slots=8, hidden_layers=drafter.target_hidden_layers)
        )  # the prompts are caught up at admission
        return drafter._tail_logits, drafter._tail_feature, drafter.cache.lengths > 0, drafter.cache

    banded, whole = caught_up(CATCH_UP_SPLIT), caught_up(10**6)
    for ours, theirs in zip(banded[:2], whole[:2], strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
    assert torch.equal(banded[2], whole[2])
    cache, reference = banded[3], whole[3]
    assert cache.lengths.tolist() == reference.lengths.tolist() == [149, 3, 89]
    for row, n in enumerate(cache.lengths.tolist()):
        torch.testing.assert_close(cache.keys[row, :, :n], reference.keys[row, :, :n], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(
            cache.values[row, :, :n], reference.values[row, :, :n], rtol=1e-4, atol=1e-4
        )


def test_prompts_enter_the_head_at_admission_so_a_proposal_runs_only_its_draft_positions():
    """A 150-token prompt's pairs pass through the head with the prefill; the first proposal's calls are
    one position wide (its drafted guesses), so the γ policy times drafting, not the prompt: timed with
    the prompt, one draft position on a RAG prompt cost a target step and the head was switched off for
    good (2026-11-26 results page)."""
    from specdec.sampling import KeyedDraws, SamplingConfig

    prompt = torch.randint(3, len(TOK), (150,), generator=torch.Generator().manual_seed(5)).tolist()
    drafter, engine = make_eagle3(TARGET, seed=1), Engine(TARGET)
    widths: list[int] = []
    drafter.head.register_forward_hook(lambda module, args, out: widths.append(args[0].shape[1]))
    drafter.begin([prompt], engine.start([prompt], extra_slots=8, hidden_layers=drafter.target_hidden_layers))
    assert widths == [149] and drafter.cache.lengths.tolist() == [149]
    before = fresh_chain(make_eagle3(TARGET, seed=1), TARGET, prompt)  # another head: no hook
    widths.clear()
    chain = drafter.propose(3, SamplingConfig(), KeyedDraws([0], [0]))
    assert widths == [1, 1]  # guesses 2 and 3; the first comes from the tail left by the admission
    assert chain.tokens[0].tolist() == before


def dynamic(seed: int = 1, width: int = 2) -> Eagle3Drafter:
    base = make_eagle3(TARGET, seed=seed)
    return Eagle3Drafter(base.head, base.embeddings, tree_width=width, dynamic=True)


def grown_trees(monkeypatch, drafter, prompts, gamma):
    """The DraftTree (with scores) ``drafter`` grows on a fresh batch of ``prompts``."""
    from specdec.drafters import eagle3
    from specdec.sampling import KeyedDraws, SamplingConfig

    grown = []
    real = eagle3.grow_tree
    monkeypatch.setattr(eagle3, "grow_tree", lambda *args: grown.append(real(*args)) or grown[-1])
    engine = Engine(TARGET)
    prefill = engine.start(prompts, extra_slots=8, hidden_layers=drafter.target_hidden_layers)
    drafter.begin(prompts, prefill)
    draft = drafter.propose(
        gamma, SamplingConfig(), KeyedDraws(list(range(len(prompts))), [0] * len(prompts))
    )
    assert draft.parents == grown[-1].parents and torch.equal(draft.tokens, grown[-1].tokens)
    return grown[-1]


def unrolled_path_probability(head, embeddings, prompt: list[int], path: list[int]) -> float:
    """The head's probability of ``path`` after ``prompt``, from training's unrolled passes: pass j at
    the pending token's pair guesses the (j + 1)-th token after j guesses (here: the path's)."""
    passes = unrolled_passes(head, embeddings, prompt + path, len(path))
    pair, probability = len(prompt) - 2, 1.0
    for j, token in enumerate(path):
        probability *= float(head.target_logits(passes[j][0, pair]).float().softmax(-1)[token])
    return probability


@pytest.mark.parametrize("control", [False, True])
def test_a_dynamic_trees_nodes_are_scored_by_the_heads_own_path_probabilities(monkeypatch, control):
    """Each node's score is the product of the head's probabilities along its path, as the training-time
    unrolled passes compute them, on two rows of different lengths (a ragged cache): every node saw the
    settled pairs and its own drafted ancestors only. Negative control: a mask that lets a node see every
    drafted pair (its siblings and cousins too) is caught."""
    from specdec.drafters.ragged_cache import RaggedCache

    if control:
        real = RaggedCache.tree_mask

        def see_all(cache, settled, ancestors):
            return torch.ones_like(real(cache, settled, ancestors))

        monkeypatch.setattr(RaggedCache, "tree_mask", see_all)
    drafter = dynamic(width=6)  # 18 nodes of a pool of 36: some at every depth
    prompts = [PROMPT, PROMPT[3:9]]
    tree = grown_trees(monkeypatch, drafter, prompts, 3)
    paths = tree_paths(tree.parents)
    assert max(map(len, paths)) == 3  # depth-3 nodes exist
    matches = []
    for row, prompt in enumerate(prompts):
        for node, nodes in enumerate(paths):
            path = [int(tree.tokens[row, i]) for i in nodes]
            expected = unrolled_path_probability(drafter.head, drafter.embeddings, prompt, path)
            matches.append(abs(float(tree.scores[row, node]) - expected) <= 1e-4 * expected + 1e-7)
    assert all(matches) != control


def test_after_each_step_a_dynamic_tree_is_the_one_a_fresh_drafter_grows():
    """Accepted paths through any branch leave the head's cache holding the settled text (drafted pairs
    of every depth rolled back): each step's whole tree equals a fresh drafter's on that text."""

    def tree(draft):
        return draft.parents, draft.tokens.tolist()

    same, accepted = chains_against_fresh(lambda: dynamic(seed=2), TARGET, PROMPT, view=tree)
    assert all(same) and accepted > 0
    forgetful = dynamic()
    same, _ = chains_against_fresh(
        lambda: Forgetful(forgetful.head, forgetful.embeddings, tree_width=2, dynamic=True),
        TARGET,
        PROMPT,
        view=tree,
    )
    assert not all(same)  # negative control: drafted pairs left in the cache change later trees


def test_the_factory_reads_dynamic_trees(tmp_path):
    folder = save_head(
        make_eagle3_head(TARGET), tmp_path / "head", {"name_or_path": "tiny", "architectures": []}
    )
    drafter = make_drafter(f"int8:dtree-3:eagle3:{folder}", TARGET, TOK)
    assert drafter.dynamic and drafter.tree_width == 3 and drafter.proposes_trees
    assert not make_drafter(f"tree-3:eagle3:{folder}", TARGET, TOK).dynamic
    for bad in ("dtree-1:eagle3:", "dtree-2:tree-2:eagle3:", "dtree-x:eagle3:"):
        with pytest.raises(InvalidArgumentError, match=r"expected \[tree-K:\|dtree-K:\]"):
            make_drafter(f"{bad}{folder}", TARGET, TOK)
    with pytest.raises(InvalidArgumentError, match="dynamic tree needs tree_width >= 2"):
        Eagle3Drafter(drafter.head, drafter.embeddings, dynamic=True)


def test_an_int8_head_is_refused_for_a_target_off_the_cpu(tmp_path):
    folder = save_head(
        make_eagle3_head(TARGET), tmp_path / "head", {"name_or_path": "tiny", "architectures": []}
    )
    # a target on the meta device stands for a GPU target: off the CPU, no weights needed
    elsewhere = make_llama(len(TOK), seed=0, layers=4).to("meta")
    with pytest.raises(InvalidArgumentError, match="int8 head runs on CPU only"):
        make_drafter(f"int8:eagle3:{folder}", elsewhere, TOK)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("shape", [{}, {"tree_width": 2}, {"tree_width": 2, "dynamic": True}])
def test_the_head_drafts_on_the_targets_gpu_losslessly(shape):
    from specdec.decoders import SpeculativeSampling
    from specdec.pipeline import Pipeline

    target = make_llama(len(TOK), seed=0, layers=4).to("cuda")
    base = make_eagle3(TARGET, seed=1)
    drafter = Eagle3Drafter(base.head, target.get_input_embeddings().weight, **shape)
    assert next(drafter.head.parameters()).device.type == "cuda"
    prompts = [PROMPT, PROMPT[2:7]]
    plain = Pipeline(target, TOK).generate(prompts, max_new_tokens=16).token_ids
    pipe = Pipeline(target, TOK, drafter=drafter)
    assert pipe.generate(prompts, method=SpeculativeSampling(3), max_new_tokens=16).token_ids == plain
