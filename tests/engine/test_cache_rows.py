"""Rows leaving and joining a running batch: only the rows that move are copied, in place."""

import gc
import weakref

import torch
from hypothesis import given
from hypothesis import strategies as st

from specdec.decoders.stopping import fill_holes
from specdec.engine import Engine
from specdec.engine.cache import hole_moves
from tiny import make_llama

VOCAB = 320


def prompt(n: int, seed: int) -> list[int]:
    return torch.randint(3, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def buffers(engine: Engine) -> list[int]:
    return [layer.keys.data_ptr() for layer in engine.cache.layers]


def test_hole_moves_copies_only_rows_from_beyond_the_new_batch():
    assert [t.tolist() for t in hole_moves(torch.tensor([0, 3, 2]))] == [[1], [3]]
    assert [t.tolist() for t in hole_moves(torch.tensor([0, 1]))] == [[], []]  # the last rows left
    assert hole_moves(torch.tensor([1, 2, 3])) is None  # order kept: every row shifts, a full copy
    assert hole_moves(torch.tensor([1, 0])) is None  # a swap: a source would be overwritten


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1)))))
def test_the_loops_departures_are_moves_the_cache_can_do_in_place(case):
    """Whatever rows leave, the order the loop keeps the others in (each stays, or fills a hole from
    beyond the new size) keeps every survivor once and is a selection the cache copies row by row."""
    size, gone = case
    order = fill_holes(size, gone)
    assert sorted(order) == sorted(set(range(size)) - gone)
    assert all(pos == i or (i in gone and pos >= len(order)) for i, pos in enumerate(order))
    assert hole_moves(torch.tensor(order, dtype=torch.long)) is not None


def test_a_departure_and_an_arrival_keep_the_buffers_and_every_rows_logits():
    """Three rows (buffers for four): the middle one leaves, the last takes its place, a fourth request
    joins the spare row; no buffer is reallocated, and every row's next logits are those it gets alone.
    The control: a selection that keeps the order shifts every row, copied into new buffers."""
    model = make_llama(VOCAB, seed=1)
    a, b, c, d = (prompt(n, seed) for n, seed in ((9, 1), (6, 2), (12, 3), (7, 4)))
    engine = Engine(model)
    engine.start([a, b, c], extra_slots=8)
    engine.extend(torch.tensor([[a[-1]], [b[-1]], [c[-1]]]))
    before = buffers(engine)
    engine.select_rows(torch.tensor(fill_holes(3, {1})))  # b leaves, c moves into its row
    engine.admit([d])
    assert buffers(engine) == before and engine.cache.allocated_rows == 4
    out = engine.extend(torch.tensor([[50], [51], [d[-1]]])).logits[:, 0]
    with torch.inference_mode():
        for row, text in enumerate(([*a, 50], [*c, 51], d)):
            alone = model(torch.tensor([text])).logits[0, -1]
            torch.testing.assert_close(out[row], alone, rtol=1e-5, atol=1e-5)
    engine.select_rows(torch.tensor([1, 2]))  # the control: row 0 leaves, the others keep their order
    assert buffers(engine) != before


def test_growth_after_departures_reallocates_only_the_live_rows_bucket():
    """Five rows (buffers for eight); four leave, so the buffers keep seven spare rows for arrivals. When
    the cache then grows, the new buffers hold the live row's bucket (one row), not eight rows at the new
    capacity, and the row's logits are still those it gets alone."""
    model = make_llama(VOCAB, seed=1)
    texts = [
        prompt(n, seed) for n, seed in ((5, 1), (8, 2), (4, 3), (6, 4), (9, 5))
    ]  # the last longest: no hole
    engine = Engine(model)
    engine.start(texts, extra_slots=2)
    engine.select_rows(torch.tensor(fill_holes(5, {0, 1, 2, 3})))  # the last row moves into row 0
    assert engine.cache.allocated_rows == 8
    capacity = engine.cache.capacity
    block = list(range(40, 40 + capacity))  # more tokens than the cache has slots: it grows
    out = engine.extend(torch.tensor([[texts[4][-1], *block]])).logits[0, -1]
    assert engine.cache.capacity > capacity and engine.cache.allocated_rows == 1
    with torch.inference_mode():
        alone = model(torch.tensor([[*texts[4], *block]])).logits[0, -1]
    torch.testing.assert_close(out, alone, rtol=1e-5, atol=1e-5)


def test_a_finished_batchs_buffers_are_freed_when_the_next_starts_without_the_cyclic_collector():
    """Nothing but the engine holds a batch's cache, so its buffers go when the next batch replaces it,
    not at some later garbage collection (a reference cycle between the cache and its layers kept 9 GB
    of a finished 64-row batch alive into the next one)."""
    engine = Engine(make_llama(VOCAB, seed=1))
    engine.start([prompt(6, 1), prompt(4, 2)], extra_slots=4)
    engine.extend(torch.tensor([[5], [6]]))
    old = weakref.ref(engine.cache.layers[0].keys)
    gc.disable()
    try:
        engine.start([prompt(5, 3)], extra_slots=4)
        assert old() is None
    finally:
        gc.enable()
