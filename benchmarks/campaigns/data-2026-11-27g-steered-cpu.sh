#!/bin/bash
# Session 2026-11-27 (thirtieth), issue 20: no GPU this session, so the steered batches that
# data-gpu-2026-11-27f.sh plans for a lease are started here on the CPU: data-2026-11-27f-translate-summarize.sh
# (translation and summary openers, bf16, batch 64, requests and answers of up to 128 tokens) for seeds 6000000,
# 6100000 and 6200000 (no other script uses them; the GPU script's steered seeds start at 5000000), 2,048 requests
# each, one after the other. Resumable: a stopped seed continues under the same cache key. The session ran the
# first two (committed as benchmarks/data/steered-*) and stopped the third a few seconds in, for time.
for s in ${SEEDS:-6000000 6100000 6200000}; do
  SEED=$s COUNT=${COUNT:-2048} bash /work/main/benchmarks/campaigns/data-2026-11-27f-translate-summarize.sh
done
