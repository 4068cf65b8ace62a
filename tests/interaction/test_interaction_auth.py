"""Token helpers, envelope codes, and the JSON/schema checks of the app."""

from __future__ import annotations

import hmac
import string

import pytest

from ding_lite.interaction import ApiError, Code, check_bearer, generate_token, resolve_token
from ding_lite.interaction.app import parse_json_object, validate_body
from ding_lite.interaction.auth import TOKEN_ENV, bearer_header
from ding_lite.utils.errors import ConfigError


def test_resolve_token_prefers_configured_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert resolve_token("from-config") == "from-config"


@pytest.mark.parametrize("configured", [None, ""])
def test_resolve_token_falls_back_to_env(
    monkeypatch: pytest.MonkeyPatch, configured: str | None
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert resolve_token(configured) == "from-env"


def test_resolve_token_without_any_says_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ConfigError, match=TOKEN_ENV) as info:
        resolve_token(None)
    assert "token=" in str(info.value)


@pytest.mark.parametrize("bad", ["with space", " padded", "tab\there", "naïve"])
def test_resolve_token_rejects_tokens_a_header_cannot_carry(bad: str) -> None:
    with pytest.raises(ConfigError, match="printable ASCII"):
        resolve_token(bad)


def test_generate_token_is_random_and_url_safe() -> None:
    tokens = {generate_token() for _ in range(20)}
    assert len(tokens) == 20
    allowed = set(string.ascii_letters + string.digits + "-_")
    for token in tokens:
        assert len(token) >= 40 and set(token) <= allowed
        assert resolve_token(token) == token


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, False),
        ("", False),
        ("Bearer", False),
        ("Bearer ", False),
        ("Basic secret", False),
        ("Bearer secre", False),
        ("Bearer secret2", False),
        ("Bearer sëcret", False),
        ("Bearer secret", True),
        ("bearer secret", True),
        ("Bearer  secret ", True),
    ],
)
def test_check_bearer(header: str | None, expected: bool) -> None:
    assert check_bearer(header, "secret") is expected


def test_check_bearer_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert check_bearer(bearer_header("secret")["Authorization"], "secret")
    assert not check_bearer("Bearer guess", "secret")
    assert calls == [(b"secret", b"secret"), (b"guess", b"secret")]


def test_codes_map_to_http_statuses() -> None:
    assert Code.OK.http_status == 200
    expected = {
        Code.BAD_REQUEST: 400,
        Code.UNAUTHORIZED: 401,
        Code.NOT_FOUND: 404,
        Code.METHOD_NOT_ALLOWED: 405,
        Code.CONFLICT: 409,
        Code.TOO_LARGE: 413,
        Code.HANDLER_ERROR: 500,
    }
    for code, status in expected.items():
        assert code.http_status == status
        assert Code.from_http_status(status) is code
    assert Code.from_http_status(418) is Code.BAD_REQUEST
    assert Code.from_http_status(599) is Code.HANDLER_ERROR


SCHEMA = {"name": str, "count": int, "ratio": float, "ok": bool, "data": dict}
GOOD = {"name": "a", "count": 1, "ratio": 0.5, "ok": True, "data": {}}


def test_validate_body_accepts_a_good_body_and_ints_as_floats() -> None:
    validate_body(GOOD, SCHEMA)
    validate_body({**GOOD, "ratio": 2}, SCHEMA)
    validate_body({"x": None}, {"x": (dict, type(None))})


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({k: v for k, v in GOOD.items() if k != "count"}, "missing field 'count'"),
        ({**GOOD, "extra": 1}, "unknown field 'extra'"),
        ({**GOOD, "name": 3}, "field 'name' must be str, got int"),
        ({**GOOD, "count": True}, "field 'count' must be int, got bool"),
        ({**GOOD, "count": 1.5}, "field 'count' must be int, got float"),
        ({**GOOD, "ratio": False}, "field 'ratio' must be float, got bool"),
        ({**GOOD, "ok": 1}, "field 'ok' must be bool, got int"),
        ({**GOOD, "data": []}, "field 'data' must be dict, got list"),
        ({**GOOD, "data": None}, "field 'data' must be dict, got NoneType"),
    ],
)
def test_validate_body_names_the_offending_field(body: dict, fragment: str) -> None:
    with pytest.raises(ApiError) as info:
        validate_body(body, SCHEMA)
    assert info.value.code is Code.BAD_REQUEST
    assert fragment in info.value.message


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[1, 2]", b'"text"', b"null", b'{"x": NaN}', b'{"x": Infinity}', b"\xff\xfe"],
)
def test_parse_json_object_refuses_anything_but_a_strict_object(raw: bytes) -> None:
    with pytest.raises(ApiError) as info:
        parse_json_object(raw)
    assert info.value.code is Code.BAD_REQUEST


def test_parse_json_object_refuses_absurd_nesting() -> None:
    with pytest.raises(ApiError):
        parse_json_object(b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
