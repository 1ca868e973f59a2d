"""How long ``make report`` will take on this machine, said before it starts, and how far along it is.

Three parts, one concern: the wall time of a report run.

**Measured** (:func:`measure_rates`, about 20 s): the throughput of the profile's backbone on
this machine, built by the code path training uses (``ranker._build``: the backbone with the
profile's dropout and pooling, and the cross-encoder head), on real (context, response) pairs of
the first training corpus tokenised at ``training.max_length``, in the profile's precision
(bf16 autocast where ``auto`` finds it), on the device a ranker would pick:

- training pairs/s: forward + backward + clipped fused AdamW step of ``training.batch_size``
  pairs, as one step of :func:`calibrank.training.train_model`;
- inference pairs/s: :func:`calibrank.training.score_pairs` at ``training.eval_batch_size``,
  deterministic, and with dropout on (MC dropout's passes cost about twice as much on a CPU);
- each with ``cores / jobs`` threads (what every notebook of the training phase gets), and
  inference again with every core (what the steps that run alone get);
- the seconds to read each corpus (unless ``runs/<profile>/data/summary.json`` has them) and
  to load the backbone.

**Counted** from the profile and the data sizes (the examples per split and the response pools
of ``summary.json``, or of the corpora just read): training pairs x epochs of every trained
model (``bert``, which ``mc_dropout``, ``temperature`` and ensemble member 0 share, each other
ranker's model, and every further ensemble member, :func:`calibrank.grid.run_models`; none for a
model whose folder in the model cache is finished already, :func:`calibrank.grid.trained_models`),
plus the validation pairs scored at each evaluation; inference pairs of every condition a ranker
predicts (:func:`calibrank.experiment.ranker_conditions`), each distinct (context, response) pair
of a split once (as :meth:`calibrank.rankers.base.Ranker.predict_many` scores them), x its passes: ``mc_dropout`` T
stochastic passes, an ensemble M members (member 0's test logits are ``bert``'s, reused), a GP
ranker one pass (its posterior arithmetic is not counted), ``temperature`` only the validation
logits it fits on (the test logits are ``bert``'s).

**Estimated** (constants below, from the ``laptop`` and ``smoke`` runs on a 2-core CPU): the
start of a notebook (kernel, imports, writing it and its HTML), the negatives (BM25 indexes,
the embedding sampler and the bi-encoder rule encode every validation and test response and
context, costed as a fraction of a pair at the measured inference rate), the analyses (per
Predictions file), the efficiency notebook (every ranker on 30 queries, 6 times, at one thread), and the share
of a split's pairs that are distinct across its conditions before the query sets exist
(:data:`DISTINCT_SHARE`; counted from the query sets once notebook 02 has built them).

**Scheduled**: the Makefile runs ``jobs`` notebooks side by side. Each phase (data, negatives,
training runs, analyses 04-06, efficiency, the index) takes the longer of its longest chain
(``bert`` before the runs that reuse it) and its summed step time / jobs; 01, 02 and 07 run
alone. Steps that make would not run (their outputs are newer than their inputs, asked with
``make -n``) count zero.

The estimate goes to ``reports/<profile>/eta.json``: per step its seconds and whether it is
pending, the measured rates and the machine. During the run each finished step calls
``python -m calibrank.eta progress PROFILE STEP --seconds S``, which prints the time since the
start, the step's own time and what remains: the same schedule over the pending steps whose
output is not yet newer than the start (a running step counts whole).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import registry
from .config import Config, ConfigError, RankerName, load_config, parse_run_name, train_runs
from .runs import project_root, read_json, write_json

__all__ = [
    "ANALYSES",
    "EtaError",
    "Rates",
    "Sizes",
    "DISTINCT_SHARE",
    "count_distinct",
    "StepEstimate",
    "Estimate",
    "measure_rates",
    "read_sizes",
    "estimate",
    "schedule",
    "pending_from_make",
    "pending_steps",
    "eta_path",
    "write_eta",
    "read_eta",
    "progress_line",
    "summary_line",
    "main",
]

#: Seconds to start a notebook under papermill (kernel, imports, profile), write it and convert it to HTML.
#: The lightest notebooks of the laptop and smoke runs (03_train-temperature, 05_risk_aware) took 10-13 s.
NOTEBOOK_OVERHEAD_S = 12.0
#: Seconds to start ``python -m calibrank.grid train`` (imports, query sets) besides loading the backbone.
PROCESS_OVERHEAD_S = 6.0
#: Seconds of 02_negatives per corpus besides encoding (BM25 indexes over the pools, negatives, rule checks).
NEGATIVES_PER_CORPUS_S = 20.0
#: Cost of encoding one text alone (a response or a context) relative to one (context, response) pair, the rest of
#: 02's work (BM25 over the pools, the rules) included: the laptop run's 02 took 319 s (query sets 175 s, rules
#: 136 s) for ~51,000 texts at 157 pairs/s (2 threads, bf16), i.e. 0.8 (0.25 before, which estimated 133 s).
TEXT_PER_PAIR = 0.8
#: Share of a split's (context, response) pairs over its conditions that are distinct, while its query sets do not
#: exist yet (a fresh run; counted from them afterwards, :func:`count_distinct`). The samplers of a corpus share its
#: contexts, true responses and many negatives; measured on laptop (4 samplers x 9 negatives): test 10,051 of 16,000
#: pairs (0.63), validation 5,525 of 8,000 (0.69); keyed by query as MC Dropout's masks are, 0.76 and 0.76. With one
#: sampler per split every pair is distinct (1.0).
DISTINCT_SHARE = {False: 0.66, True: 0.76}
#: Seconds per Predictions file read by the analyses (laptop: 04 22 s, 05 11 s, 06 39 s for 104 files).
ANALYSIS_PER_FILE_S = {"04_calibration": 0.1, "05_risk_aware": 0.02, "06_nota": 0.25}
#: Seconds per Predictions file of a notebook this module does not know (a pending step make names, e.g. a new
#: analysis): costed as the slowest analysis above.
OTHER_NOTEBOOK_PER_FILE_S = 0.25
ANALYSES = tuple(ANALYSIS_PER_FILE_S) + ("07_efficiency",)
#: 07_efficiency: queries, timed calls per ranker (one warm-up on 4 queries, counted as a whole call, and 5
#: interleaved rounds), at one intra-op thread (notebook 07's defaults).
EFFICIENCY_QUERIES = 30
EFFICIENCY_CALLS = 6
#: Seconds for ``python -m calibrank.report`` (the index page).
INDEX_S = 8.0



#: A per-query-mask MC Dropout pass costs a deterministic pass plus drawing and applying its
#: masks (measured at about 5% of a pass on all-MiniLM-L6-v2; calibrank.rankers.mc_dropout).
PER_QUERY_MASK_OVERHEAD = 1.05


def _mc_rate(rk, rates: "Rates") -> float:
    """Pairs/s of one MC Dropout pass: a deterministic pass with per-query masks, else dropout on in training mode."""
    masks = getattr(getattr(rk.mc_dropout, "masks", None), "value", "per_pair")
    return rates.infer / PER_QUERY_MASK_OVERHEAD if masks == "per_query" else rates.dropout


class EtaError(RuntimeError):
    """The estimate cannot be made (e.g. the data sizes are unknown); the message says why."""


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Rates:
    """Measured throughput on this machine (pairs per second) and where it was measured."""

    train: float  #: training pairs/s, ``threads`` threads
    infer: float  #: deterministic inference pairs/s, ``threads`` threads
    dropout: float  #: inference pairs/s with dropout on (MC dropout), ``threads`` threads
    solo_infer: float  #: deterministic inference pairs/s with every core (steps that run alone)
    threads: int = 1
    solo_threads: int = 1
    backbone_load_s: float = 0.0  #: seconds to build the model (backbone + head), imports excluded
    device: str = "cpu"
    bf16: bool = False
    mean_tokens: float = 0.0  #: mean tokens of the measured pairs
    seconds: float = 0.0  #: how long the measurement took

    def check(self) -> None:
        for name in ("train", "infer", "dropout", "solo_infer"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
                raise EtaError(f"rates.{name}: expected a positive number of pairs/s, got {value!r}")


@dataclass(frozen=True)
class Sizes:
    """Examples per split and response pool sizes per split of every corpus, and seconds to read each corpus."""

    examples: Mapping[str, Mapping[str, int]]
    pools: Mapping[str, Mapping[str, int]]
    load_seconds: Mapping[str, float] = field(default_factory=dict)
    #: distinct pairs / pairs of each (split, keyed by query) over the split's conditions, where counted
    distinct: Mapping[tuple[str, bool], float] = field(default_factory=dict)

    def n(self, corpus: str, split: str) -> int:
        try:
            return int(self.examples[corpus][split])
        except KeyError:
            raise EtaError(f"sizes: no example count for corpus {corpus!r}, split {split!r}") from None

    def share(self, split: str, by_query: bool, samplers: int) -> float:
        """The share of a split's condition pairs that a ranker scores (each distinct pair once): counted, else
        :data:`DISTINCT_SHARE` (1.0 with one sampler)."""
        if (split, by_query) in self.distinct:
            return float(self.distinct[(split, by_query)])
        return DISTINCT_SHARE[by_query] if samplers > 1 else 1.0


def count_distinct(cfg: Config) -> dict[tuple[str, bool], float]:
    """:attr:`Sizes.distinct` from the profile's validation and test query sets; empty while any is not built."""
    from .experiment import eval_conditions
    from .querysets import load_query_set
    from .rankers.base import distinct_pairs

    out: dict[tuple[str, bool], float] = {}
    for split in ("valid", "test"):
        try:
            sets = [load_query_set(cfg, c.corpus, c.split, c.sampler, c.k) for c in eval_conditions(cfg, (split,))]
        except (FileNotFoundError, OSError, ValueError):
            return {}
        total = sum(len(q.candidates) for queries in sets for q in queries)
        if not total:
            return {}
        for by_query in (False, True):
            out[(split, by_query)] = len(distinct_pairs(sets, by_query=by_query)[0]) / total
    return out


