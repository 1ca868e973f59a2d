"""The data layer: corpora read into one typed schema, split by dialogue, cut into examples.

See :mod:`calibrank.data.schema` for the records and :mod:`calibrank.data.corpora` for the
corpora by name.
"""

from .schema import DataError, Dialogue, Example, RankingQuery, normalise_text
from .splits import SPLITS, TURN_SEP, UTTERANCE_SEP, dialogue_examples, format_context, split_dialogues, subsample

__all__ = [
    "DataError",
    "Dialogue",
    "Example",
    "RankingQuery",
    "normalise_text",
    "SPLITS",
    "TURN_SEP",
    "UTTERANCE_SEP",
    "dialogue_examples",
    "format_context",
    "split_dialogues",
    "subsample",
]
