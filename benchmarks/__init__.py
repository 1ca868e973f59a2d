"""Speed and memory benchmarks (``make bench``, ``python -m benchmarks``), each figure measured side by side.

- :mod:`.__main__`: the command line; runs the sections below and writes ``bench.json``,
  ``bench.md`` and ``bench.html``.
- :mod:`.retrieval`: ``negatives_bm25`` and ``negatives_embedding``, the retrieval behind the
  negative samplers (bm25s against rank_bm25, faiss against numpy) on chit-chat data.
- :mod:`.flops`: ``matmul_peak``, the machine's ``torch.mm`` GFLOP/s per precision, and the FLOP
  count of a transformer encoder from its configuration and batch shapes, so that each loop's
  achieved GFLOP/s is read as a fraction of the peak.
- :mod:`.training`: ``training_throughput``, our training loop against sentence-transformers'
  ``CrossEncoder.fit``, at fp32 and bf16, with each loop's GFLOP/s; and the profile's model on pair rows
  against each side encoded once.
- :mod:`.inference`: ``inference_per_query``, every ranker against ``bert`` on the same queries;
  ``inference_flops``, the scoring loop's GFLOP/s per precision.
- :mod:`.memory`: ``peak_memory`` of a training run and of PG-DRR's Gibbs sampler, each in a fresh
  subprocess (``python -m benchmarks.memory --child``).
- :mod:`.clock`: ``clock_under_load``, a 3:1 pair of workloads on process CPU time and wall time,
  alone and beside spinning processes (the clock notebook 07 decides its cost claims on).
- :mod:`.assess_io`: ``assess_io``, reading a synthetic 7 M-line TREC run with its qrels against
  ir_measures' reader (lines/s, peak memory), and ranx's ranking metrics on the same run.
- :mod:`.assess_engine`: ``assess_engine``, wall time, CPU time and peak memory of a full
  assessment (:func:`calibrank.assess.engine.assess`) of a synthetic run at scale, in a subprocess.
- :mod:`.core`: ``core_install``, the core alone in a fresh venv: packages, size, the CPU time of ``import
  calibrank`` and ``calibrank --help``.
- :mod:`.guarantee`: ``guarantee``, the certified cutoff on known-truth data: violations of its
  promise, certified rate and kept share across a grid, beside the t-test procedure before it and
  MAPIE's ``BinaryClassificationController``.
- :mod:`.common`: logging, ratios, the target check shown beside each ratio, and the launcher of a
  section's fresh subprocess.
- :mod:`.probe_joint`: not a ``make bench`` section; ``bert`` (or another ranker with a model of its
  own) trained per ``training.joint_layers`` and head at equal steps, against the zero-shot
  bi-encoder on the same test queries.
- :mod:`.fidelity`: not a ``make bench`` section; after a report, the gate on training each context
  once: R10@1 of ``bert``, MC Dropout and the ensemble against the results table's cells before.
- :mod:`.render`: ``bench.json`` merged and rendered as markdown and HTML.

The machine a run took place on is described by :func:`calibrank.study.analysis.efficiency.machine_info`.
Nothing is imported here, so that a memory job's imports-only baseline holds only what it needs.
"""
