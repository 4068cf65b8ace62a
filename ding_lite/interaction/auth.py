"""The shared token: where it comes from, how to make one, and how a request proves it."""

from __future__ import annotations

import hmac
import os
import secrets

from ding_lite.utils.errors import ConfigError

TOKEN_ENV = "DING_LITE_TOKEN"
BEARER_PREFIX = "Bearer "


def generate_token(nbytes: int = 32) -> str:
    """Returns a fresh URL-safe random token (``nbytes`` of entropy)."""
    return secrets.token_urlsafe(nbytes)


def resolve_token(configured: str | None) -> str:
    """Picks the token: the configured value first, else the ``DING_LITE_TOKEN`` variable.

    Args:
        configured: the token given in code or config; None or ``""`` means "not set".

    Returns:
        The token to send and expect.

    Raises:
        ConfigError: neither is set, or the token has characters a header cannot carry.
    """
    token = configured or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise ConfigError(
            f"no interaction token: pass token=... or set the {TOKEN_ENV} environment variable "
            "to the same secret on the coordinator and every worker (make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise ConfigError("the interaction token must be printable ASCII without spaces")
    return token


def bearer_header(token: str) -> dict[str, str]:
    """The ``Authorization`` header a client sends with ``token``."""
    return {"Authorization": BEARER_PREFIX + token}


def check_bearer(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header value carries ``token``.

    The token comparison runs in constant time (``hmac.compare_digest``) so response timing
    does not reveal how much of a guess was right.

    Args:
        header: the raw header value, or None when the request had none.
        token: the expected token.
    """
    # The scheme name is case-insensitive (RFC 7235); the token is not.
    if not header or header[: len(BEARER_PREFIX)].lower() != BEARER_PREFIX.lower():
        return False
    offered = header[len(BEARER_PREFIX) :].strip()
    return hmac.compare_digest(offered.encode("utf-8"), token.encode("utf-8"))