def read_sizes(cfg: Config) -> Sizes | None:
    """The sizes notebook 01 recorded (``runs/<profile>/data/summary.json``), or None before it ran."""
    path = project_root() / "runs" / cfg.profile / "data" / "summary.json"
    if not path.exists():
        return None
    corpora = read_json(path).get("corpora", {})
    if any(c.value not in corpora for c in cfg.data.corpora):
        return None
    return Sizes(examples={c: dict(e.get("examples", {})) for c, e in corpora.items()},
                 pools={c: dict(e.get("pool", {})) for c, e in corpora.items()},
                 load_seconds={c: float(e.get("seconds", 0.0)) for c, e in corpora.items()})


def _corpus_sizes(cfg: Config) -> tuple[Sizes, dict]:
    """Read every corpus of the profile as notebook 01 does: sizes, seconds, and the loaded splits."""
    from .data.corpora import load_corpus

    examples, pools, seconds, loaded = {}, {}, {}, {}
    for corpus in cfg.data.corpora:
        t0 = time.perf_counter()
        try:
            splits = load_corpus(corpus, cfg.data, cfg.seed)
        except Exception as exc:  # a research corpus not downloaded, an unreadable file: say which
            raise EtaError(f"corpus {corpus.value!r} cannot be read to count its examples ({exc})") from exc
        seconds[corpus.value] = time.perf_counter() - t0
        examples[corpus.value] = {s: len(v) for s, v in splits.examples.items()}
        pools[corpus.value] = {s: len(v) for s, v in splits.pools.items()}
        loaded[corpus.value] = splits
    return Sizes(examples, pools, seconds), loaded


