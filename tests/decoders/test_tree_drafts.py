"""A model drafter's top-k tree (its chain plus the next most likely tokens as leaves) verified by SpS:
lossless greedy and seeded-sampled (coupled walk), greedy-exact under recursive rejection sampling,
and a kept sibling leaves the drafter's cache in step (the next steps still decode exactly)."""

import pytest
from decoding_cases import PROMPTS

from specdec.decoders import BiLD, SpeculativeSampling
from specdec.decoders.gamma import FixedGamma
from specdec.drafters import ModelDrafter
from specdec.drafters.factory import make_drafter
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from tiny import make_llama

SAMPLING = dict(temperature=1.0, top_p=0.9, seed=1234)


@pytest.fixture(scope="module")
def plain(cached):
    return {
        "greedy": cached.plain(PROMPTS, max_new_tokens=24),
        "sampled": cached.plain(PROMPTS, max_new_tokens=24, **SAMPLING),
    }


@pytest.mark.parametrize("gamma", [1, 3, "adaptive"])
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("draft", ["independent", "truncated"])
def test_top_k_trees_are_lossless(cached, tok, plain, draft, width, gamma):
    model = make_llama(len(tok), seed=7) if draft == "independent" else None
    if model is None:
        from specdec.models.surgery import truncated_copy

        model = truncated_copy(cached.target, 2)
    pipe = Pipeline(cached.target, tok, drafter=ModelDrafter(model, tok, tree_width=width))
    method = SpeculativeSampling(gamma)
    greedy = pipe.generate(PROMPTS, method=method, max_new_tokens=24)
    assert greedy.token_ids == plain["greedy"].token_ids
    assert (
        pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING).token_ids
        == plain["sampled"].token_ids
    )
    rejection = SpeculativeSampling(gamma, "rejection")
    assert pipe.generate(PROMPTS, method=rejection, max_new_tokens=24).token_ids == plain["greedy"].token_ids


class Alternating(FixedGamma):
    """Verifies the whole tree one step, its chain alone the next."""

    def next_gamma(self, batch_size: int = 1) -> int:
        self.siblings = not self.siblings
        return self.gamma


@pytest.mark.parametrize("verify", ["coupled", "rejection"])
def test_a_tree_verified_whole_or_by_its_chain_alone_step_by_step_is_lossless(cached, tok, plain, verify):
    """The γ policy may verify a chain-first tree's chain alone (its siblings cost every row a block
    column at many rows); the drafter's state stays in step whichever the last step verified."""
    from specdec.models.surgery import truncated_copy

    drafter = ModelDrafter(truncated_copy(cached.target, 2), tok, tree_width=3)
    pipe = Pipeline(cached.target, tok, drafter=drafter)
    method = SpeculativeSampling(Alternating(3), verify)
    assert pipe.generate(PROMPTS, method=method, max_new_tokens=24).token_ids == plain["greedy"].token_ids
    if verify == "coupled":
        sampled = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING)
        assert sampled.token_ids == plain["sampled"].token_ids


def test_siblings_get_accepted_and_count(cached, tok, plain):
    """The truncated copy often misses the target's top-1 but has it among its top 4: with a tree
    more tokens per target call than with its chain, same output."""
    from specdec.models.surgery import truncated_copy

    model = truncated_copy(cached.target, 2)
    runs = {}
    for width in (1, 4):
        pipe = Pipeline(cached.target, tok, drafter=ModelDrafter(model, tok, tree_width=width))
        runs[width] = pipe.generate(PROMPTS, method=SpeculativeSampling(3), max_new_tokens=24)
        assert runs[width].token_ids == plain["greedy"].token_ids
    assert runs[4].stats.accepted_tokens > runs[1].stats.accepted_tokens


def test_tree_specs_and_bild(cached, tok, tiny_model_dir):
    drafter = make_drafter(f"tree-3:{tiny_model_dir}", cached.target, tok)
    assert drafter.tree_width == 3 and drafter.proposes_trees
    with pytest.raises(InvalidArgumentError, match="tree-K"):
        make_drafter(f"tree-1:{tiny_model_dir}", cached.target, tok)
    with pytest.raises(InvalidArgumentError, match="tree_width"):
        ModelDrafter(cached.target, tok, tree_width=0)
    pipe = Pipeline(cached.target, tok, drafter=drafter)
    with pytest.raises(InvalidArgumentError, match="trees"):
        pipe.generate(PROMPTS, method=BiLD(0.3, 0.0, 4), max_new_tokens=4)


@pytest.mark.parametrize(("width", "dynamic"), [(2, False), (3, False), (2, True), (3, True)])
def test_eagle3_trees_are_lossless(cached, tok, plain, width, dynamic):
    """Top-k trees and dynamic ones (a shape per step, shared by rows of different lengths): greedy and
    seeded-sampled output equal plain decoding's, under the coupled walk and recursive rejection."""
    from specdec.drafters.eagle3 import Eagle3Drafter
    from tiny import make_eagle3

    base = make_eagle3(cached.target)
    drafter = Eagle3Drafter(base.head, base.embeddings, tree_width=width, dynamic=dynamic)
    pipe = Pipeline(cached.target, tok, drafter=drafter)
    for gamma in (3, "adaptive"):
        method = SpeculativeSampling(gamma)
        assert pipe.generate(PROMPTS, method=method, max_new_tokens=24).token_ids == plain["greedy"].token_ids
        sampled = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING)
        assert sampled.token_ids == plain["sampled"].token_ids
    rejection = SpeculativeSampling(3, "rejection")
    assert pipe.generate(PROMPTS, method=rejection, max_new_tokens=24).token_ids == plain["greedy"].token_ids
