"""ding_lite's Adam makes torch.optim.Adam's (AdamW's) multi-tensor update bit for bit and reads
and writes its state_dict (that no process imports torch._dynamo: tests/policy/
test_ppo_policy.py)."""

import copy

import pytest
import torch

from ding_lite.policy.ppo.adam import Adam


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _train(net, opt, steps, first=0):
    for i in range(first, first + steps):
        x = torch.randn(32, 5, generator=torch.Generator().manual_seed(i))  # step i's data
        (net(x) ** 2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        opt.param_groups[0]["lr"] = 3e-3 * (1 - i / 100)  # an annealed learning rate


def _torch_adam(net, decoupled, weight_decay):
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    return cls(net.parameters(), lr=3e-3, eps=1e-5, weight_decay=weight_decay, foreach=True)


def _ours(net, decoupled, weight_decay):
    return Adam(net.parameters(), lr=3e-3, eps=1e-5, weight_decay=weight_decay, decoupled=decoupled)


def _same_state(a, b):
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"])
    for k in a["state"]:
        assert set(a["state"][k]) == set(b["state"][k])
        for name, value in a["state"][k].items():
            assert torch.equal(value, b["state"][k][name]), (k, name)
            assert value.dtype == b["state"][k][name].dtype


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_the_same_numbers_and_state_as_torch(decoupled, weight_decay):
    theirs, ours = _net(), _net()
    t_opt, o_opt = (
        _torch_adam(theirs, decoupled, weight_decay),
        _ours(ours, decoupled, weight_decay),
    )
    _train(theirs, t_opt, 40)
    _train(ours, o_opt, 40)
    for a, b in zip(theirs.parameters(), ours.parameters(), strict=True):
        assert torch.equal(a, b)
    _same_state(t_opt.state_dict(), o_opt.state_dict())


@pytest.mark.parametrize("decoupled", [False, True])
def test_a_state_saved_by_either_resumes_in_the_other_exactly(decoupled):
    straight = _net()
    s_opt = _torch_adam(straight, decoupled, 0.01)
    _train(straight, s_opt, 30)
    # torch for 10 steps, then ours from torch's state; and the reverse
    for first, second in ((_torch_adam, _ours), (_ours, _torch_adam)):
        net = _net()
        opt = first(net, decoupled, 0.01)
        _train(net, opt, 10)
        saved = copy.deepcopy(opt.state_dict())
        again = second(net, decoupled, 0.5)  # settings come from the saved state
        again.load_state_dict(saved)
        _train(net, again, 20, first=10)
        for a, b in zip(straight.parameters(), net.parameters(), strict=True):
            assert torch.equal(a, b)


def test_a_state_that_does_not_fit_is_refused_and_changes_nothing():
    net = _net()
    opt = _ours(net, False, 0.0)
    _train(net, opt, 2)
    before = copy.deepcopy(opt.state_dict())
    wrong_shape = copy.deepcopy(before)
    wrong_shape["state"][0]["exp_avg"] = torch.zeros(2, 2)
    fewer = copy.deepcopy(before)
    fewer["param_groups"][0]["params"] = fewer["param_groups"][0]["params"][:-1]
    stray = copy.deepcopy(before)
    stray["state"][99] = stray["state"][0]
    for bad, message in (
        (wrong_shape, r"exp_avg has shape \[2, 2\]"),
        (fewer, "a group of 3 parameters where this one has 4"),
        (stray, "a state for no parameter"),
        ({"state": {}, "param_groups": []}, "number of parameter groups"),
    ):
        with pytest.raises(ValueError, match=message):
            opt.load_state_dict(bad)
        _same_state(opt.state_dict(), before)


def test_parameters_without_a_gradient_are_left_alone():
    net = _net()
    opt = _ours(net, False, 0.0)
    frozen = net[0].weight.detach().clone()
    net[0].weight.requires_grad_(False)
    _train(net, opt, 3)
    assert torch.equal(net[0].weight, frozen) and net[0].weight not in opt.state
    assert not torch.equal(net[2].weight, _net()[2].weight)
