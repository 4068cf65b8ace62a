"""What a server bound to every interface prints for other machines to dial."""

from ding_lite.interaction.addresses import interface_addresses, reachable
from ding_lite.utils.interfaces import interface_towards, interfaces


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


def test_the_interface_towards_a_peer_is_the_one_its_route_leaves_by():
    named = dict(interfaces())
    assert named.get("lo") == "127.0.0.1"
    assert interface_towards("127.0.0.1") == "lo"
    # Another of this machine's addresses: the interface that holds it.
    for name, address in interfaces():
        if name != "lo" and not address.startswith("127."):
            assert interface_towards(address) in named
    assert interface_towards("no-such-host.invalid") is None  # does not resolve
