import torch

from specdec.benchmarks.step_timing import interleaved_medians, primed_token, timed_steps
from specdec.engine import Engine


def test_timed_steps_leave_the_context_as_it_was(tiny_llama):
    engine = Engine(tiny_llama)
    token = primed_token(engine, context=12, room=4, seed=3)
    vocab = tiny_llama.get_input_embeddings().weight.shape[0]
    assert token.shape == (1, 1) and 3 <= int(token) < vocab
    assert engine.slots.length == 12
    before = engine.extend(token).logits
    engine.rollback(1)
    times = timed_steps(engine, token, steps=6)
    assert len(times) == 6 and all(t > 0 for t in times)
    assert engine.slots.length == 12  # every step rolled back: each one saw the same 12-token context
    assert len(timed_steps(engine, token.expand(1, 3), steps=2)) == 2 and engine.slots.length == 12  # a block
    assert torch.equal(engine.extend(token).logits, before)


def test_two_engines_primed_with_one_seed_time_the_same_step(tiny_llama):
    """A probe compares engines on one context and token: the seed fixes both."""
    first, second = Engine(tiny_llama), Engine(tiny_llama)
    token = primed_token(first, context=10, room=2, seed=5)
    assert torch.equal(token, primed_token(second, context=10, room=2, seed=5))
    assert torch.equal(first.extend(token).logits, second.extend(token).logits)


def test_interleaved_medians_time_each_block_with_its_options_and_leave_the_context(tiny_llama):
    engine = Engine(tiny_llama)
    token = primed_token(engine, context=12, room=8, seed=3)
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    before = engine.extend(token).logits
    engine.rollback(1)
    calls = []
    extend = engine.extend
    engine.extend = lambda tokens, **options: calls.append(sorted(options)) or extend(tokens, **options)
    blocks = {"one": (token, {}), "tree": (token.expand(1, 3), {"tree_mask": tree})}
    medians = interleaved_medians(engine, blocks, rounds=3)
    assert list(medians) == ["one", "tree"] and all(m > 0 for m in medians.values())
    assert calls == [[], ["tree_mask"]] * 4  # one untimed call each, then the blocks in turn each round
    del engine.extend
    assert engine.slots.length == 12 and torch.equal(engine.extend(token).logits, before)
