"""The slot table alone, without a model: random schedules of writes, rollbacks, tree keeps, compactions,
row selections (releases), admissions and growth against a plain list of each row's tokens."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.engine.slots import NO_POSITION, SlotTable
from specdec.errors import InvalidArgumentError


class Simulation:
    """A slot table, a stand-in cache (one token id per slot, moved as the engine moves its tensors)
    and the reference: each row's tokens in order."""

    def __init__(self, rows: int, capacity: int, reserved: int, compact_order=None):
        self.table = SlotTable(rows, capacity, reserved)
        self.cache = torch.full((rows, capacity), -1, dtype=torch.long)
        self.rows = [[] for _ in range(rows)]
        self.next_id = 0
        self.compact_order = compact_order or (lambda table: table.compact())

    def write(self, lengths: list[int], width: int) -> None:
        if not self.table.fits(width):
            if self.table.has_holes():
                self.compact()
            if not self.table.fits(width):
                self.grow(self.table.capacity * 2 + width)
        mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
        positions = self.table.num_tokens[:, None] + mask.long().cumsum(1) - 1
        start = self.table.write(mask, positions)
        for row, n in enumerate(lengths):
            ids = list(range(self.next_id, self.next_id + n))
            self.next_id += n
            self.cache[row, start : start + n] = torch.tensor(ids, dtype=torch.long)
            self.rows[row] += ids

    def rollback(self, drop: list[int]) -> None:
        self.table.rollback(torch.tensor(drop))
        for row, n in enumerate(drop):
            del self.rows[row][len(self.rows[row]) - n :]

    def keep_last_block(self, keep: list[list[bool]]) -> None:
        start, width = self.table.block
        written = self.table.valid[:, start : start + width].clone()
        self.table.keep(torch.tensor(keep))
        for row in range(len(self.rows)):
            gone = [
                int(self.cache[row, start + i]) for i in range(width) if written[row, i] and not keep[row][i]
            ]
            self.rows[row] = [t for t in self.rows[row] if t not in gone]

    def compact(self) -> None:
        self.cache = self.cache.gather(1, self.compact_order(self.table))
        table = self.table
        for row, tokens in enumerate(self.rows):  # right-aligned: a run of slots ending at the write column
            assert table.valid[row, table.length - len(tokens) : table.length].all()

    def select(self, rows: list[int]) -> None:
        self.table.select_rows(torch.tensor(rows))
        self.cache = self.cache[rows]
        self.rows = [self.rows[i] for i in rows]

    def admit(self, counts: list[int]) -> None:
        """Newcomers prefilled in a table of their own, left-padded as the engine's prefill pads them."""
        reserved, width = self.table.reserved, max(counts)
        end = reserved + width
        if end > self.table.capacity:
            self.grow(end)
        valid = torch.zeros(len(counts), end, dtype=torch.bool)
        positions = torch.zeros(len(counts), end, dtype=torch.long)
        cache = torch.full((len(counts), self.table.capacity), -1, dtype=torch.long)
        for row, n in enumerate(counts):
            valid[row, end - n : end] = True
            positions[row, end - n : end] = torch.arange(n)
            ids = list(range(self.next_id, self.next_id + n))
            self.next_id += n
            cache[row, end - n : end] = torch.tensor(ids, dtype=torch.long)
            self.rows.append(ids)
        if self.rows and end > self.table.length:  # what the engine does: the running rows move right
            moved = end - self.table.length
            before = [int(v.nonzero()[-1]) if v.any() else None for v in self.table.valid]
            self.cache = self.cache.gather(1, self.table.shift(moved))
            after = [int(v.nonzero()[-1]) if v.any() else None for v in self.table.valid]
            assert after == [None if b is None else b + moved for b in before]
        shift = self.table.join_shift(end)
        added = self.table.admit(valid, positions)
        assert added.tolist() == list(range(len(self.cache), len(self.cache) + len(counts)))
        self.cache = torch.cat([self.cache, cache.roll(shift, dims=1)])  # the engine's copy moves them alike
        for row in added.tolist():  # prompts end at the write column, as the running rows' last tokens do
            if self.rows[row]:
                assert int(self.table.valid[row].nonzero()[-1]) == self.table.length - 1

    def grow(self, capacity: int) -> None:
        self.table.grow(capacity)
        pad = torch.full((self.cache.shape[0], capacity - self.cache.shape[1]), -1, dtype=torch.long)
        self.cache = torch.cat([self.cache, pad], dim=1)

    def check(self) -> None:
        table = self.table
        assert table.num_tokens.tolist() == [len(r) for r in self.rows]
        assert not table.valid[:, table.length :].any() and table.length >= table.reserved
        assert not table.valid[:, : table.reserved].any()
        for row, tokens in enumerate(self.rows):
            held = table.valid[row]
            assert self.cache[row][held].tolist() == tokens  # the row's tokens, in order
            assert table.positions[row][held].tolist() == list(range(len(tokens)))
            assert (table.positions[row, : table.reserved] == NO_POSITION).all()


