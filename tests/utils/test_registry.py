"""Every registry is a Registry: one error class, ``force`` and the decorator form everywhere."""

import pytest

import ding_lite.envs as envs
import ding_lite.envs.aircombat.agents as agents
from ding_lite.entry.cli.command import main
from ding_lite.envs import CartPoleEnv
from ding_lite.envs.aircombat import RandomAgent, register_agent
from ding_lite.policy import POLICY_REGISTRY
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.registry import Registry, RegistryError
from ding_lite.worker.learner import LEARNER_HOOK_REGISTRY, LearnerHook, register_learner_hook


def test_the_error_is_a_key_error_and_a_config_error_printed_without_quotes():
    reg: Registry[int] = Registry("widget")
    reg.register("one", 1)
    with pytest.raises(RegistryError) as err:
        reg.get("onr")
    assert isinstance(err.value, KeyError) and isinstance(err.value, ConfigError)
    assert isinstance(err.value, ValueError)
    assert str(err.value) == "unknown widget 'onr' (did you mean 'one'?); known: one"
    with pytest.raises(RegistryError) as err:
        reg.register("one", 2)
    assert str(err.value).startswith("widget 'one' is already registered (by 1); pick another")
    assert reg.register("one", 2, force=True) == 2 and reg.get("one") == 2
    with pytest.raises(RegistryError, match="non-empty string"):
        reg.register("", 3)


def test_names_keep_registration_order_and_copies_are_independent():
    reg: Registry[str] = Registry("thing", extra_known=("any:<id>",))
    for name in ("zeta", "alpha", "mid"):
        reg.register(name, name.upper())
    assert reg.names() == list(reg) == ["zeta", "alpha", "mid"] and len(reg) == 3
    twin = reg.copy()
    twin.register("new", "NEW")
    assert "new" in twin and "new" not in reg
    assert twin.unregister("new") == "NEW" and "new" not in twin
    assert str(reg.unknown("x")).endswith("known: zeta, alpha, mid, any:<id>")


@pytest.fixture
def scratch(monkeypatch):
    """Every registry swapped for a copy, so what a test registers goes away with it."""
    monkeypatch.setattr(envs, "ENV_REGISTRY", envs.ENV_REGISTRY.copy())
    monkeypatch.setattr(agents, "AGENT_REGISTRY", agents.AGENT_REGISTRY.copy())
    yield
    for reg, name in ((POLICY_REGISTRY, "scratch_policy"), (LEARNER_HOOK_REGISTRY, "scratch")):
        reg._items.pop(name, None)


def test_every_registry_takes_a_decorator_and_force(scratch):
    class Hook(LearnerHook):
        def __call__(self, engine):
            pass

    # The decorator form of each public register function, then a duplicate, then force.
    for register, name, obj in (
        (envs.register_env, "scratch_env", CartPoleEnv),
        (register_agent, "scratch_agent", RandomAgent),
        (register_learner_hook, "scratch", Hook),
        (POLICY_REGISTRY.register, "scratch_policy", object),
    ):
        assert register(name)(obj) is obj
        with pytest.raises(RegistryError, match=f"'{name}' is already registered"):
            register(name, obj)
        assert register(name, obj, force=True) is obj


@pytest.mark.parametrize(
    "lookup, message",
    [
        (lambda: envs.create_env("cartpol", 1), "unknown env 'cartpol' (did you mean"),
        (
            lambda: agents.create_agent("randon", num_envs=1),
            "unknown agent 'randon' (did you mean 'random'?); known: rule_based, placeholder",
        ),
        (lambda: POLICY_REGISTRY.get("ppx"), "unknown policy 'ppx' (did you mean 'ppo'?)"),
        (
            lambda: LEARNER_HOOK_REGISTRY.get("log_shw"),
            "unknown learner hook 'log_shw' (did you mean 'log_show'?)",
        ),
    ],
)
def test_every_registry_raises_the_same_error(lookup, message):
    with pytest.raises(RegistryError) as err:
        lookup()
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_cli_prints_an_unknown_name_as_one_line_and_exits_2(capsys, tmp_path):
    code = main(
        ["serial", "-c", "cartpole_ppo", "--exp-dir", str(tmp_path / "run"), "-q"]
        + ["policy.type=ppx"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "ding-lite: error: unknown policy 'ppx' (did you mean 'ppo'?); known: ppo"
