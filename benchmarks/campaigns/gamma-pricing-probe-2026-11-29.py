"""Probe: the adaptive γ policy's own host time a step (``next_gamma`` at one row, a top-2 chain-first tree
drafter, max γ 12: ~25 options priced), after 300 synthetic steps (α ~0.5, a sibling rescue 30 % of misses).
Run it at two commits to compare; prints µs per call, the median of 5 rounds of 2,000.

    python benchmarks/campaigns/gamma-pricing-probe-2026-11-29.py
"""

import random
import statistics
import time

from specdec.decoders.gamma import AdaptiveGamma, StepResult

policy, rng = AdaptiveGamma(), random.Random(0)
for _ in range(300):
    gamma = policy.next_gamma(1)
    if not gamma:
        policy.update(StepResult(0, [0], [0], 0.012, 0.0, asked=0))
        continue
    kept = min(gamma, int(rng.expovariate(0.7)))
    verify = 0.012 + 0.0016 * gamma
    policy.update(StepResult(gamma, [kept], [gamma], verify, 0.0005 * gamma, width=2, nodes=2 * gamma,
                             rescued=[rng.random() < 0.3]))  # fmt: skip
rounds = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(2000):
        policy.next_gamma(1)
    rounds.append((time.perf_counter() - start) / 2000 * 1e6)
median = statistics.median(rounds)
print(f"next_gamma {median:.1f} us a call; chose gamma {policy.gamma}, tree {policy.siblings}")
