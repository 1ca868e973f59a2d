import dataclasses
import json
import re

import pytest

from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import Corpus, SamplerName
from calibrank.study.settings.config import load_config
from conftest import REPO


@pytest.mark.parametrize("profile", ["smoke", "laptop", "paper"])
def test_every_shipped_profile_loads(profile):
    cfg = load_config(REPO / "params" / f"{profile}.yaml")
    assert cfg.profile == profile
    assert cfg.data.corpora and cfg.negatives.eval
    json.dumps(cfg.to_dict())  # plain data, enums as names


def test_default_profile_uses_offline_corpora_and_the_papers_candidate_counts():
    cfg = load_config(REPO / "params" / "laptop.yaml")
    assert cfg.data.corpora == (Corpus.chitchat, Corpus.chatterbot)
    # Balanced 1:1 training pairs and 1 + 9 candidates as in the first paper; the training sampler
    # is a test condition too (the in-distribution one), beside random, BM25 and embedding negatives.
    assert (cfg.negatives.train, cfg.negatives.train_k, cfg.negatives.eval_k) == (SamplerName.mixed, 1, 9)
    assert cfg.negatives.train in cfg.negatives.eval and {
        SamplerName.random,
        SamplerName.bm25,
        SamplerName.embedding,
    } <= set(cfg.negatives.eval)
    assert cfg.negatives.max_context_jaccard == 0.5 and cfg.negatives.exclude_own_dialogue


@pytest.mark.parametrize(
    "text, needles",
    [
        (
            "profile: x\ntraining: {pooling: segments}\nrankers: {names: [bert, sngp], sngp: {spectral_norm: pooler}}\n",
            ["rankers.sngp.spectral_norm", "pooler", "segments"],
        ),
        ("profile: x\nnegatives: {max_context_jaccard: 1.5}\n", ["negatives.max_context_jaccard", "(0, 1]"]),
        ("profile: x\nnegatives: {mixed: {bm25_share: -0.1}}\n", ["negatives.mixed.bm25_share", "[0, 1]"]),
        ("profile: x\ntraining: {pooling: cls}\n", ["training.pooling", "'cls'"]),
    ],
)
def test_protocol_settings_are_checked(tmp_path, text, needles):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    for needle in needles:
        assert needle in str(err.value)


def _write(tmp_path, text, name="x"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, needles",
    [
        ("profile: x\ndata: {max_dialogs: 5}\n", ["data.max_dialogs", "unknown key", "did you mean 'max_dialogues'"]),
        ("profile: x\nnegativs: {}\n", ["negativs", "unknown key", "did you mean 'negatives'"]),
        ("profile: x\ndata: {max_dialogues: many}\n", ["data.max_dialogues", "expected an integer or null", "'many'"]),
        ("profile: x\nseed: 1.5\n", ["seed", "expected an integer"]),
        ("profile: x\nseed: true\n", ["seed", "expected an integer"]),
        ("profile: x\nnegatives: {eval: [random, bm52]}\n", ["negatives.eval[1]", "did you mean 'bm25'"]),
        ("profile: x\nnegatives: {eval_k: 0}\n", ["negatives.eval_k", "positive integer"]),
        ("profile: x\ndata: {split: {train: 0.5, valid: 0.1, test: 0.1}}\n", ["data.split.train", "sum to 1"]),
        ("profile: x\ndata: {corpora: [chitchat, nope]}\n", ["data.corpora[1]", "'nope'"]),
        ("profile: x\ndata: {corpora: []}\n", ["data.corpora", "at least one"]),
        ("profile: x\ndata: 3\n", ["data", "expected a mapping"]),
        ("seed: 3\n", ["profile", "missing required key"]),
        ("profile: x\nnegatives: {bm25: {b: 2}}\n", ["negatives.bm25.b", "[0, 1]"]),
        ("profile: x\ntraining: {lr: .nan}\n", ["training.lr", "expected a finite number"]),
        ("profile: x\nrankers: {names: [bert, bert]}\n", ["rankers.names", "listed twice"]),
        ("profile: x\nnegatives: {eval: [bm25, bm25]}\n", ["negatives.eval", "listed twice"]),
        ("profile: laptop\n", ["profile: 'laptop' must match the file name 'x'"]),
    ],
)
def test_bad_values_name_file_key_and_expectation(tmp_path, text, needles):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert str(path) in msg
    for needle in needles:
        assert needle in msg


