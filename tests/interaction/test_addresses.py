"""What a server bound to every interface prints for other machines to dial."""

from ding_lite.interaction.addresses import interface_addresses, reachable


def test_a_specific_address_is_shown_as_it_is():
    assert reachable("127.0.0.1:7235") == ("127.0.0.1:7235", ["127.0.0.1:7235"])
    assert reachable("10.0.0.2:80") == ("10.0.0.2:80", ["10.0.0.2:80"])


def test_a_wildcard_becomes_the_machines_own_addresses_loopback_last():
    shown, every = reachable("0.0.0.0:7235")
    assert shown == every[0] and all(a.endswith(":7235") for a in every)
    assert not any(a.startswith("0.0.0.0") for a in every)
    loopback = [a.startswith("127.") for a in every]
    assert loopback == sorted(loopback)  # non-loopback ones first
    assert set(interface_addresses()) >= {a.rsplit(":", 1)[0] for a in every} - {"127.0.0.1"}
