"""The router's TV label: exact when the primary's top-k covers the vocabulary, a lower bound otherwise."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.models.router import BlockRouter, total_variation_topk


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12))
def test_total_variation_from_top_k(seed, k):
    generator = torch.Generator().manual_seed(seed)
    p_logits, q_logits = torch.randn(2, 3, 12, generator=generator, dtype=torch.float64) * 3
    exact = 0.5 * (torch.softmax(p_logits, -1) - torch.softmax(q_logits, -1)).abs().sum(-1)
    values, ids = q_logits.topk(k, dim=-1)
    estimate = total_variation_topk(p_logits, values, ids, q_logits.logsumexp(-1))
    assert torch.all(estimate <= exact + 1e-6) and torch.all(estimate >= 0)
    if k == 12:
        torch.testing.assert_close(estimate, exact, rtol=1e-5, atol=1e-6, check_dtype=False)


def test_router_round_trips(tmp_path):
    router = BlockRouter(embed_dim=8, top_k=3, hidden=16)
    embeddings = torch.nn.Embedding(20, 8)
    logits = torch.randn(4, 20)
    router.save_pretrained(tmp_path)
    loaded = BlockRouter.from_pretrained(tmp_path)
    torch.testing.assert_close(loaded(logits, embeddings), router.eval()(logits, embeddings))
