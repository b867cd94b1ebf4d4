"""The EAGLE-3 drafter: its first guess reads the target's features, later ones its own, exactly as the
training's unrolled passes compute them; and after any run of partial acceptances its cache holds what
a drafter started afresh on the settled text holds (drafted pairs rolled back, the target's in)."""

import torch

from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.training.eagle3 import unrolled_logits
from tiny import chains_against_fresh, fresh_chain, make_eagle3, make_llama, make_tokenizer

TOK = make_tokenizer()
TARGET = make_llama(len(TOK), seed=0, layers=4)
PROMPT = [5, 9, 14, 22, 5, 9, 14, 30, 31, 5, 9, 14]


def test_the_chain_is_the_training_time_test_unrolled():
    drafter = make_eagle3(TARGET)
    guesses = fresh_chain(drafter, TARGET, PROMPT)
    assert len(guesses) == 3
    tokens = torch.tensor([PROMPT + guesses])
    with torch.no_grad():
        hidden = TARGET(tokens, output_hidden_states=True).hidden_states
        batch = {
            "tokens": tokens,
            "valid": torch.ones_like(tokens, dtype=torch.bool),
            "hidden": dict(enumerate(hidden)),
        }
        passes = unrolled_logits(drafter.head, drafter.embeddings, batch, 3)
    pair = len(PROMPT) - 2  # (feature before the pending token, the pending token)
    unrolled = [int(drafter.head.draft_ids[p[0, pair].argmax()]) for p in passes]
    assert unrolled == guesses


class Forgetful(Eagle3Drafter):
    """Negative control: never rolls its drafted pairs back."""

    def update(self, feedback):
        self._fed = torch.zeros_like(self._fed)
        super().update(feedback)


def test_after_each_step_the_cache_holds_the_settled_text():
    same, _ = chains_against_fresh(lambda: make_eagle3(TARGET, seed=1), TARGET, PROMPT)
    assert all(same)


def test_negative_control_a_drafter_that_keeps_its_drafted_pairs_is_caught():
    base = make_eagle3(TARGET, seed=1)
    same, _ = chains_against_fresh(lambda: Forgetful(base.head, base.embeddings), TARGET, PROMPT)
    assert not all(same)