def run_schedule(data, compact_order=None) -> Simulation:
    rows = data.draw(st.integers(1, 4), label="rows")
    reserved = data.draw(st.integers(0, 3), label="reserved")
    sim = Simulation(rows, reserved + data.draw(st.integers(1, 12)), reserved, compact_order)
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        op = data.draw(st.sampled_from(["write", "write", "rollback", "keep", "compact", "select", "admit"]))
        live = len(sim.rows)
        if op == "write":
            width = data.draw(st.integers(1, 6))
            sim.write([data.draw(st.integers(0, width)) for _ in range(live)], width)
        elif op == "rollback":
            sim.rollback([data.draw(st.integers(0, len(r))) for r in sim.rows])
        elif op == "keep" and sim.table.block[1]:  # a path through the last block: what trees keep
            start, width = sim.table.block
            written = sim.table.valid[:, start : start + width].sum(1).tolist()
            kept = [data.draw(st.integers(0, n)) for n in written]
            sim.keep_last_block([[i < k for i in range(width)] for k in kept])
        elif op == "compact":
            sim.compact()
        elif op == "admit":
            sim.admit(data.draw(st.lists(st.integers(0, 10), min_size=1, max_size=3)))
        elif op == "select" and live > 1:
            kept = data.draw(st.lists(st.integers(0, live - 1), min_size=1, max_size=live, unique=True))
            sim.select(sorted(kept))
        sim.check()
    return sim


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_schedules_keep_every_rows_tokens_in_order(data):
    run_schedule(data)


def reversed_compaction(table: SlotTable) -> torch.Tensor:
    """A wrong compaction: the table is squeezed, but the cache is told to move slots in reverse."""
    order = table.compact()
    return order.flip(1)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_negative_control_a_wrong_slot_order_is_caught(data):
    """The same schedules with a compaction that moves the cache wrongly: the check must fail on some."""
    try:
        sim = run_schedule(data, reversed_compaction)
        sim.compact()
        sim.check()
    except AssertionError:
        return
    assert all(len(r) <= 1 for r in sim.rows)  # only a row of 0 or 1 tokens can survive a reversal


def test_compaction_squeezes_holes_and_keeps_reserved_slots_in_place():
    table = SlotTable(2, 10, reserved=2)
    table.write(torch.tensor([[True, True, True], [True, False, True]]), torch.tensor([[0, 1, 2], [0, 0, 1]]))
    table.rollback(torch.tensor([1, 0]))
    assert table.has_holes()
    order = table.compact()
    assert order[:, :2].tolist() == [[0, 1], [0, 1]]
    assert order[0, 2:4].tolist() == [2, 3] and order[1, 2:4].tolist() == [2, 4]
    assert table.length == 4 and not table.has_holes()
    assert table.valid.tolist() == [[False, False, True, True] + [False] * 6] * 2


def test_compaction_and_admission_keep_rows_right_aligned():
    """Shorter rows end at the write column too, so their range is a suffix of the key columns."""
    table = SlotTable(2, 12, reserved=1)
    table.write(
        torch.tensor([[True] * 4, [False, False, True, True]]), torch.tensor([[0, 1, 2, 3], [0, 0, 0, 1]])
    )
    table.write(torch.tensor([[True, True], [False, True]]), torch.tensor([[4, 5], [2, 2]]))
    table.rollback(torch.tensor([1, 0]))  # holes: row 0's last slot, row 1's slot 5
    assert table.length == 7
    order = table.compact()
    assert table.length == 6
    assert table.valid.tolist() == [
        [False] + [True] * 5 + [False] * 6,
        [False] * 3 + [True] * 3 + [False] * 6,
    ]
    assert order[1, 3:6].tolist() == [3, 4, 6] and table.positions[1, 3:6].tolist() == [0, 1, 2]
    assert table.join_shift(4) == 2
    (row,) = table.admit(torch.tensor([[False, False, True, True]]), torch.tensor([[0, 0, 0, 1]]))
    assert table.valid[row].tolist() == [False] * 4 + [True] * 2 + [False] * 6
    assert table.positions[row, 4:6].tolist() == [0, 1] and table.positions[row, 0] == NO_POSITION
    assert table.join_shift(9) == 0  # a newcomer longer than the batch: the running rows move right first
    order = table.shift(9 - table.length)
    assert table.length == 9 and order[0, 4:9].tolist() == [1, 2, 3, 4, 5] and order[0, 0] == 0
    assert [int(v.nonzero()[-1]) for v in table.valid] == [8, 8, 8]
    (row,) = table.admit(torch.tensor([[False] + [True] * 8]), torch.tensor([[0, *range(8)]]))
    assert table.length == 9 and table.valid[row, 1:9].all()
    with pytest.raises(InvalidArgumentError, match="cannot shift"):
        table.shift(4)  # 9 + 4 slots do not fit 12


def test_refusals():
    table = SlotTable(1, 4)
    with pytest.raises(InvalidArgumentError, match="does not fit"):
        table.write(torch.ones(1, 5, dtype=torch.bool), torch.arange(5)[None])
    table.write(torch.ones(1, 2, dtype=torch.bool), torch.arange(2)[None])
    with pytest.raises(InvalidArgumentError, match="roll back more"):
        table.rollback(3)
    with pytest.raises(InvalidArgumentError, match="reserved"):
        SlotTable(1, 4, reserved=-1)
    with pytest.raises(InvalidArgumentError, match="reserved"):
        SlotTable(1, 2, reserved=3)