def test_invalid_yaml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "profile: [unclosed\n"))


@pytest.mark.parametrize(
    "text, where, needles",
    [
        (
            "profile: x\nrankers: {seeds: [1, 2\nb: 3\n",
            "line 3:column 2",
            ["expected ',' or ']', but got ':'", "while parsing a flow sequence that starts at line 2, column 18"],
        ),
        ("profile: x\n  seed: 1\n", "line 2:column 7", ["mapping values are not allowed here"]),
        (
            'profile: x\ndescription: "open\n',
            "line 3:column 1",
            ["found unexpected end of stream", "while scanning a quoted scalar that starts at line 2"],
        ),
    ],
)
def test_a_yaml_syntax_error_is_one_line_with_file_line_and_column(tmp_path, text, where, needles):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}:{where}: not valid YAML: ")
    for needle in needles:
        assert needle in msg


def test_an_empty_list_of_seeds_is_refused_where_it_was_written(tmp_path, capsys):
    """Left out, rankers.seeds means the profile seed; written empty, it would train that seed without a word."""
    path = _write(tmp_path, "profile: x\nseed: 3\nrankers:\n  names: [bert]\n  seeds: []\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (
        f"{path}:line 5: rankers.seeds: expected at least one training seed, got []; list them "
        f"(e.g. [3]), or leave the key out to train with the profile's seed (3) alone"
    )
    from calibrank.study.settings.config import main, training_seeds

    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(ConfigError, match="override rankers.seeds: expected at least one training seed"):
        load_config(_write(tmp_path, "profile: y\n", "y"), {"rankers.seeds": []})
    assert training_seeds(load_config(_write(tmp_path, "profile: z\nseed: 3\n", "z"))) == (3,)


def test_unknown_profile_lists_the_known_ones(tmp_root):
    with pytest.raises(
        ConfigError, match="known profiles: laptop, laptop-3seeds, laptop-full, paper, paper2023, smoke"
    ):
        load_config("nosuch")


def test_overrides_are_validated_like_the_file(tmp_root):
    cfg = load_config("smoke", {"data.max_dialogues": 50, "negatives.eval": ["random"]})
    assert cfg.data.max_dialogues == 50 and cfg.negatives.eval == (SamplerName.random,)
    with pytest.raises(ConfigError, match="data.max_dialouges"):
        load_config("smoke", {"data.max_dialouges": 50})


def test_defaults_fill_omitted_sections(tmp_path):
    cfg = load_config(_write(tmp_path, "profile: minimal\n", name="minimal"))
    assert cfg.seed == 0 and cfg.negatives.eval_k == 9 and cfg.data.split.train == 0.8


def test_training_seeds_name_the_runs_and_round_trip(tmp_root):
    from calibrank.study.settings.config import parse_run_name, run_name, train_runs, training_seeds

    cfg = load_config(
        "smoke", {"rankers.names": ["bert", "pg_drr"], "rankers.seeds": [5, 2], "rankers.train_corpora": ["chitchat"]}
    )
    assert training_seeds(cfg) == (5, 2)
    assert train_runs(cfg) == ["bert-chitchat", "pg_drr-chitchat", "bert-chitchat-seed2", "pg_drr-chitchat-seed2"]
    assert all(run_name(*parse_run_name(r, cfg), cfg) == r for r in train_runs(cfg))
    with pytest.raises(ConfigError, match=r"override rankers\.seeds: expected at least one training seed"):
        load_config("smoke", {"rankers.seeds": []})  # the profile seed alone is the key left out
    with pytest.raises(ConfigError, match="is not a run of the profile"):
        parse_run_name("bert-chitchat-seed7", cfg)
    with pytest.raises(ConfigError, match=r"rankers\.seeds.*twice"):
        load_config("smoke", {"rankers.seeds": [1, 1]})
    with pytest.raises(ConfigError, match=r"rankers\.seeds\[1\]"):
        load_config("smoke", {"rankers.seeds": [1, -2]})


