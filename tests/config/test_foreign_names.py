"""SB3 / CleanRL / DI-engine names in a config: the error names the ding_lite key they mean."""

import pytest

from ding_lite.config import compile_config
from ding_lite.config.config import _all_keys
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.config.foreign_names import FOREIGN_NAMES
from ding_lite.utils.errors import ConfigError


def _error(override: str) -> str:
    with pytest.raises(ConfigError) as err:
        compile_config("cartpole_ppo", [override])
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "policy.learn.ent_coef=0.01",
            "unknown config key 'policy.learn.ent_coef'; SB3/CleanRL's ent_coef is "
            "policy.learn.entropy_weight here",
        ),
        (
            "ent_coef=0.01",
            "unknown config key 'ent_coef'; SB3/CleanRL's ent_coef is policy.learn.entropy_weight "
            "here",
        ),
        (
            "policy.learn.vf_coef=0.5",
            "unknown config key 'policy.learn.vf_coef'; SB3/CleanRL's vf_coef is "
            "policy.learn.value_weight here",
        ),
        (
            "policy.learn.lr=1e-3",
            "unknown config key 'policy.learn.lr'; Tianshou/PyTorch's lr is "
            "policy.learn.learning_rate here",
        ),
        (
            "total_timesteps=100000",
            "unknown config key 'total_timesteps'; SB3/CleanRL's total_timesteps is max_env_step "
            "here (env steps of all copies)",
        ),
        (
            "policy.learn.norm_adv=false",
            "unknown config key 'policy.learn.norm_adv'; CleanRL's norm_adv is "
            "policy.learn.adv_estimator here (gae normalizes advantages per minibatch, "
            "gae_no_norm does not)",
        ),
        (
            "learner.use_cuda=true",
            "unknown config key 'learner.use_cuda'; DI-engine's use_cuda is device here "
            "(device=cuda or device=cpu)",
        ),
        # A name ding_lite shares, in the wrong section: its own key, by name.
        ("policy.learn.gamma=0.9", "unknown config key 'policy.learn.gamma' (did you mean "),
    ],
)
def test_the_issue_s_examples(override, message):
    assert _error(override).startswith(message)


def test_every_listed_name_means_a_real_key():
    leaves = set(_all_keys(DEFAULT_CONFIG))
    assert {f.key for f in FOREIGN_NAMES.values()} <= leaves
    for name in ("ent_coef", "vf_coef", "lr", "learning_rate", "total_timesteps", "clip_range"):
        assert name in FOREIGN_NAMES
    for name in ("clip_coef", "max_grad_norm", "n_steps", "num_steps", "batch_size", "n_epochs"):
        assert name in FOREIGN_NAMES
    for name in ("update_epochs", "gae_lambda", "gamma", "target_kl", "norm_adv", "num_envs"):
        assert name in FOREIGN_NAMES
    assert "seed" in FOREIGN_NAMES


def _places(name: str, key: str) -> list[str]:
    """Where a user might write ``name``: at the top, and in the section of ``key``."""
    section = key.rpartition(".")[0]
    places = [name, f"{section}.{name}" if section else f"policy.learn.{name}"]
    return [p for p in places if p != key]


@pytest.mark.parametrize("name", sorted(FOREIGN_NAMES))
def test_every_listed_name_at_the_top_or_in_its_section_names_its_key(name):
    key = FOREIGN_NAMES[name].key
    for place in _places(name, key):
        text = _error(f"{place}=1")
        assert text.startswith(f"unknown config key '{place}'")
        assert f" {key} here" in text or f"'{key}'?" in text, text
        assert "did you mean" in text or f"{FOREIGN_NAMES[name].origin}'s {name}" in text


def test_a_dict_config_and_keyword_values_get_the_same_hint():
    with pytest.raises(ConfigError, match="SB3/CleanRL's vf_coef is policy.learn.value_weight"):
        compile_config({"policy": {"learn": {"vf_coef": 0.5}}})
    with pytest.raises(ConfigError, match="SB3/CleanRL's total_timesteps is max_env_step"):
        compile_config("cartpole_ppo", total_timesteps=1000)
