"""Tiny random models and a tiny tokenizer, built offline in milliseconds for the unit tests."""

from __future__ import annotations

import copy

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "the quick brown fox jumps over the lazy dog. " * 3,
    "speculative decoding drafts several tokens and the target verifies them in one pass.",
    "def add(a, b):\n    return a + b\n",
    "Once upon a time there was a small model that wanted to think like a large one.",
]


def make_tokenizer(vocab_size: int = 320) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on a few sentences: real merges, fixed vocabulary size."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        bos_token="<|im_start|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )


def make_llama(
    vocab_size: int, seed: int = 0, layers: int = 2, hidden: int = 32, context: int = 256, attn: str = "sdpa"
) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        eos_token_id=2,
        bos_token_id=1,
        pad_token_id=0,
    )
    config._attn_implementation = attn
    model = LlamaForCausalLM(config)
    # Random init gives near-uniform logits; widen them so greedy paths are not decided by ties.
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model.eval()


def make_gpt2(
    vocab_size: int, seed: int = 0, layers: int = 2, hidden: int = 32, context: int = 256
) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_embd=hidden,
        n_layer=layers,
        n_head=4,
        n_positions=context,
        eos_token_id=2,
        bos_token_id=1,
        tie_word_embeddings=False,
    )
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model.eval()


def perturbed_copy(model, scale: float, seed: int = 0):
    """``model`` with noise on its output head: a draft that agrees with it often, not always."""
    torch.manual_seed(seed)
    other = copy.deepcopy(model)
    with torch.no_grad():
        head = other.get_output_embeddings().weight
        head.add_(scale * head.std() * torch.randn_like(head))
    return other


def make_tandem(primary, layers: int = 2, hidden: int = 16, seed: int = 0):
    """An untrained Tandem secondary (random projections) for a tiny primary."""
    from specdec.models.tandem import TandemModel, primary_signature
    from specdec.training import DraftShape, build_draft

    torch.manual_seed(seed)
    secondary = build_draft(
        primary, DraftShape(num_layers=layers, hidden_size=hidden, num_heads=2), seed=seed
    )
    return TandemModel(secondary, primary_signature(primary)).eval()


def make_oracle_tandem(primary, noise: float = 0.0, seed: int = 0):
    """A Tandem secondary that *is* the primary: its weights (head perturbed by ``noise``), layer j
    reading the primary's input to layer j through an identity projection. With noise 0 it drafts
    exactly what the primary decodes, so every draft is accepted: a check that projected states
    reach the right layer at the right positions."""
    from specdec.models.tandem import TandemModel, primary_signature

    secondary = perturbed_copy(primary, noise, seed) if noise else copy.deepcopy(primary)
    layers = primary.config.num_hidden_layers
    tandem = TandemModel(secondary, primary_signature(primary), tuple(range(layers)))
    width = primary.config.get_text_config().hidden_size
    with torch.no_grad():
        for projection in tandem.projections:
            projection.weight.copy_(torch.eye(width))
            projection.bias.zero_()
    return tandem.eval()


def random_answers_file(path, count: int, seed: int = 0):
    """An answers file (as `specdec data answers` writes) of ``count`` random 6-token prompts with
    20-token answers, ids below 300: training data for tiny-model CLI tests."""
    from specdec.training.answers import TargetAnswer, write_answers

    generator = torch.Generator().manual_seed(seed)
    answers = [
        TargetAnswer(
            torch.randint(3, 300, (6,), generator=generator).tolist(),
            torch.randint(3, 300, (20,), generator=generator).tolist(),
        )
        for _ in range(count)
    ]
    write_answers(path, answers)
    return path


def make_eagle3(target, seed: int = 0, draft_ids=None):
    """The drafter of :func:`make_eagle3_head`."""
    from specdec.drafters.eagle3 import Eagle3Drafter

    return Eagle3Drafter(make_eagle3_head(target, seed, draft_ids), target.get_input_embeddings().weight)


def make_eagle3_head(target, seed: int = 0, draft_ids=None):
    """An untrained EAGLE-3 head for a tiny 4-layer target (reading its hidden states 1, 2 and 3);
    ``draft_ids`` trims its vocabulary."""
    from specdec.models.eagle3 import Eagle3Head

    torch.manual_seed(seed)
    text = target.config.get_text_config()
    config = LlamaConfig(
        vocab_size=target.get_output_embeddings().out_features,
        hidden_size=text.hidden_size,
        intermediate_size=2 * text.hidden_size,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    head = Eagle3Head(config, (1, 2, 3), text.hidden_size, draft_ids).eval()
    with torch.no_grad():
        head.lm_head.weight.mul_(8.0)  # decided greedy choices, as for the tiny targets
    return head


def chain_of(draft) -> list[int]:
    """Row 0's chain: a chain draft's tokens, or a top-k tree's chain nodes (each the child of the last)."""
    if draft.parents is None:
        return draft.tokens[0, : int(draft.row_lengths()[0])].tolist()
    depth = next((i for i, p in enumerate(draft.parents) if p != i - 1), len(draft.parents))
    return draft.tokens[0, :depth].tolist()


def tree_paths(parents) -> list[list[int]]:
    """Each draft-tree node's path, its ancestors then itself (node indices, root excluded): the row of
    the tree's attention mask, since a node sees exactly those."""
    from specdec.sampling import tree_attention

    return [row.nonzero().flatten().tolist() for row in tree_attention(parents)[1:, 1:]]


def fresh_chain(drafter, target, sequence: list[int], gamma: int = 3, view=chain_of) -> list[int]:
    """The greedy chain ``drafter`` proposes when it starts on ``sequence`` (its last token pending), or
    what ``view`` shows of its draft."""
    from specdec.engine import Engine
    from specdec.sampling import KeyedDraws, SamplingConfig

    engine = Engine(target)
    prefill = engine.start([sequence], extra_slots=8, hidden_layers=drafter.target_hidden_layers)
    drafter.begin([sequence], prefill)
    return view(drafter.propose(gamma, SamplingConfig(), KeyedDraws([0], [0])))


def chains_against_fresh(
    make_drafter, target, prompt: list[int], max_new: int = 24, view=chain_of
) -> tuple[list[bool], int]:
    """Greedy SpS (γ 3) with ``make_drafter()``: per step, whether its chain (or what ``view`` shows of
    its draft) equals the one a new drafter proposes on the text settled so far (its cache kept nothing
    it should have dropped, and lost nothing; for a tree drafter, its chain), and how many draft tokens
    were accepted in all."""
    from specdec.decoders import Request, SpeculativeSampling, StopCriteria
    from specdec.engine import Engine
    from specdec.sampling import SamplingConfig, row_keys

    drafter, chains = make_drafter(), []
    propose = drafter.propose

    def recording(gamma, sampling, draws, *, min_confidence=0.0):
        draft = propose(gamma, sampling, draws, min_confidence=min_confidence)
        chains.append((gamma, view(draft)))
        return draft

    drafter.propose = recording
    request = Request([prompt], SamplingConfig(), StopCriteria(max_new), row_keys([0], 1))
    loop = SpeculativeSampling(3).loop(Engine(target), drafter, request)
    settled, same, accepted = list(prompt), [], 0
    while loop.active:
        out = loop.step()[0]
        gamma, seen = chains[-1]
        same.append(seen == fresh_chain(make_drafter(), target, settled, gamma, view))
        accepted += out.provenance.count("accepted")
        settled += out.tokens
    return same, accepted
