"""Issue 20, sixty-third session: does Tandem's lead over the equal-budget draft grow with training tokens?

The Tandem target (Tandem + SPEED >= 1.15x SpS with the equal-budget distilled draft) was 0.97x on the latest
results page; the plan was that more training closes it. This reads the one committed run where both trained
side by side on the same caches, steps, batch and held-out sequences (the twenty-ninth session's H200 lease,
`results/gpu_train_2026-11-27f.json`) and prints, at every evaluation, each one's held-out agreement with the
target and the greedy tokens a SPEED block of gamma keeps, their ratio, and the least-squares slope of each
ratio against log10(tokens seen): a lead that grows with the budget has a positive slope.
    .venv/bin/python benchmarks/campaigns/tandem-draft-ratio-2026-12-02.py \
        > benchmarks/results/tandem_draft_ratio_2026-12-02.log
"""

import json
import math
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "results" / "gpu_train_2026-11-27f.json"
KEYS = {
    "heldout_agreement": "agreement",
    "accepted_per_block_g3": "block g3",
    "accepted_per_block_g5": "block g5",
    "accepted_per_block_g7": "block g7",
}


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return num / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    run = json.loads(RUN.read_text())
    tandem = {r["step"]: r for r in run["tandem"]}
    draft = {r["step"]: r for r in run["draft"]}
    steps = sorted(set(tandem) & set(draft))
    assert all(tandem[s]["tokens_seen"] == draft[s]["tokens_seen"] for s in steps), "not an equal-budget pair"
    print(f"{RUN.name}: Tandem / draft at equal tokens (same caches, steps, batch, held-out sequences)")
    print("step tokens_M  " + "  ".join(f"{name}: T / D = ratio" for name in KEYS.values()))
    ratios: dict[str, list[float]] = {k: [] for k in KEYS}
    for s in steps:
        cells = []
        for k in KEYS:
            t, d = tandem[s][k], draft[s][k]
            ratios[k].append(t / d)
            cells.append(f"{t:.3f} / {d:.3f} = {t / d:.3f}")
        print(f"{s:4d} {tandem[s]['tokens_seen'] / 1e6:8.2f}  " + "  ".join(cells))
    logs = [math.log10(tandem[s]["tokens_seen"]) for s in steps]
    for k, name in KEYS.items():
        first, last, per_decade = ratios[k][0], ratios[k][-1], slope(logs, ratios[k])
        print(f"{name}: ratio {first:.3f} -> {last:.3f}, slope {per_decade:+.3f} a decade of tokens")


if __name__ == "__main__":
    main()
