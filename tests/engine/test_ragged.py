"""Ragged plans: attention over rows of different lengths (engine/ragged.py)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.engine import Engine, attention
from specdec.engine.attention import grouped_attention
from specdec.engine.kernels import packing_supported
from specdec.engine.ragged import LONG_ROW_COST, WORTH, choose_cut, first_visible, plan_for, ragged_attention
from tiny import make_llama


def keys_read(plan, first: torch.Tensor, columns: int) -> int:
    """Keys a plan's two calls read, rows × columns (what the plan exists to cut)."""
    if plan is None:
        return len(first) * columns
    return len(first) * (columns - plan.cut) + len(plan.long_rows) * (columns - plan.long_start)


def best_cut_by_brute_force(firsts: list[int], columns: int) -> int | None:
    """The cost model written out: every distinct first column tried as the cut."""
    rows, best = len(firsts), (WORTH * len(firsts) * columns, None)
    for cut in sorted(set(firsts)):
        long = [start for start in firsts if start < cut]
        cost = rows * (columns - cut) + (LONG_ROW_COST * len(long) * (columns - min(long)) if long else 0)
        best = min(best, (cost, cut), key=lambda pair: pair[0])
    return best[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=2, max_size=64), st.integers(0, 200))
def test_a_plan_covers_every_visible_key_and_is_the_cheapest_cut(firsts, extra):
    columns = max(firsts) + 1 + extra
    first = torch.tensor(firsts)
    plan = choose_cut(first, columns)
    cut = best_cut_by_brute_force(firsts, columns)
    if plan is None:
        assert cut is None
        return
    assert plan.cut == cut
    long = set(plan.long_rows.tolist())
    for row, start in enumerate(firsts):  # each row is attended over a range holding all it sees
        assert start >= (plan.long_start if row in long else plan.cut)
    assert long == {row for row, start in enumerate(firsts) if start < plan.cut}
    assert keys_read(plan, first, columns) < len(firsts) * columns


def test_one_long_row_among_short_ones_is_attended_alone():
    """The probe's left-padded batch: 63 rows of 300 keys at the end of 1,500 columns, one of 1,500."""
    first = torch.tensor([0] + [1200] * 63)
    plan = choose_cut(first, 1500)
    assert plan.cut == 1200 and plan.long_rows.tolist() == [0] and plan.long_start == 0
    assert choose_cut(torch.tensor([0, 1200]), 1500) is None  # one of two rows long: no saving
    common = choose_cut(torch.tensor([1200, 1250]), 1500)  # a range no row sees: cut, no long rows
    assert common.cut == 1200 and common.long_rows.numel() == 0


def test_first_visible_reads_the_mask():
    mask = torch.zeros(3, 1, 2, 10, dtype=torch.bool)
    mask[0, 0, 1, 4] = mask[1, 0, 0, 7] = True
    assert first_visible(mask).tolist() == [4, 7, 10]
    assert plan_for(mask[:1]) is None


def ragged_case(seed: int, rows: int = 8, columns: int = 200, length: int = 3):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(rows, 6, length, 8, generator=g)
    key, value = (torch.randn(rows, 2, columns, 8, generator=g) for _ in range(2))
    starts = torch.full((rows,), columns - 20 - length)
    starts[torch.randint(0, rows, (2,), generator=g)] = torch.randint(0, 50, (2,), generator=g)
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


def test_a_batch_with_one_long_prompt_decodes_each_row_as_alone(monkeypatch):
    """Engine level: the ragged path runs (counted) and every row's logits are its own alone."""
    model = make_llama(64, seed=3, hidden=64)
    if not packing_supported(model):
        pytest.skip("the engine's grouped attention comes with its packed copy (oneDNN)")
    calls = []
    real = attention.ragged_attention
    monkeypatch.setattr(attention, "ragged_attention", lambda *a: calls.append(1) or real(*a))
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 64, (n,), generator=g).tolist() for n in (120, 6, 9, 5, 7, 8)]
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
