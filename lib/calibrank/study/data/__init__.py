"""The data layer (notebooks 01-02): corpora in one typed schema, splits, negatives, query sets.

- :mod:`.schema`: the records (dialogues, examples, ranking queries) and :class:`~.schema.DataError`;
- :mod:`.corpora`: the corpora by name; :mod:`.chitchat`, :mod:`.chatterbot` (offline, from
  PyPI), :mod:`.published`, :mod:`.dstc8`, :mod:`.tsv`, :mod:`.download` (MSDialog, MANtIS,
  UDC_DSTC8 in their published formats);
- :mod:`.splits`: split by dialogue, cut into (context, response) examples;
- :mod:`.io`: examples and queries on disk (Parquet, checked against their sha256);
- :mod:`.stats`: corpus statistics and the overlap of negatives with their context;
- :mod:`.negatives`: random, BM25, mixed and sentence-embedding negative samplers;
- :mod:`.querysets`: the ranking queries of every corpus, split and sampler (02's outputs);
- :mod:`.conditions`: the conditions a profile evaluates on and where Predictions live;
- :mod:`.baselines`: the rules that learn nothing, ranked on every condition.
"""

from calibrank.study.data.schema import DataError, Dialogue, Example, RankingQuery, normalise_text
from calibrank.study.data.splits import (
    SPLITS,
    TURN_SEP,
    UTTERANCE_SEP,
    dialogue_examples,
    format_context,
    split_dialogues,
    subsample,
)

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
