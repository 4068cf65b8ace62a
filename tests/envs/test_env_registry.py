"""create_env / register_env / list_envs."""

import pytest
import torch

import ding_lite.envs as envs
from ding_lite.envs import CartPoleEnv, TensorVectorEnv, create_env, list_envs, register_env
from ding_lite.utils.registry import RegistryError


def test_bundled_envs_are_listed_and_built():
    assert list_envs()[:2] == ["cartpole", "pendulum"]
    env = create_env("cartpole", 3, device="cpu", seed=1, max_episode_steps=7)
    assert isinstance(env, CartPoleEnv) and isinstance(env, TensorVectorEnv)
    assert env.num_envs == 3 and env.device == torch.device("cpu")
    assert env.max_episode_steps == 7
    assert "cartpole" in repr(env) and "num_envs=3" in repr(env)


def test_unknown_name_lists_known_and_suggests():
    with pytest.raises(RegistryError) as err:
        create_env("cartpol", 2)
    assert isinstance(err.value, ValueError) and isinstance(err.value, KeyError)
    assert str(err.value) == (
        "unknown env 'cartpol' (did you mean 'cartpole'?); "
        "known: cartpole, pendulum, aircombat, two_agent_meet, matrix_game, grid, gym:<id>"
    )
    with pytest.raises(ValueError, match="unknown env 'zzz'") as err:
        create_env("zzz", 2)
    assert "did you mean" not in str(err.value)


def test_unknown_option_names_the_accepted_ones():
    with pytest.raises(TypeError, match=r"unknown option\(s\) gravity.*max_episode_steps, dtype"):
        create_env("cartpole", 2, gravity=3.0)


def test_bad_num_envs():
    with pytest.raises(ValueError, match="num_envs"):
        create_env("cartpole", 0)


def test_register_env_keeps_the_registry_open(monkeypatch):
    monkeypatch.setattr(envs, "ENV_REGISTRY", envs.ENV_REGISTRY.copy())

    class Short(CartPoleEnv):
        name = "short_cartpole"

        def __init__(self, *, num_envs, device="cpu", seed=None, max_episode_steps=3):
            super().__init__(
                num_envs=num_envs, device=device, seed=seed, max_episode_steps=max_episode_steps
            )

    register_env("short_cartpole", Short)
    assert "short_cartpole" in list_envs()
    env = create_env("short_cartpole", 2)
    assert env.max_episode_steps == 3
    with pytest.raises(RegistryError, match="already registered"):
        register_env("short_cartpole", Short)
    assert register_env("short_cartpole", CartPoleEnv, force=True) is CartPoleEnv
    assert create_env("short_cartpole", 2).max_episode_steps == 500
    with pytest.raises(RegistryError, match="reserved"):
        register_env("gym:Mine-v0", Short)
    with pytest.raises(RegistryError, match="did you mean 'short_cartpole'"):
        create_env("short_cartpol", 2)


def test_register_env_as_a_decorator(monkeypatch):
    monkeypatch.setattr(envs, "ENV_REGISTRY", envs.ENV_REGISTRY.copy())

    @register_env("decorated_cartpole")
    class Decorated(CartPoleEnv):
        pass

    assert list_envs()[-1] == "decorated_cartpole"
    assert isinstance(create_env("decorated_cartpole", 2), Decorated)