def test_config_and_choices_load_without_torch():
    """The command-line checks of the Makefile read profiles without importing torch."""
    import subprocess
    import sys

    code = "import sys, calibrank.study.settings.config, calibrank.study.settings.choices; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_config_exports_only_what_it_defines():
    """One place per name: the sections live in schema, the option enums in choices, the errors in checks."""
    from calibrank.study.settings import config

    assert config.__all__ and all(getattr(config, name).__module__ == config.__name__ for name in config.__all__)


@pytest.mark.parametrize(
    "text, needles",
    [
        ("profile: x\nrankers: {focal: {gamma: -1}}\n", ["rankers.focal.gamma", "gamma must be >= 0"]),
        ("profile: x\nrankers: {focal: {gamma: adaptiv}}\n", ["rankers.focal.gamma", "'adaptive'"]),
        ("profile: x\nrankers: {sngp: {n_features: 0}}\n", ["rankers.sngp.n_features", "positive integer"]),
        ("profile: x\nrankers: {sngp: {momentum: 1.0}}\n", ["rankers.sngp.momentum", "(0, 1)"]),
        ("profile: x\nrankers: {gpf_bert: {output_init: normal}}\n", ["rankers.gpf_bert.output_init", "'dense'"]),
        ("profile: x\nrankers: {pg_drr: {kernel: matern, nu: 1.0}}\n", ["rankers.pg_drr.nu", "0.5, 1.5, 2.5"]),
        ("profile: x\nrankers: {names: [pg_drr]}\ntraining: {batch_size: 1}\n", ["training.batch_size", "at least 2"]),
        ("profile: x\nrankers: {mc_dropout: {passes: 1}}\n", ["rankers.mc_dropout.passes", "at least 2"]),
    ],
)
def test_ranker_sections_are_checked(tmp_path, text, needles):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    for needle in needles:
        assert needle in str(err.value)


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("profile: x\ntraining:\n  lr: 0.001\n  epochs: 2\ntraining:\n  epochs: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"{path}:line 5: duplicate key 'training' (first given at line 2)" in str(err.value)
    path.write_text("profile: x\ntraining:\n  lr: 0.001\n  lr: 0.002\n")
    with pytest.raises(ConfigError, match="line 4: duplicate key 'lr'"):
        load_config(path)


@pytest.mark.parametrize(
    "value, ok", [("1e-3", 1e-3), ("2.5E-5", 2.5e-5), (".nan", None), (".inf", None), ("-.inf", None)]
)
def test_numbers_read_as_written_and_must_be_finite(tmp_path, value, ok):
    path = tmp_path / "x.yaml"
    path.write_text(f"profile: x\ntraining: {{lr: {value}}}\n")
    if ok is None:
        with pytest.raises(ConfigError, match="training.lr: expected a finite number"):
            load_config(path)
    else:
        assert load_config(path).training.lr == ok


def test_seeds_fit_the_rngs(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(f"profile: x\nrankers: {{seeds: [1, {2**64}]}}\n")
    with pytest.raises(ConfigError, match=r"rankers.seeds\[1\]: expected an integer in 0..2\*\*32-1"):
        load_config(path)


# ------------------------------------------------------------------------------ extends
def test_a_profile_extends_another_and_says_only_what_differs(tmp_root):
    base = load_config("laptop")
    three = load_config("laptop-3seeds")
    assert three.profile == "laptop-3seeds" and three.rankers.seeds == (13, 14, 15)
    assert three.training == base.training and three.negatives == base.negatives and three.data == base.data
    assert three.rankers.names == base.rankers.names  # a mapping merges key by key
    p23 = load_config("paper2023")
    assert (p23.negatives.train.value, p23.negatives.train_k) == ("random", 9)
    assert p23.training == load_config("paper").training


def test_extends_errors_name_the_file(tmp_root):
    params = tmp_root / "params"
    (params / "a.yaml").write_text("extends: b\nprofile: a\n", encoding="utf-8")
    (params / "b.yaml").write_text("extends: a\nprofile: b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"a\.yaml:line 1: extends: .*circle \(a -> b -> a\)"):
        load_config("a")
    (params / "c.yaml").write_text("extends: [laptop]\nprofile: c\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c\.yaml:line 1: extends: expected the name of another profile"):
        load_config("c")
    (params / "d.yaml").write_text("extends: nosuch\nprofile: d\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"d\.yaml:line 1: extends: .*nosuch\.yaml: no such params file"):
        load_config("d")
    (params / "e.yaml").write_text("extends: laptop\n", encoding="utf-8")  # the name is not inherited
    with pytest.raises(ConfigError, match=r"e\.yaml: profile: missing required key"):
        load_config("e")
    (params / "f.yaml").write_text("extends: laptop\nprofile: f\nrankers: {sedes: [1]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"f\.yaml:line 3: rankers\.sedes: unknown key"):
        load_config("f")


def test_sources_lists_the_chain(tmp_root):
    from calibrank.study.settings.profiles import profile_sources

    assert [p.relative_to(tmp_root).as_posix() for p in profile_sources("laptop-3seeds")] == [
        "params/laptop-3seeds.yaml",
        "params/laptop.yaml",
    ]


# ------------------------------------------------------------------ profiles read as written
def _child(tmp_root, text, name="child"):
    path = tmp_root / "params" / f"{name}.yaml"
    path.write_text(f"extends: smoke\nprofile: {name}\n{text}", encoding="utf-8")
    return path


def test_an_empty_section_in_a_child_is_an_error_naming_its_line(tmp_root):
    from calibrank.study.settings.schema import PGDRRConfig, TrainingConfig

    smoke = load_config("smoke")
    path = _child(tmp_root, "training:\n  # lr: 0.1\n  # epochs: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config("child")
    assert (
        f"{path}:line 3: training: `training:` is empty: say `training: {{}}` to reset it to the defaults, "
        f"or remove the key to inherit" in str(err.value)
    )
    _child(tmp_root, "rankers:\n  seeds: [3]\n  sngp: null\n")
    with pytest.raises(ConfigError, match=r"child\.yaml:line 5: rankers\.sngp: `sngp:` is empty: say `sngp: \{\}`"):
        load_config("child")
    # `{}` resets a section to the defaults, a missing key inherits it, a non-empty one merges key by key
    assert load_config(_child(tmp_root, "training: {}\n")).training == TrainingConfig() != smoke.training
    assert (
        load_config(_child(tmp_root, "rankers: {pg_drr: {}}\n")).rankers.pg_drr == PGDRRConfig() != smoke.rankers.pg_drr
    )
    assert load_config(_child(tmp_root, "seed: 3\n")).training == smoke.training
    merged = load_config(_child(tmp_root, "training: {lr: 0.01}\n")).training
    assert merged == dataclasses.replace(smoke.training, lr=0.01)


def test_a_null_section_in_a_profile_that_extends_nothing_is_its_defaults(tmp_path):
    from calibrank.study.settings.schema import TrainingConfig

    assert load_config(_write(tmp_path, "profile: x\ntraining:\n")).training == TrainingConfig()


@pytest.mark.parametrize(
    "text, line, key, needles",
    [
        ("seed: 010\n", 3, "seed", ["write 10 or '010'"]),
        ("rankers: {seeds: [013, 014]}\n", 3, "rankers.seeds[0]", ["write 13 or '013'"]),
        ("rankers:\n  seeds:\n    - 13\n    - 014\n", 6, "rankers.seeds[1]", ["write 14 or '014'"]),
        ("data: {max_dialogues: 3:20}\n", 3, "data.max_dialogues", ["YAML 1.1 reads 200", "'3:20'"]),
        ("data: {max_dialogues: 1_000}\n", 3, "data.max_dialogues", ["write 1000 or '1_000'"]),
        ("seed: 0o10\n", 3, "seed", ["write 8 or '0o10'"]),
        ("seed: 0x10\n", 3, "seed", ["write 16 or '0x10'"]),
        ("seed: 08\n", 3, "seed", ["write 8 or '08'"]),
        ("training: {lr: 1_0.5}\n", 3, "training.lr", ["write 10.5 or '1_0.5'"]),
        ("negatives: {exclude_own_dialogue: yes}\n", 3, "negatives.exclude_own_dialogue", ["write true or 'yes'"]),
        ("description: off\n", 3, "description", ["write false or 'off'"]),
    ],
)
def test_numbers_that_yaml_versions_read_differently_are_refused(tmp_root, text, line, key, needles):
    path = _child(tmp_root, text)
    with pytest.raises(ConfigError) as err:
        load_config("child")
    msg = str(err.value)
    assert msg.startswith(f"{path}:line {line}: {key}: ")
    for needle in needles:
        assert needle in msg


@pytest.mark.parametrize(
    "text, value",
    [
        ("seed: 10\n", 10),
        ("seed: +7\n", 7),
        ("seed: 0\n", 0),
        ("seed: '010'\n", None),
        ("training: {lr: 1e-3}\n", 1e-3),
        ("training: {lr: .5e-3}\n", 5e-4),
        ("training: {lr: 0.001}\n", 1e-3),
        ("description: '3:20'\n", "3:20"),
        ("description: 2024-01-01\n", "2024-01-01"),
        ("description: on-call\n", "on-call"),
    ],
)
def test_decimal_numbers_and_quoted_text_read_as_written(tmp_root, text, value):
    if value is None:  # quoted: a string, which a seed is not
        with pytest.raises(ConfigError, match=r"child\.yaml:line 3: seed: expected an integer, got '010'"):
            load_config(_child(tmp_root, text))
        return
    cfg = load_config(_child(tmp_root, text))
    got = {"seed": cfg.seed, "training": cfg.training.lr, "description": cfg.description}[text.split(":")[0]]
    assert got == value and type(got) is type(value)


def test_an_error_in_a_parent_names_the_parents_file_and_line(tmp_root):
    params = tmp_root / "params"
    (params / "base.yaml").write_text("profile: base\nseed: 1\ntraining:\n  lr: 0.01\n  epochz: 2\n", encoding="utf-8")
    (params / "kid.yaml").write_text("extends: base\nprofile: kid\nseed: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config("kid")
    assert str(err.value).startswith(
        f"{params / 'base.yaml'}:line 5: training.epochz: unknown key (did you mean 'epochs'?)"
    )
    # a value the child replaces is the child's: its error names the child
    (params / "base.yaml").write_text("profile: base\ntraining: {lr: -1}\n", encoding="utf-8")
    (params / "kid.yaml").write_text("extends: base\nprofile: kid\ntraining: {lr: -2}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(params / 'kid.yaml'))}:line 3: training\.lr: .*-2"):
        load_config("kid")
    # a list the child replaces takes its own lines: the parent's items are gone
    (params / "base.yaml").write_text("profile: base\nrankers:\n  seeds:\n    - 1\n    - -1\n", encoding="utf-8")
    (params / "kid.yaml").write_text("extends: base\nprofile: kid\nrankers: {seeds: [2, -2]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(params / 'kid.yaml'))}:line 3: rankers\.seeds\[1\]"):
        load_config("kid")
    (params / "kid.yaml").write_text("extends: base\nprofile: kid\nseed: 4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(params / 'base.yaml'))}:line 5: rankers\.seeds\[1\]"):
        load_config("kid")


@pytest.mark.parametrize(
    "text, line, needles",
    [
        ("data: {max_dialogues: 3}\nnegatives:\n  eval_k: 0\n", 5, ["negatives.eval_k", "positive integer"]),
        ("data:\n  split: {train: 0.5, valid: 0.1, test: 0.1}\n", 4, ["data.split.train", "sum to 1"]),
        ("seed: 1.5\n", 3, ["seed", "expected an integer"]),
        ("rankers:\n  names: [bert]\n  mc_dropout: {passes: 1}\n", 5, ["rankers.mc_dropout.passes", "at least 2"]),
    ],
)
def test_every_value_error_names_its_line(tmp_root, text, line, needles):
    path = _child(tmp_root, text)
    with pytest.raises(ConfigError) as err:
        load_config("child")
    msg = str(err.value)
    assert msg.startswith(f"{path}:line {line}: ")
    for needle in needles:
        assert needle in msg


@pytest.mark.parametrize(
    "text, line, key, bound",
    [
        ("training: {epochs: 1e30}\n", 3, "training.epochs", "an integer"),
        ("training:\n  epochs: 1000000000000000000000000000000\n", 4, "training.epochs", "at most 1000"),
        ("training: {epochs: 1001}\n", 3, "training.epochs", "at most 1000"),
        ("negatives: {train_k: 100000}\n", 3, "negatives.train_k", "at most 1000"),
        ("negatives: {eval_k: 100000}\n", 3, "negatives.eval_k", "at most 1000"),
        ("data: {max_dialogues: 10000000000}\n", 3, "data.max_dialogues", "at most 1000000000"),
        ("data: {max_examples: {test: 10000000000}}\n", 3, "data.max_examples.test", "at most 1000000000"),
        ("data: {max_context_utterances: 100000}\n", 3, "data.max_context_utterances", "at most 1000"),
        ("training: {batch_size: 1000000}\n", 3, "training.batch_size", "at most 65536"),
        ("training: {eval_batch_size: 1000000}\n", 3, "training.eval_batch_size", "at most 65536"),
        ("training: {max_length: 100000}\n", 3, "training.max_length", "at most 8192"),
        ("negatives: {embedding: {batch_size: 1000000}}\n", 3, "negatives.embedding.batch_size", "at most 65536"),
        ("rankers: {mc_dropout: {passes: 100000}}\n", 3, "rankers.mc_dropout.passes", "at most 1000"),
        ("rankers: {ensemble: {members: 1000}}\n", 3, "rankers.ensemble.members", "at most 100"),
        ("rankers: {sngp: {n_features: 1000000}}\n", 3, "rankers.sngp.n_features", "at most 16384"),
        ("rankers: {pg_drr: {inducing: 1000000}}\n", 3, "rankers.pg_drr.inducing", "at most 16384"),
        ("rankers: {pg_drr: {gibbs_chains: 1000000}}\n", 3, "rankers.pg_drr.gibbs_chains", "at most 1000"),
        ("rankers: {gpf_bert: {samples: 1000000}}\n", 3, "rankers.gpf_bert.samples", "at most 1000"),
    ],
)
def test_sizes_that_drive_memory_or_time_are_bounded(tmp_root, text, line, key, bound):
    path = _child(tmp_root, text)
    with pytest.raises(ConfigError) as err:
        load_config("child")
    assert str(err.value).startswith(f"{path}:line {line}: {key}: expected ")
    assert bound in str(err.value)


def test_overrides_are_named_as_overrides(tmp_root):
    with pytest.raises(ConfigError, match=r"smoke\.yaml: override training\.epochs: expected .*at most 1000"):
        load_config("smoke", {"training.epochs": 10**30})
