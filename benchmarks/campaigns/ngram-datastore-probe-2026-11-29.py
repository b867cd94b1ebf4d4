"""Would a datastore drafter pay beside the EAGLE-3 head? (REST / SuffixDecoding-style: the target's
own committed answers as an n-gram table, the longest matching suffix of up to 4 tokens, its most frequent
continuation.)

Teacher-forced on the fixed held-out answers (benchmarks/data/heldout-9900000; the table is built from
the 26 committed self-intents batches, never from it): greedy agreement at depth 1..8 of the table's own
chain, accepted tokens per chain of 4 (the number heldout_eagle3.py gives the head: 1.927 for the shipped
one), how often the table is confident and right, and a walk over each answer that drafts from the table
only where its confident chain is long (what a `datastore, else the head` drafter would hand the table).

    python benchmarks/campaigns/ngram-datastore-probe-2026-11-29.py benchmarks/data
"""

import glob
import gzip
import json
import sys
import time

import numpy as np

SEP = 65535
ORDERS = (4, 3, 2, 1)
CTX = 4  # prompt tokens kept before each answer (the chat template's "assistant\n" tail)


def sequences(paths):
    for path in paths:
        with gzip.open(path, "rt") as f:
            for line in f:
                d = json.loads(line)
                yield d["prompt_ids"][-CTX:] + d["answer_ids"]


def key_of(window):  # [..., k] uint64 tokens -> 48-bit key (exact for k <= 3, hashed for 4)
    k = window.shape[-1]
    if k <= 3:
        key = np.zeros(window.shape[:-1], dtype=np.uint64)
        for j in range(k):
            key = (key << np.uint64(16)) | window[..., j]
        return key
    x = np.zeros(window.shape[:-1], dtype=np.uint64)
    for j in range(k):
        x = (x ^ window[..., j]) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(29)
    return x >> np.uint64(16)


def build(paths):
    toks = []
    for s in sequences(paths):
        toks.extend(s)
        toks.append(SEP)
    t = np.array(toks, dtype=np.uint64)
    tables = {}
    for k in ORDERS:
        win = np.lib.stride_tricks.sliding_window_view(t, k + 1)
        ok = ~(win == SEP).any(-1)
        win = win[ok]
        combined = (key_of(win[:, :k]) << np.uint64(16)) | win[:, k]
        pairs, counts = np.unique(combined, return_counts=True)
        keys, nxt = pairs >> np.uint64(16), (pairs & np.uint64(0xFFFF)).astype(np.int64)
        # per key: the most frequent next token, its count and the key's total
        order = np.lexsort((-counts, keys))
        keys, nxt, counts = keys[order], nxt[order], counts[order]
        first = np.r_[True, keys[1:] != keys[:-1]]
        starts = np.flatnonzero(first)
        totals = np.add.reduceat(counts, starts)
        tables[k] = (keys[first], nxt[first], counts[first], totals)
    return tables, len(t)


def predict(tables, context, min_total=1):
    for k in ORDERS:
        if len(context) < k:
            continue
        key = key_of(np.array(context[-k:], dtype=np.uint64)[None])[0]
        keys, nxt, best, total = tables[k]
        i = np.searchsorted(keys, key)
        if i < len(keys) and keys[i] == key and total[i] >= min_total:
            return int(nxt[i]), int(best[i]), int(total[i]), k
    return None


def main():
    data = sys.argv[1]
    train = [p for p in glob.glob(f"{data}/self-intents-*/answers-*.jsonl.gz")]
    t0 = time.time()
    tables, n = build(train)
    print(
        f"built on {len(train)} batches, {n} tokens, {time.time() - t0:.0f} s; entries",
        {k: len(v[0]) for k, v in tables.items()},
        flush=True,
    )
    held = list(sequences(glob.glob(f"{data}/heldout-9900000/answers-*.jsonl.gz")))
    depth = 8
    hits = np.zeros(depth)
    tried = 0
    acc4 = []
    acc8 = []
    conf = []
    for seq in held:
        for j in range(CTX, len(seq) - 4):
            ctx, run = list(seq[:j]), 0
            first = None
            for s in range(depth):
                if j + s >= len(seq):
                    break
                p = predict(tables, ctx)
                if p is None or p[0] != seq[j + s]:
                    if s == 0 and p is not None:
                        first = p
                    break
                if s == 0:
                    first = p
                run += 1
                ctx.append(p[0])
            tried += 1
            hits[:run] += 1
            acc4.append(min(run, 4))
            acc8.append(run)
            if first is not None:
                conf.append((first[1] / first[2], first[2], first[3], run > 0))
    print(f"held-out positions {tried}: agreement at depth 1..8", np.round(hits / tried, 3))
    print(f"accepted per chain of 4: {np.mean(acc4):.3f}; of 8: {np.mean(acc8):.3f}")
    c = np.array([(a, b, k, h) for a, b, k, h in conf], dtype=float)
    for lo in (0.5, 0.8, 0.9):
        for tmin in (2, 5, 20):
            m = (c[:, 0] >= lo) & (c[:, 1] >= tmin)
            covers, right = m.sum() / tried, c[m, 3].mean()
            print(f"share>={lo} total>={tmin}: covers {covers:.3f} of positions, right {right:.3f}")
    for share, total, lmin in [(0.8, 5, 3), (0.8, 5, 5), (0.9, 5, 4), (0.6, 3, 4), (0.5, 2, 6)]:
        simulate(tables, held, share, total, lmin)


def confident_chain(tables, context, share, total, limit=16):
    ctx, chain = list(context), []
    for _ in range(limit):
        p = predict(tables, ctx)
        if p is None or p[1] / p[2] < share or p[2] < total:
            break
        chain.append(p[0])
        ctx.append(p[0])
    return chain


def simulate(tables, held, share, total, lmin):
    calls = toks = n = 0
    for seq in held:
        j = CTX
        while j < len(seq):
            chain = confident_chain(tables, seq[:j], share, total)
            if len(chain) >= lmin:
                a = 0
                while a < len(chain) and j + a < len(seq) and chain[a] == seq[j + a]:
                    a += 1
                step = min(a + 1, len(seq) - j)
                calls += 1
                toks += step
                j += step
            else:
                j += 1
        n += len(seq) - CTX
    print(
        f"share {share} total {total} lmin {lmin}: datastore calls make {toks / n:.3f} of tokens, "
        f"{toks / max(calls, 1):.2f} tokens a call ({calls} calls)"
    )


if __name__ == "__main__":
    main()
