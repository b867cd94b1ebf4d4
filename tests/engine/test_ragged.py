"""Ragged plans: attention over rows of different lengths (engine/ragged.py)."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.engine import Engine, attention
from specdec.engine.attention import grouped_attention
from specdec.engine.kernels import packing_supported
from specdec.engine.ragged import WORTH, choose_plan, first_visible, plan_cost, plan_for, ragged_attention
from tiny import make_llama


def keys_read(plan, first: torch.Tensor, columns: int) -> float:
    """What a plan's calls cost in the model (None: the single call over every row)."""
    if plan is None:
        return len(first) * columns
    return plan_cost(len(first), columns, plan.cut, list(plan.starts))


def cheapest_by_brute_force(firsts: list[int], columns: int) -> float:
    """The cost model written out over every plan: any set of rows attended alone, the others together
    from the first column any of them sees; the cheapest cost, or the single call's."""
    rows, best = len(firsts), float(len(firsts) * columns)
    for alone in itertools.product([False, True], repeat=rows):
        together = [start for start, own in zip(firsts, alone, strict=True) if not own]
        if together:
            own = [start for start, own in zip(firsts, alone, strict=True) if own]
            best = min(best, plan_cost(rows, columns, min(together), own))
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3000), min_size=2, max_size=9), st.integers(0, 2000))
def test_a_plan_covers_every_visible_key_and_is_the_cheapest(firsts, extra):
    columns = max(firsts) + 1 + extra
    first = torch.tensor(firsts)
    plan = choose_plan(first, columns)
    cheapest = cheapest_by_brute_force(firsts, columns)
    if plan is None:
        assert cheapest >= WORTH * len(firsts) * columns
        return
    assert keys_read(plan, first, columns) == pytest.approx(cheapest)
    assert keys_read(plan, first, columns) < WORTH * len(firsts) * columns
    own = dict(zip(plan.long_rows, plan.starts, strict=True))
    for row, start in enumerate(firsts):  # each row's last call reads a range holding all it sees
        assert start >= own.get(row, plan.cut)


def test_one_long_row_among_short_ones_is_attended_alone():
    """The probe's left-padded batch: 63 rows of 300 keys at the end of 1,500 columns, one of 1,500."""
    first = torch.tensor([0] + [1200] * 63)
    plan = choose_plan(first, 1500)
    assert plan.cut == 1200 and plan.long_rows == (0,) and plan.starts == (0,)
    assert choose_plan(torch.tensor([0, 1200]), 1500) is None  # one of two rows long: no saving
    common = choose_plan(torch.tensor([1200, 1250]), 1500)  # a range no row sees: cut, no long rows
    assert common.cut == 1200 and common.long_rows == ()


def test_rows_of_many_lengths_are_attended_over_their_own_ranges():
    """Served rows: 16 rows each of four lengths; all but the shortest attended alone."""
    first = torch.tensor([0, 600, 1100, 1400] * 16)
    plan = choose_plan(first, 1500)
    assert plan.cut == 1400 and sorted(plan.long_rows) == [i for i in range(64) if i % 4 != 3]
    assert all(first[row] == start for row, start in zip(plan.long_rows, plan.starts, strict=True))


def test_first_visible_reads_the_mask():
    mask = torch.zeros(3, 1, 2, 10, dtype=torch.bool)
    mask[0, 0, 1, 4] = mask[1, 0, 0, 7] = True
    assert first_visible(mask).tolist() == [4, 7, 10]
    assert plan_for(mask[:1]) is None


def ragged_case(seed: int, rows: int = 8, columns: int = 2000, length: int = 3):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(rows, 6, length, 8, generator=g)
    key, value = (torch.randn(rows, 2, columns, 8, generator=g) for _ in range(2))
    starts = torch.full((rows,), columns - 20 - length)
    starts[torch.randint(0, rows, (2,), generator=g)] = torch.randint(0, 500, (2,), generator=g)
    mask = torch.zeros(rows, 1, length, columns, dtype=torch.bool)
    for row, start in enumerate(starts.tolist()):
        mask[row, 0, :, start : columns - length] = True
    mask[..., torch.arange(length), columns - length + torch.arange(length)] = True
    return query, key, value, mask.clone()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 4))
def test_ragged_attention_is_attention_over_the_whole_range(seed, length):
    query, key, value, mask = ragged_case(seed, length=length)
    plan = plan_for(mask)
    assert plan is not None and len(plan.long_rows) >= 1
    ours = ragged_attention(grouped_attention, query, key, value, mask, plan)
    torch.testing.assert_close(ours, grouped_attention(query, key, value, mask), rtol=1e-5, atol=1e-6)


def packed_llama(seed: int):
    """A tiny target whose engine copy uses the grouped attention (skips where oneDNN cannot pack it)."""
    model = make_llama(64, seed=seed, hidden=64, context=2048)
    if not packing_supported(model):
        pytest.skip("the engine's grouped attention comes with its packed copy (oneDNN)")
    return model


@pytest.fixture
def calls(monkeypatch) -> list:
    """One entry per ragged attention call the engine makes."""
    made = []
    real = attention.ragged_attention
    monkeypatch.setattr(attention, "ragged_attention", lambda *a: made.append(1) or real(*a))
    return made


def test_a_batch_with_one_long_prompt_decodes_each_row_as_alone(calls):
    """Engine level: the ragged path runs (counted) and every row's logits are its own alone."""
    model = packed_llama(seed=3)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 64, (n,), generator=g).tolist() for n in (1200, 6, 9, 5, 7, 8)]
    batch = Engine(model)
    batch.start(prompts, extra_slots=8)
    token = torch.randint(3, 64, (len(prompts), 1), generator=g)
    together = batch.extend(token).logits[:, -1]
    assert calls, "the ragged plan was not used"
    for row, prompt in enumerate(prompts):
        alone = Engine(model)
        alone.start([prompt], extra_slots=8)
        logits = alone.extend(token[row : row + 1]).logits[0, -1]
        torch.testing.assert_close(together[row], logits, rtol=1e-5, atol=1e-5)
        assert together[row].argmax() == logits.argmax()


def test_rows_joining_a_running_batch_get_a_plan_and_decode_as_alone(calls):
    """A served batch: short requests join one long one (``admit``), draft tokens are rolled back per row and
    compacted away. Rows stay right-aligned, so the ragged path runs (counted; with joining rows left at
    the front it did not) and every row's logits are its own alone."""
    model = packed_llama(seed=4)
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 64, (n,), generator=g).tolist() for n in (1500, 6, 9, 5)]
    drafts = torch.randint(3, 64, (len(prompts), 3), generator=g)
    dropped = torch.tensor([2, 0, 1, 3])
    token = torch.randint(3, 64, (len(prompts), 1), generator=g)
    batch = Engine(model)
    batch.start(prompts[:1], extra_slots=8)
    for prompt in prompts[1:]:
        batch.admit([prompt])
    batch.extend(drafts)
    batch.rollback(dropped)
    batch.compact()
    calls.clear()
    together = batch.extend(token).logits[:, -1]
    assert calls, "the ragged plan was not used"
    for row, prompt in enumerate(prompts):
        alone = Engine(model)
        alone.start([prompt], extra_slots=8)
        alone.extend(drafts[row : row + 1])
        alone.rollback(int(dropped[row]))
        logits = alone.extend(token[row : row + 1]).logits[0, -1]
        torch.testing.assert_close(together[row], logits, rtol=1e-5, atol=1e-5)
        assert together[row].argmax() == logits.argmax()
