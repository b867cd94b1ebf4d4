"""BiTA's packed SAR objective on tiny models: the training pass computes exactly what decoding computes
for a mask group, batches cut inside answers and label the right tokens, and the acceptance the
selection scores is the tree walk's."""

import pytest
import torch

from specdec.engine import Engine
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.training.answers import TargetAnswer
from specdec.training.sar import IGNORE, accepted_per_step, sar_batch, sar_logits, sar_loss, sequence_states


@pytest.mark.parametrize("kind", ["deep", "shallow", "none"])
def test_the_training_pass_computes_what_decoding_computes(bita_target, kind):
    """Mask logits of two packed groups (cuts 5 and 2) in one training pass equal those of the same
    groups run by the engine after the sequence, with the prompt states in reserved slots."""
    torch.manual_seed(1)
    adapter = BiTAAdapter(model_signature(bita_target), 0 if kind == "none" else 4, 3, kind).eval()
    vocab = bita_target.config.vocab_size
    tokens = torch.randint(3, vocab, (1, 10), generator=torch.Generator().manual_seed(2))
    batch = {"tokens": tokens, "valid": torch.ones(1, 10, dtype=torch.bool), "cuts": torch.tensor([[5, 2]])}
    with torch.no_grad():
        trained = sar_logits(bita_target, adapter, batch)[0]
    for g, cut in enumerate((5, 2)):
        engine = Engine(bita_target, pack_weights=False)
        engine.reset(1, 32, reserved=adapter.num_prompts)
        with torch.no_grad():
            if adapter.num_prompts:
                engine.write_reserved(adapter.prefix(bita_target))
            engine.extend(tokens[:, : cut + 1])
            masks = adapter.mask_embeddings(1, bita_target.dtype)[None]
            out = engine.extend(
                torch.zeros(1, 3, dtype=torch.long),
                embeds=masks,
                sees_reserved=torch.ones(1, 3, dtype=torch.bool),
            )
        torch.testing.assert_close(trained[g], out.logits[0], rtol=1e-4, atol=1e-4)


def test_sar_batches_cut_inside_answers_and_label_the_tokens_after_the_next():
    answer = TargetAnswer(prompt_ids=[1, 2, 3], answer_ids=[10, 11, 12, 13, 14])
    batch = sar_batch([answer], groups=50, masks=3, max_len=64, generator=torch.Generator().manual_seed(0))
    ids = [1, 2, 3, 10, 11, 12, 13, 14]
    for cut, labels in zip(batch["cuts"][0].tolist(), batch["labels"][0].tolist(), strict=True):
        assert 2 <= cut <= 5  # the next token (cut + 1) is an answer token; cut + 2 exists
        assert labels == [ids[cut + 2 + i] if cut + 2 + i < len(ids) else IGNORE for i in range(3)]


def test_accepted_per_step_walks_the_efficient_tree():
    logits = torch.zeros(1, 3, 3, 6)
    for d, order in enumerate([[0, 1, 2], [3, 4, 5], [1, 2, 3]]):
        for rank, token in enumerate(order):
            logits[0, :, d, token] = 10 - rank
    labels = torch.tensor([[[0, 3, 1], [1, 3, 1], [0, 5, 1]]])
    assert accepted_per_step(logits, labels, (5, 4, 3)).tolist() == [[3.0, 1.0, 2.0]]
    assert accepted_per_step(logits, labels, (1, 1, 1)).tolist() == [[3.0, 0.0, 1.0]]
    labels[0, 1, 0] = IGNORE
    assert accepted_per_step(logits, labels, (1, 1, 1))[0, 1].isnan()


@pytest.mark.parametrize("kind", ["deep", "shallow"])
def test_the_loss_reaches_the_prompts_and_the_masks(bita_target, kind):
    """The sequence runs without autograd (no trained weight reaches it); the prompt states and the mask
    embeddings, which the masks' pass reads, still get their gradients."""
    torch.manual_seed(1)
    adapter = BiTAAdapter(model_signature(bita_target), 4, 3, kind)
    vocab = bita_target.config.vocab_size
    answer_ids = torch.randint(3, vocab, (12,), generator=torch.Generator().manual_seed(4)).tolist()
    answers = [TargetAnswer(prompt_ids=[1, 2], answer_ids=answer_ids)] * 2
    batch = sar_batch(answers, 4, 3, 64, torch.Generator().manual_seed(0))
    sar_loss(sar_logits(bita_target, adapter, batch), batch["labels"]).backward()
    assert adapter.prompts.grad is not None and adapter.prompts.grad.abs().sum() > 0
    assert adapter.masks.grad is not None and adapter.masks.grad.abs().sum() > 0
    # the target's weights require grad here, the cached sequence still none
    cache = sequence_states(bita_target, batch["tokens"], batch["valid"])
    assert not any(layer.keys.requires_grad or layer.values.requires_grad for layer in cache.layers)
