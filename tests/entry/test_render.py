"""``ding-lite render``: one air-combat episode drawn to a PNG."""

import math
import sys

import pytest
import torch

from ding_lite.entry.cli.command import main
from ding_lite.entry.trained.render import TrackedAirCombatEnv, _flights, render_match


def test_tracked_env_keeps_the_positions_autoreset_overwrites():
    env = TrackedAirCombatEnv(
        num_envs=1, seed=0, opponent="placeholder", reward="zero", throttle=0.5
    )
    env.reset()
    # P1's missile 600 m behind P2 and flying at it: P2 is destroyed within the step.
    env.x[:], env.y[:] = torch.tensor([[-20_000.0, 0.0]]), 0.0
    env.heading[:] = torch.tensor([[math.pi, 0.0]])
    env.m_active[0, 0, 0] = True
    env.m_x[0, 0, 0], env.m_y[0, 0, 0], env.m_cx[0, 0, 0], env.m_cy[0, 0, 0] = -600, 0, 1, 0
    env.m_fuel[0, 0, 0] = 10.0
    _, _, terminated, _, info = env.step({"rudder": torch.zeros(1), "fire": torch.zeros(1)})
    assert terminated.item() and info["episode"]["outcome"].item() == 1.0
    frame = env.last_frame
    assert frame.alive.tolist() == [True, False] and env.alive[0].tolist() == [True, True]
    assert frame.x[1].item() == pytest.approx(225.0)  # P2 flew one step east before the hit
    assert env.x[0, 1].item() != frame.x[1].item()  # the reset drew a new start


def test_flights_end_one_frame_after_the_missile_stops():
    active = torch.tensor([False, True, True, False, False, True])
    assert _flights(active) == [(1, 4), (5, 6)]
    assert _flights(torch.zeros(3, dtype=torch.bool)) == []


def test_render_match_draws_a_png(aircombat_ckpt, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sub" / "match.png"
    match = render_match("aircombat_ppo", aircombat_ckpt, out, seed=3)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert match["path"] == str(out) and match["train_iter"] == 1
    assert match["outcome"] in (-1.0, 0.0, 1.0) and 1 <= match["length"] <= 600
    assert len(match["missiles_fired"]) == 2
    again = render_match("aircombat_ppo", aircombat_ckpt, tmp_path / "again.png", seed=3)
    assert {k: v for k, v in again.items() if k != "path"} == {
        k: v for k, v in match.items() if k != "path"
    }


def test_render_command(aircombat_ckpt, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "m.png"
    args = ["render", "-c", "aircombat_ppo", "--ckpt", str(aircombat_ckpt), "--out", str(out)]
    assert main([*args, "--opponent", "placeholder", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{out}: ") and "steps, missiles fired" in printed
    assert out.is_file()


@pytest.mark.parametrize(
    ("config", "ckpt", "message"),
    [
        ("aircombat_pp", None, "unknown experiment 'aircombat_pp'"),
        ("cartpole_ppo", None, "supports only the aircombat env"),
        ("aircombat_ppo", "missing.pt", "checkpoint not found"),
    ],
)
def test_bad_input_is_one_line_error(aircombat_ckpt, tmp_path, capsys, config, ckpt, message):
    ckpt = tmp_path / ckpt if ckpt else aircombat_ckpt
    code = main(["render", "-c", config, "--ckpt", str(ckpt), "--out", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x.png").exists()


def test_missing_matplotlib_is_one_line_error(aircombat_ckpt, tmp_path, capsys, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)  # makes the import fail
    args = ["render", "-c", "aircombat_ppo", "--ckpt", str(aircombat_ckpt)]
    assert main([*args, "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "pip install matplotlib (in a ding_lite checkout: pip install -e '.[render]')" in err
    assert len(err.strip().splitlines()) == 1


def test_render_a_self_play_match(aircombat_ckpt, tmp_path):
    """``opponent="self"``: the policy flies both fighters (one row per agent); the outcome
    is P1's (blue's) view."""
    pytest.importorskip("matplotlib")
    match = render_match("aircombat_ppo", aircombat_ckpt, tmp_path / "self.png", opponent="self")
    assert (tmp_path / "self.png").is_file()
    assert match["outcome"] in (-1.0, 0.0, 1.0) and 1 <= match["length"] <= 600
    assert len(match["missiles_fired"]) == 2
