"""The study: corpora, negative samplers, the BERT-style rankers, profiles, the workflow and the notebooks' analyses.

It sits on the core (:mod:`calibrank.metrics`, :mod:`calibrank.methods`, :mod:`calibrank.assess`) and
needs the ``study`` extra (torch, transformers, the corpora); the core never imports it.

- :mod:`.data`, :mod:`.model`, :mod:`.settings`, :mod:`.pipeline`, :mod:`.analysis`: corpora and negatives, the
  rankers and their training, the profiles, the workflow, the notebooks' tables;
- :mod:`.paths` (where a profile's files live), :mod:`.locks` (one writer per artefact, the sweep of dead
  writers' files) and :mod:`.codekey` (the cache key of a step: the code it runs).
"""
