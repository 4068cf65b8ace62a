"""The PPO update reproduces its stored reference (tests/policy/data/ppo_update_reference.pt).

Every case of ``make_update_reference.py`` is run again with the current code. Under the
torch version that wrote the reference, every parameter and buffer after every iteration
must be equal bit for bit (``torch.equal``) and every returned statistic equal (``==``),
on the kind of CPU that wrote it (the reference records its model and torch's kernel
level). Under another torch build or on another CPU, floating-point kernels may round
differently (the same torch 2.13.0 differs in the 7th digit between two x86 machines), so
the test then compares within 1e-5 (absolute and relative) instead. Regenerate the
reference only for a change meant to alter the update's numbers.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch

_SPEC = importlib.util.spec_from_file_location(
    "make_update_reference", Path(__file__).with_name("make_update_reference.py")
)
ref_script = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ref_script)

REFERENCE = torch.load(ref_script.PATH, weights_only=True)
EXACT = REFERENCE["torch"] == str(torch.__version__) and REFERENCE.get("machine") == (
    ref_script.machine()
)


def test_reference_covers_every_case_and_stays_small():
    assert set(REFERENCE["cases"]) == set(ref_script.CASES)
    assert ref_script.PATH.stat().st_size < 200_000
    for case in REFERENCE["cases"].values():
        assert len(case["states"]) == len(case["infos"]) == ref_script.ITERATIONS


def _same_number(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    if EXACT:
        return got == want
    return math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-5)


@pytest.mark.parametrize("name", sorted(ref_script.CASES))
def test_update_reproduces_reference(name):
    want = REFERENCE["cases"][name]
    got = ref_script.run_case(name)
    for it, (g_info, w_info) in enumerate(zip(got["infos"], want["infos"], strict=True)):
        # Metrics added since the reference (data/advantage_mean, ...) may join the info;
        # every metric it recorded must still be there, with the same value.
        assert w_info.keys() <= g_info.keys(), f"{name} iteration {it}: keys"
        for key, value in w_info.items():
            assert _same_number(g_info[key], value), (
                f"{name} iteration {it}: {key} {g_info[key]!r} != {value!r}"
            )
    for it, (g_state, w_state) in enumerate(zip(got["states"], want["states"], strict=True)):
        for kind in ("params", "buffers"):
            g, w = g_state[kind], w_state[kind]
            if EXACT:
                assert torch.equal(g, w), f"{name} iteration {it}: {kind} differ"
            else:
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_the_branch_cases_take_their_branch():
    """Guards the reference itself: each case exercises what it is named for."""
    cases = REFERENCE["cases"]
    full = ref_script.BATCH // 128 * 8  # target_kl case: minibatches without the stop
    assert all(info["minibatches"] < full for info in cases["target_kl"]["infos"])
    assert all(info["kl_ref"] > 0 for info in cases["kl_ref"]["infos"])
    assert [info["kl_coef"] for info in cases["kl_ref"]["infos"]] == [0.5, 0.25, 0.125]
    warmup = cases["value_warmup"]["infos"]
    assert warmup[0]["approx_kl"] == warmup[1]["approx_kl"] == 0.0  # the actor stays put
    assert warmup[2]["approx_kl"] > 0.0
    lrs = [info["learning_rate"] for info in cases["entropy_lr_anneal"]["infos"]]
    assert lrs[0] > lrs[1] > lrs[2]
