"""Training drafts: data, losses, draft construction, alignment data, the trainer, evaluation."""

from specdec.training.answers import TargetAnswer, generate_answers
from specdec.training.data import fixed_windows, read_documents, sample_windows, split_stream, tokenize_stream
from specdec.training.draft_model import DraftShape, build_draft, default_init_layers
from specdec.training.evaluate import evaluate_draft
from specdec.training.export import export_draft
from specdec.training.losses import cross_entropy, distillation, mixed_loss
from specdec.training.prompts import load_prompts
from specdec.training.trainer import PRESETS, TrainConfig, evaluate, train_draft

__all__ = [
    "PRESETS",
    "DraftShape",
    "TargetAnswer",
    "TrainConfig",
    "build_draft",
    "cross_entropy",
    "default_init_layers",
    "distillation",
    "evaluate",
    "evaluate_draft",
    "export_draft",
    "fixed_windows",
    "generate_answers",
    "load_prompts",
    "mixed_loss",
    "read_documents",
    "sample_windows",
    "split_stream",
    "tokenize_stream",
    "train_draft",
]