# ----------------------------------------------------------------------------- measurement


@functools.lru_cache(maxsize=2)
def _model(training, context_style, device: str | None):
    """The ``bert`` ranker's model as training builds it (cached: one backbone load per process and settings)."""
    import tempfile

    from .rankers import make_ranker

    ranker = make_ranker(RankerName.bert, training=training, models_dir=Path(tempfile.gettempdir()),
                         seed=0, context_style=context_style, device=device)
    t0 = time.perf_counter()
    model, backbone = ranker._build(0)
    model.to(ranker.device)
    return ranker, model, backbone, time.perf_counter() - t0


def _sample_queries(cfg: Config, loaded: Mapping | None, n: int) -> list:
    """Up to ``n`` training queries of the first training corpus: the cached query set, else examples with a random
    negative from the same split (the lengths are what matters)."""
    from .data.schema import RankingQuery

    corpus = cfg.rankers.train_corpora[0].value
    try:
        from .querysets import load_query_set

        queries = load_query_set(cfg, corpus, "train", cfg.negatives.train)
        if queries:
            return list(queries[:n])
    except (FileNotFoundError, OSError, ValueError):
        pass
    if loaded is None or corpus not in loaded:
        from .data.corpora import load_corpus

        splits = load_corpus(corpus, cfg.data, cfg.seed)
    else:
        splits = loaded[corpus]
    examples = splits.examples["train"][:n]
    if not examples:
        raise EtaError(f"corpus {corpus!r} has no training example to measure on")
    out = []
    for i, ex in enumerate(examples):
        other = examples[(i + len(examples) // 2) % len(examples)].response
        out.append(RankingQuery(ex.eid, ex.context, (ex.response, other), (1, 0)))
    return out


def _timed_batches(run, batches: list, budget_s: float, threads: int, cpu: bool) -> tuple[int, float]:
    """Pairs and seconds of ``run(batch)`` (which returns its pair count) in the steady state: one untimed pass over
    ``batches``, then timed passes over the same batches until ``budget_s`` is spent (at least one whole pass).

    The untimed pass matters: the first call of each batch shape builds its kernels (oneDNN primitives, autocast
    weight casts) and the optimizer's first step allocates its state. A training run meets each of its few dozen
    widths hundreds of times, so its rate is the steady one; timing first calls (as an earlier version did, with a
    2-pair warm-up) measured 7.4 training pairs/s where the laptop run trained at 17.5-18.7 (bf16, 1 thread each,
    two side by side) and 79 inference pairs/s where it scored at 104.

    On a CPU the seconds are the smaller of the wall time and the process's CPU time per thread: other programs
    that share the cores during the measurement do not slow the rate down (the estimate is for a machine the
    report has to itself).
    """
    for index in batches:
        run(index)
    pairs, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        for index in batches:
            pairs += run(index)
        if time.perf_counter() - t0 >= budget_s:
            break
    wall = time.perf_counter() - t0
    return pairs, min(wall, (time.process_time() - c0) / max(1, threads)) if cpu else wall


def measure_rates(cfg: Config, *, threads: int, solo_threads: int | None = None, budget_s: float = 6.0,
                  loaded: Mapping | None = None, device: str | None = None) -> Rates:
    """Throughput of the profile's backbone on this machine (module docstring); about ``budget_s`` seconds
    after the backbone is loaded, split between the four rates."""
    import numpy as np
    import torch

    from .training import _autocast, collate, length_batches, score_pairs, use_bf16

    started = time.perf_counter()
    t = cfg.training
    solo_threads = solo_threads or threads
    before = torch.get_num_threads()
    ranker, model, backbone, load_s = _model(t, cfg.data.context_style, device)
    n_train = t.batch_size * 4  # four batches of four widths: one untimed pass, then timed passes
    n_eval = max(t.eval_batch_size * 3, n_train)
    queries = _sample_queries(cfg, loaded, max(n_train, n_eval) // 2 + 1)
    pairs = ranker._encode(backbone.tokenizer, queries, training=True)
    dev = ranker.device
    bf16 = use_bf16(t.precision, dev)
    cpu = dev.type == "cpu"
    # training dominates the estimate: half the budget, the rest shared by the inference rates
    share = budget_s / (6 if solo_threads != threads else 4)
    try:
        torch.set_num_threads(max(1, threads))
        # training: one step of the loop (forward, loss, backward, clipping, fused AdamW)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=t.lr, weight_decay=t.weight_decay,
                                      fused=dev.type in ("cpu", "cuda"))
        model.train()

        def train_step(index) -> int:
            batch = {k: v.to(dev) for k, v in collate(pairs, index).items()}
            labels = torch.as_tensor(pairs.labels[index], device=dev)
            with _autocast(dev, bf16):
                loss = ranker._loss(model, batch, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
            optimizer.step()
            float(loss.item())
            return len(index)

        train_batches = length_batches(pairs.lengths[:n_train], t.batch_size, seed=0)
        done, secs = _timed_batches(train_step, train_batches, 2 * share, threads, cpu)
        train_rate = done / secs
        optimizer.zero_grad(set_to_none=True)

        eval_idx = np.arange(min(len(pairs), n_eval))
        eval_pairs = dataclasses.replace(pairs, input_ids=[pairs.input_ids[i] for i in eval_idx],
                                         token_type_ids=[pairs.token_type_ids[i] for i in eval_idx],
                                         labels=pairs.labels[eval_idx], query_index=pairs.query_index[eval_idx])
        eval_batches = length_batches(eval_pairs.lengths, t.eval_batch_size)
        # Scoring sorts a split's thousands of pairs by length, so its batches carry almost no padding; these few
        # batches carry some. Rates are counted in the sample's padded tokens and given back per pair of the sample's
        # real length (laptop, 1 thread: 76 pairs/s uncorrected, 77-87 corrected, 104 in the run: part of the gap stays).
        padded = sum(int(eval_pairs.lengths[b].max()) * len(b) for b in eval_batches) / float(eval_pairs.lengths.sum())

        def scorer(dropout: bool):
            def run(index) -> int:
                sub = dataclasses.replace(eval_pairs, input_ids=[eval_pairs.input_ids[i] for i in index],
                                          token_type_ids=[eval_pairs.token_type_ids[i] for i in index],
                                          labels=eval_pairs.labels[index], query_index=eval_pairs.query_index[index])
                score_pairs(model, sub, batch_size=t.eval_batch_size, dropout=dropout, precision=t.precision, device=dev)
                return len(index)
            return run

        done, secs = _timed_batches(scorer(False), eval_batches, share, threads, cpu)
        infer_rate = padded * done / secs
        done, secs = _timed_batches(scorer(True), eval_batches, share, threads, cpu)
        dropout_rate = padded * done / secs
        solo_rate = infer_rate
        if solo_threads != threads:
            torch.set_num_threads(max(1, solo_threads))
            done, secs = _timed_batches(scorer(False), eval_batches, share, solo_threads, cpu)
            solo_rate = padded * done / secs
    finally:
        torch.set_num_threads(before)
        model.eval()
    rates = Rates(train=train_rate, infer=infer_rate, dropout=dropout_rate, solo_infer=solo_rate, threads=threads,
                  solo_threads=solo_threads, backbone_load_s=load_s, device=str(dev), bf16=bool(bf16),
                  mean_tokens=float(pairs.lengths.mean()), seconds=time.perf_counter() - started)
    rates.check()
    return rates


# ----------------------------------------------------------------------------- the arithmetic


@dataclass(frozen=True)
class StepEstimate:
    """Estimated seconds of one make step, split into training, inference and the rest."""

    name: str
    phase: str  #: data, negatives, train, analyses, efficiency, index
    training: float = 0.0
    inference: float = 0.0
    other: float = 0.0
    after: str | None = None  #: a step of the same phase that must finish first (bert before what reuses it)
    pending: bool = True  #: whether make would run it (False: its outputs are up to date)

    @property
    def seconds(self) -> float:
        return self.training + self.inference + self.other


@dataclass(frozen=True)
class Estimate:
    """Every step of the profile's report with its estimate, and the wall time of the pending ones."""

    profile: str
    jobs: int
    steps: tuple[StepEstimate, ...]

    @property
    def pending(self) -> list[StepEstimate]:
        return [s for s in self.steps if s.pending]

    @property
    def seconds(self) -> float:
        """Wall time of the pending steps with ``jobs`` side by side (:func:`schedule`)."""
        return schedule(self.pending, self.jobs)

    def work(self) -> dict[str, float]:
        """Summed seconds of the pending steps by kind (training, inference, other): work, not wall time."""
        return {kind: sum(getattr(s, kind) for s in self.pending) for kind in ("training", "inference", "other")}


_PHASES = ("data", "negatives", "train", "analyses", "efficiency", "index")
_SOLO_PHASES = ("data", "negatives", "efficiency", "index")


def schedule(steps: Iterable[StepEstimate], jobs: int) -> float:
    """Wall seconds of ``steps`` under ``make -j jobs``: phases one after the other; a phase that runs side by side
    takes the longer of its longest chain (a step plus the steps that wait for it) and its summed time / jobs."""
    jobs = max(1, int(jobs))
    by_phase: dict[str, list[StepEstimate]] = {}
    for s in steps:
        by_phase.setdefault(s.phase, []).append(s)
    total = 0.0
    for phase, group in by_phase.items():
        work = sum(s.seconds for s in group)
        if phase in _SOLO_PHASES or jobs == 1:
            total += work
            continue
        own = {s.name: s.seconds for s in group}
        chains: dict[str, float] = {}
        for s in group:
            head = own.get(s.after, 0.0) if s.after else 0.0
            chains[s.name] = head + s.seconds
        total += max(max(chains.values()), work / jobs)
    return total


def _pairs(sizes: Sizes, corpus: str, split: str, k: int) -> int:
    return sizes.n(corpus, split) * (1 + k)


def _evaluations(n_pairs: int, t) -> int:
    """How many times the loop validates: every ``eval_every`` steps and at the end of each epoch, a step that
    is both counted once. Counted, never listed: an epoch end ``e * per_epoch`` is a multiple of ``eval_every``
    exactly when ``e`` is a multiple of ``eval_every / gcd(per_epoch, eval_every)``."""
    per_epoch = max(1, math.ceil(n_pairs / t.batch_size))
    if not t.eval_every:
        return t.epochs
    both = t.epochs // (t.eval_every // math.gcd(per_epoch, t.eval_every))
    return t.epochs + per_epoch * t.epochs // t.eval_every - both


def _condition_pairs(cfg: Config, sizes: Sizes, ranker: RankerName) -> dict[str, float]:
    """Pairs scored per split (valid, test) when ``ranker`` predicts every condition it is predicted on: the
    distinct pairs of the split's conditions (MC Dropout keys them by query, its masks being per query)."""
    from .experiment import ranker_conditions

    out = {"valid": 0.0, "test": 0.0}
    for cond in ranker_conditions(cfg, ranker):
        out[cond.split] += _pairs(sizes, cond.corpus, cond.split, cond.k)
    by_query = ranker is RankerName.mc_dropout
    samplers = len(cfg.negatives.eval)
    return {split: n * sizes.share(split, by_query, samplers) for split, n in out.items()}


def estimate(cfg: Config, rates: Rates, sizes: Sizes, *, jobs: int = 1, pending: set[str] | None = None,
             trained: Iterable[str] = ()) -> Estimate:
    """Per-step seconds of the profile's report on a machine with ``rates`` (module docstring); pure arithmetic.

    ``pending``: the step names make would run (None: all of them). Step names are the Makefile's:
    ``01_data``, ``02_negatives``, ``03_train-<run>``, ``ensemble-<corpus>-seed<N>-member<M>``, the analyses and
    ``index``. ``trained``: grid models already in the model cache (:func:`calibrank.grid.trained_models`):
    a step that only loads them costs no training.
    """
    from .grid import run_models, shared_runs

    rates.check()
    t, neg, rk = cfg.training, cfg.negatives, cfg.rankers
    steps: list[StepEstimate] = []

    def add(name: str, phase: str, **parts: Any) -> None:
        steps.append(StepEstimate(name, phase, pending=pending is None or name in pending, **parts))

    add("01_data", "data", other=NOTEBOOK_OVERHEAD_S + sum(sizes.load_seconds.get(c.value, 0.0) for c in cfg.data.corpora))
    texts = 0
    for c in cfg.data.corpora:
        for split in ("valid", "test"):
            if "embedding" in {s.value for s in neg.eval}:
                texts += sizes.pools.get(c.value, {}).get(split, 0)
            texts += sizes.n(c.value, split) * len(neg.eval) * (2 + neg.eval_k)  # bi-encoder: context + candidates
    add("02_negatives", "negatives",
        other=NOTEBOOK_OVERHEAD_S + NEGATIVES_PER_CORPUS_S * len(cfg.data.corpora) + texts * TEXT_PER_PAIR / rates.solo_infer)

    models = run_models(cfg)
    shared = shared_runs(cfg)
    cached, counted = set(trained), set()
    bert_in = RankerName.bert in rk.names
    n_files = 0
    for run in train_runs(cfg):
        ranker, corpus, seed = parse_run_name(run, cfg)
        c = corpus.value
        train_pairs = _pairs(sizes, c, "train", neg.train_k)
        valid_pairs = _pairs(sizes, c, "valid", neg.train_k)

        def train_seconds(r: RankerName) -> float:
            fit = train_pairs * t.epochs / rates.train  # pg_drr's Gibbs steps: 429 s against bert's 447 s on laptop
            extra = rk.pg_drr.inducing if r is RankerName.pg_drr else 0
            return fit + _evaluations(train_pairs, t) * (valid_pairs + extra) / rates.infer

        training = 0.0
        for model in models[run]:
            if model in counted or "-member" in model:
                continue
            counted.add(model)
            if model not in cached:
                training += train_seconds(registry.key(model.split("-")[0]))  # the ranker whose model it is (grid)
        split_pairs = _condition_pairs(cfg, sizes, ranker)
        n_files += len(_conditions(cfg, ranker))
        every = split_pairs["valid"] + split_pairs["test"]
        shared_test = split_pairs["test"] if bert_in else 0
        if ranker is RankerName.mc_dropout:
            inference = every * rk.mc_dropout.passes / _mc_rate(rk, rates)
        elif ranker is RankerName.ensemble:
            inference = (every * rk.ensemble.members - shared_test) / rates.infer
        elif ranker is RankerName.temperature:
            inference = (valid_pairs + split_pairs["test"] - shared_test) / rates.infer
        elif ranker is RankerName.pg_drr:
            inference = (every + rk.pg_drr.inducing) / rates.infer
        else:
            inference = every / rates.infer
        loads = rk.ensemble.members if ranker is RankerName.ensemble else 1
        after = f"03_train-{shared[run]}" if run in shared else None  # it loads the model that run trains
        add(f"03_train-{run}", "train", training=training, inference=inference,
            other=NOTEBOOK_OVERHEAD_S + loads * rates.backbone_load_s, after=after)
        for model in models[run]:
            if "-member" in model and model not in counted:
                counted.add(model)
                add(model, "train", training=0.0 if model in cached else train_seconds(RankerName.ensemble),
                    other=PROCESS_OVERHEAD_S + rates.backbone_load_s)

    for name, per_file in ANALYSIS_PER_FILE_S.items():
        add(name, "analyses", other=NOTEBOOK_OVERHEAD_S + per_file * n_files)
    eff_pairs = EFFICIENCY_QUERIES * (1 + neg.eval_k) * EFFICIENCY_CALLS
    passes = 0.0
    for r in rk.names:
        if r is RankerName.mc_dropout:
            passes += rk.mc_dropout.passes * rates.infer / _mc_rate(rk, rates)  # a stochastic pass's cost
        elif r is RankerName.ensemble:
            passes += rk.ensemble.members
        else:
            passes += 1
    loads = sum(rk.ensemble.members if r is RankerName.ensemble else 1 for r in rk.names)
    one_thread = rates.infer / rates.threads  # a lower bound of one thread's pairs/s (threads scale sublinearly)
    add("07_efficiency", "efficiency", inference=eff_pairs * passes / one_thread,
        other=NOTEBOOK_OVERHEAD_S + loads * rates.backbone_load_s)
    add("index", "index", other=INDEX_S)
    known = {s.name for s in steps}
    for name in sorted((pending or set()) - known):  # a notebook make runs that this module does not know
        add(name, "analyses", other=NOTEBOOK_OVERHEAD_S + OTHER_NOTEBOOK_PER_FILE_S * n_files)
    return Estimate(cfg.profile, max(1, int(jobs)), tuple(steps))


def _conditions(cfg: Config, ranker: RankerName):
    from .experiment import ranker_conditions

    return ranker_conditions(cfg, ranker)


# ----------------------------------------------------------------------------- what make would run

_STEP_LINES = (
    (re.compile(r"== 03_train (\S+) \("), "03_train-{}"),
    (re.compile(r"== ensemble member (\S+) \("), "ensemble-{}"),
    (re.compile(r"== (\d\d_\w+) \("), "{}"),
    (re.compile(r"-m calibrank\.report\b"), "index"),
)


def pending_from_make(output: str) -> set[str]:
    """The steps a ``make -n index`` listing would run, from the ``== step`` lines the recipes echo."""
    found = set()
    for line in output.splitlines():
        for pattern, name in _STEP_LINES:
            m = pattern.search(line)
            if m:
                found.add(name.format(*m.groups()))
                break
    return found


def pending_steps(profile: str, jobs: int, make: str = "make") -> set[str] | None:
    """Ask ``make -n`` which steps of ``make report`` would run now; None when make cannot say."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    try:
        out = subprocess.run([make, "-n", "--no-print-directory", "index", f"PROFILE={profile}", f"JOBS={jobs}"],
                             cwd=project_root(), env=env, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return pending_from_make(out.stdout) if out.returncode == 0 else None


# ----------------------------------------------------------------------------- eta.json


def eta_path(profile: str) -> Path:
    return project_root() / "reports" / profile / "eta.json"


def _minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))} min" if seconds >= 30 else f"{round(seconds)} s"


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def summary_line(est: Estimate, rates: Rates, cores: int) -> str:
    """``estimate: ~27 min on this machine (2 cores, bf16: no) for profile laptop: ...``."""
    if not est.pending:
        return f"estimate: nothing to run for profile {est.profile} (every step is up to date)"
    work = est.work()
    where = f"{cores} cores, {rates.device}, bf16: {'yes' if rates.bf16 else 'no'}"
    side = f"{est.jobs} jobs side by side" if est.jobs > 1 else "one job at a time"
    return (f"estimate: ~{_minutes(est.seconds)} on this machine ({where}) for profile {est.profile}: "
            f"{len(est.pending)} of {len(est.steps)} steps to run, {side}; work: training {_minutes(work['training'])}, "
            f"inference {_minutes(work['inference'])}, other {_minutes(work['other'])}")


def write_eta(est: Estimate, rates: Rates, *, started: float, cores: int, measured_in: float,
              note: str = "") -> Path:
    """Write ``reports/<profile>/eta.json`` (atomically)."""
    payload = {
        "profile": est.profile,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "started": float(started),
        "jobs": est.jobs,
        "cores": cores,
        "seconds": round(est.seconds, 1),
        "work": {k: round(v, 1) for k, v in est.work().items()},
        "rates": dataclasses.asdict(rates),
        "measured_in": round(measured_in, 2),
        "note": note,
        "steps": [{"name": s.name, "phase": s.phase, "seconds": round(s.seconds, 1), "training": round(s.training, 1),
                   "inference": round(s.inference, 1), "other": round(s.other, 1), "after": s.after,
                   "pending": s.pending} for s in est.steps],
    }
    return write_json(eta_path(est.profile), payload)


def read_eta(path: str | os.PathLike) -> tuple[Estimate, dict]:
    """The :class:`Estimate` stored in an ``eta.json`` and the file's other fields; a ``ValueError`` if it is not one."""
    data = read_json(path)
    try:
        steps = tuple(StepEstimate(str(s["name"]), s["phase"], training=float(s["training"]),
                                   inference=float(s["inference"]), other=float(s["other"]), after=s.get("after"),
                                   pending=bool(s["pending"]))
                      for s in data["steps"])
        return Estimate(str(data["profile"]), int(data["jobs"]), steps), data
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not an estimate written by calibrank.eta ({exc!r})") from None


# ----------------------------------------------------------------------------- progress


def step_output(profile: str, step: str) -> Path:
    """The file a finished step leaves (its mtime says when it finished)."""
    root = project_root()
    if step == "index":
        return root / "reports" / profile / "index.html"
    if step.startswith("ensemble-") and "-member" in step:
        return root / "runs" / profile / "grid" / f"{step}.json"
    return root / "reports" / profile / f"{step}.ipynb"


def _finished_since(profile: str, steps: Iterable[str], since: float) -> set[str]:
    out = set()
    for step in steps:
        try:
            if step_output(profile, step).stat().st_mtime >= since:
                out.add(step)
        except OSError:
            continue
    return out


def progress_line(est: Estimate, step: str, *, step_seconds: float | None, elapsed: float | None,
                  finished: set[str]) -> str:
    """``[12:03 elapsed] 03_train-sngp-chitchat done (4:10, estimate 3:50); ~14 min left``.

    ``finished``: the steps done so far in this run (``step`` among them). What is left is :func:`schedule` over the
    pending steps not finished, each counted whole (one that is running too), with the run's jobs side by side.
    """
    by_name = {s.name: s for s in est.steps}
    own = _clock(step_seconds) if step_seconds is not None else ""
    if step in by_name:
        own = f"{own}, estimate {_clock(by_name[step].seconds)}" if own else f"estimate {_clock(by_name[step].seconds)}"
    head = f"[{_clock(elapsed)} elapsed] " if elapsed is not None else ""
    left = [s for s in est.pending if s.name not in finished | {step}]
    if not left:
        tail = "nothing left"
    else:
        side = f", {est.jobs} side by side" if est.jobs > 1 else ""
        tail = f"~{_minutes(schedule(left, est.jobs))} left ({len(left)} steps{side})"
    return f"{head}{step} done{f' ({own})' if own else ''}; {tail}"


def progress(profile: str, step: str, step_seconds: float | None, *, run_start: float | None = None) -> str:
    """The progress line of ``step`` of the run that started at ``run_start`` (``$CALIBRANK_RUN_START``).

    Without an estimate of that run (no ``eta.json``, or one made for another start) the line says only the step
    and its time.
    """
    if run_start is None:
        env = os.environ.get("CALIBRANK_RUN_START")
        run_start = float(env) if env and env.replace(".", "", 1).isdigit() else None
    plain = f"{step} done" + (f" ({_clock(step_seconds)})" if step_seconds is not None else "")
    path = eta_path(profile)
    if run_start is None or not path.exists():
        return plain
    try:
        est, data = read_eta(path)
    except ValueError:
        return plain
    if abs(float(data.get("started", -1)) - run_start) > 1.0:
        return plain
    finished = _finished_since(profile, (s.name for s in est.pending), run_start)
    return progress_line(est, step, step_seconds=step_seconds, elapsed=time.time() - run_start, finished=finished)


# ----------------------------------------------------------------------------- command line


def run_estimate(profile: str, *, jobs: int, cores: int, started: float, make: str | None = "make",
                 budget_s: float = 6.0) -> str:
    """Measure, count, schedule; write ``eta.json``; return the one line to print."""
    t0 = time.perf_counter()
    cfg = load_config(profile)
    sizes, loaded = read_sizes(cfg), None
    if sizes is None:
        sizes, loaded = _corpus_sizes(cfg)
    sizes = dataclasses.replace(sizes, distinct=count_distinct(cfg))
    threads = max(1, cores // max(1, jobs))
    rates = measure_rates(cfg, threads=threads, solo_threads=cores, budget_s=budget_s, loaded=loaded)
    pending = pending_steps(cfg.profile, jobs, make) if make else None
    notes = [] if make is None or pending is not None else ["make -n could not say which steps are done: all counted"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > cores:
        notes.append(f"load average {load:.1f} on {cores} cores while measuring: other programs may have slowed it")
    note = "; ".join(notes)
    from .grid import trained_models

    est = estimate(cfg, rates, sizes, jobs=jobs, pending=pending, trained=trained_models(cfg))
    measured_in = time.perf_counter() - t0
    write_eta(est, rates, started=started, cores=cores, measured_in=measured_in, note=note)
    line = summary_line(est, rates, cores)
    return f"{line} (measured in {measured_in:.0f} s{'; ' + note if note else ''})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibrank.eta", description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="params/<profile>.yaml")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks side by side (the Makefile's REPORT_JOBS)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores of this machine (nproc)")
    parser.add_argument("--started", type=float, default=None, help="start of the run, seconds since the epoch")
    parser.add_argument("--make", default="make", help="make program asked which steps are pending ('' not to ask)")
    parser.add_argument("--budget", type=float, default=6.0, help="seconds of throughput measurement")
    return parser


def _progress_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibrank.eta progress",
                                     description="print one line for a finished step: elapsed, its time, what is left")
    parser.add_argument("profile")
    parser.add_argument("step", help="the Makefile's step name, e.g. 03_train-sngp-chitchat")
    parser.add_argument("--seconds", type=float, default=None, help="the step's own wall time")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.eta PROFILE [--jobs N]`` and ``python -m calibrank.eta progress PROFILE STEP``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["progress"]:
        p = _progress_parser().parse_args(args[1:])
        try:
            print(progress(p.profile, p.step, p.seconds), flush=True)
        except Exception as exc:  # a progress line never stops the run
            print(f"{p.step} done (progress unavailable: {exc})", flush=True)
        return 0
    a = _parser().parse_args(args)
    try:
        line = run_estimate(a.profile, jobs=a.jobs, cores=a.cores, started=time.time() if a.started is None else a.started,
                            make=a.make or None, budget_s=a.budget)
    except (ConfigError, EtaError) as exc:
        print(f"estimate: unavailable ({exc})", file=sys.stderr)
        return 1
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
