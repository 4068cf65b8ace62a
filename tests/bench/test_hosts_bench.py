"""bench/hosts.py: the loopback placement runs the hosts layout's commands unchanged but for
the addresses (all 127.0.0.1) and one port per role."""

from __future__ import annotations

from pathlib import Path

from helpers import load_bench

bench = load_bench("hosts")


def test_the_loopback_placement_changes_only_addresses_and_ports(tmp_path: Path):
    argv = bench.layout(tmp_path / "run", collectors=2, extra=("max_train_iter=3",))
    solo = bench.loopback(argv)
    assert set(solo) == set(argv) == {"coordinator", "learner", "collector", "collector2"}
    ports = [words[words.index("--port") + 1] for words in solo.values()]
    assert len(set(ports)) == 4  # one host: every role its own port
    for role, words in solo.items():
        assert len(words) == len(argv[role])
        changed = [(a, b) for a, b in zip(argv[role], words, strict=True) if a != b]
        for before, after in changed:
            assert after.startswith("127.0.0.1") or after in ports, (role, before, after)
        assert not any(w.startswith("10.0.0.") or w == "0.0.0.0" for w in words), words
