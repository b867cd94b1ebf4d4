"""Which drafter ``specdec bench server`` serves when none is given."""

from specdec.benchmarks.server_load import server_drafter
from specdec.models.packaged import BEST_DRAFTERS


def test_packaged_target_gets_its_best_measured_drafter():
    assert server_drafter("smollm2-135m", None) == BEST_DRAFTERS["smollm2-135m"]


def test_other_targets_get_prompt_lookup_and_a_given_drafter_wins():
    assert server_drafter("gpt2", None) == "prompt-lookup"
    assert server_drafter("smollm2-135m", "int8") == "int8"
