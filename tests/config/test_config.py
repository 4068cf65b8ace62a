import pytest

from ding_lite.config import (
    DEFAULT_CONFIG,
    compile_config,
    deep_merge_dicts,
    get_config,
    parse_overrides,
)
from ding_lite.utils.errors import ConfigError


def test_deep_merge_keeps_base_and_recurses():
    base = {"a": 1, "b": {"c": 2, "d": 3}}
    merged = deep_merge_dicts(base, {"b": {"c": 5}, "e": 6})
    assert merged == {"a": 1, "b": {"c": 5, "d": 3}, "e": 6}
    assert base == {"a": 1, "b": {"c": 2, "d": 3}}


def test_get_config_is_full_and_a_copy():
    cfg = get_config("cartpole_ppo")
    assert cfg.env.name == "cartpole"
    assert set(cfg.policy.learn) == set(DEFAULT_CONFIG["policy"]["learn"])
    cfg.env.num_envs = 3
    assert get_config("cartpole_ppo").env.num_envs != 3


def test_overrides_are_typed():
    cfg = compile_config(
        "cartpole_ppo",
        [
            "policy.learn.learning_rate=1e-3",
            "env.num_envs=4",
            "policy.learn.value_clip=true",
            "policy.model.hidden_sizes=[32, 16]",
            "evaluator.stop_value=none",
            "policy.learn.clip_ratio=1",
            "max_env_step=1_000",
        ],
    )
    assert cfg.policy.learn.learning_rate == 1e-3
    assert cfg.env.num_envs == 4
    assert cfg.policy.learn.value_clip is True
    assert cfg.policy.model.hidden_sizes == [32, 16]
    assert cfg.evaluator.stop_value is None
    assert isinstance(cfg.policy.learn.clip_ratio, float)
    assert cfg.max_env_step == 1000


def test_string_keys_keep_text():
    cfg = compile_config("gym_ppo", ["env.name=gym:CartPole-v1", "exp_name=123"])
    assert cfg.env.name == "gym:CartPole-v1"
    assert cfg.exp_name == "123"


def test_top_level_keywords_apply_before_overrides():
    cfg = compile_config("cartpole_ppo", ["seed=7"], seed=3, device="cpu")
    assert cfg.seed == 7
    assert cfg.device == "cpu"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("policy.learn.learning_rat=1", "did you mean 'policy.learn.learning_rate'"),
        ("policy.learn.gamma=0.9", "did you mean 'policy.collect.gamma'"),
        ("policy.learn.lr=0.1", "unknown config key 'policy.learn.lr'"),
        ("env.num_envs=abc", "must be int"),
        ("env.num_envs=2.5", "must be int"),
        ("env.num_envs=0", "at least 1"),
        ("policy.learn.value_clip=3", "must be bool"),
        ("policy.collect.gamma=1.5", "in [0, 1]"),
        ("device=tpu", "'cpu', 'cuda'"),
        ("policy=3", "is a section"),
        ("nokeyvalue", "key.sub=value"),
        ("policy.learn.optimizer=sgd", "'adam' or 'adamw'"),
    ],
)
def test_bad_overrides_are_rejected(override, message):
    with pytest.raises(ConfigError) as info:
        compile_config("cartpole_ppo", [override])
    assert message in str(info.value)


def test_unknown_experiment_suggests():
    with pytest.raises(ConfigError, match="did you mean 'cartpole_ppo'"):
        compile_config("cartpol_ppo")


def test_dict_config_is_validated():
    with pytest.raises(ConfigError, match="unknown config key 'env.nme'"):
        compile_config({"env": {"nme": "cartpole"}})
    cfg = compile_config({"env": {"name": "pendulum", "kwargs": {"g": 9.81}}})
    assert cfg.env.kwargs == {"g": 9.81}


def test_python_and_yaml_files(tmp_path):
    py = tmp_path / "exp.py"
    py.write_text("config = dict(exp_name='mine', env=dict(num_envs=3))\n")
    assert compile_config(str(py)).env.num_envs == 3
    yml = tmp_path / "exp.yaml"
    yml.write_text("exp_name: mine\npolicy:\n  learn:\n    n_epochs: 2\n")
    assert compile_config(str(yml)).policy.learn.n_epochs == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy: [1, 2\n")
    with pytest.raises(ConfigError, match="cannot parse"):
        compile_config(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        compile_config(str(tmp_path / "missing.yaml"))
    nodict = tmp_path / "nodict.py"
    nodict.write_text("x = 1\n")
    with pytest.raises(ConfigError, match="named 'config'"):
        compile_config(str(nodict))


def test_parse_overrides_nests():
    assert parse_overrides(["a.b=1", "a.c=x"]) == {"a": {"b": 1, "c": "x"}}


def test_nullable_keys_accept_none_and_yaml_numbers_in_text(tmp_path):
    cfg = compile_config("cartpole_ppo", ["policy.learn.grad_clip_norm=none"])
    assert cfg.policy.learn.grad_clip_norm is None
    yml = tmp_path / "exp.yaml"
    yml.write_text("policy:\n  learn:\n    learning_rate: 1e-3\n")
    assert compile_config(str(yml)).policy.learn.learning_rate == 1e-3
    yml.write_text("policy:\n  learn:\n    learning_rate: fast\n")
    with pytest.raises(ConfigError, match="must be float"):
        compile_config(str(yml))
