"""Whether two models mean the same thing by a token id: required before one drafts for the other."""

from __future__ import annotations

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import VocabularyMismatchError


def output_vocab_size(model: PreTrainedModel) -> int:
    """Rows of the model's output head (what its logits index), which may exceed the tokenizer's size."""
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "out_features", None):
        return head.out_features
    return model.config.get_text_config().vocab_size


def check_same_vocabulary(
    target: PreTrainedModel,
    target_tokenizer: PreTrainedTokenizerBase | None,
    draft: PreTrainedModel,
    draft_tokenizer: PreTrainedTokenizerBase | None,
) -> None:
    """Token ids mean the same thing on both sides, or verification would compare different words."""
    target_vocab, draft_vocab = output_vocab_size(target), output_vocab_size(draft)
    if target_vocab != draft_vocab:
        raise VocabularyMismatchError(
            f"target predicts {target_vocab} token ids but the draft predicts {draft_vocab}; "
            "a draft must use exactly the target's vocabulary"
        )
    both = target_tokenizer is not None and draft_tokenizer is not None
    if both and target_tokenizer.get_vocab() != draft_tokenizer.get_vocab():
        raise VocabularyMismatchError(
            "target and draft tokenizers map tokens to different ids "
            f"({len(target_tokenizer)} vs {len(draft_tokenizer)} entries); use a draft trained with the "
            "target's tokenizer"
        )
