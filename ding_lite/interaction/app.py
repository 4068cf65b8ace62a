"""The Flask app both sides serve: token check, body limits, JSON schema checks, envelopes.

A request passes, in order: the token check (401), the body size check (413), routing
(404/405), the JSON parse (400) and the route's schema (400). Only then does the handler run,
so a rejected request never changes state. Every answer, Flask's own errors included, is the
JSON envelope of :mod:`ding_lite.interaction.envelope`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ding_lite.interaction.auth import check_bearer
from ding_lite.interaction.envelope import ApiError, Code, error_body, success_body
from ding_lite.utils.log import get_logger

Schema = Mapping[str, type | tuple[type, ...]]
"""Field name -> accepted type(s). Every field is required; any other field is rejected."""

RouteHandler = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Takes the validated body, returns the ``data`` of the success envelope (None -> ``{}``)."""

DEFAULT_MAX_BODY_BYTES = 1 << 20
_ROUTE_LIMITS = "DING_LITE_ROUTE_LIMITS"  # app.config: route rule -> its body limit


def json_response(body: str, status: int) -> Response:
    """A response carrying an already serialized envelope."""
    return Response(body, status=status, mimetype="application/json")


def success_response(data: dict[str, Any] | None) -> Response:
    """A success envelope carrying ``data``."""
    return json_response(success_body(data), 200)


def error_response(code: Code, message: str) -> Response:
    """An error envelope with the HTTP status that belongs to ``code``."""
    return json_response(error_body(code, message), code.http_status)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """Decodes a request body that must be one JSON object.

    Raises:
        ApiError: (400) the body is not UTF-8, not strict JSON (NaN/Infinity refused), too
            deeply nested, or not an object.
    """
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ApiError(Code.BAD_REQUEST, f"malformed JSON body: {e}") from None
    if not isinstance(body, dict):
        raise ApiError(
            Code.BAD_REQUEST, f"the body must be a JSON object, got {type(body).__name__}"
        )
    return body


def _type_names(types: type | tuple[type, ...]) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(t.__name__ for t in types)


def _matches(value: Any, types: type | tuple[type, ...]) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    # bool is an int subclass, and JSON true must not pass as a number (nor 1 as a bool).
    if isinstance(value, bool):
        return bool in types
    if float in types and isinstance(value, int):
        return True
    return isinstance(value, types)


def validate_body(body: Mapping[str, Any], schema: Schema) -> None:
    """Checks ``body`` against ``schema``: all fields present, of the right type, no others.

    Raises:
        ApiError: (400) with a message naming the first offending field.
    """
    for field, types in schema.items():
        if field not in body:
            raise ApiError(Code.BAD_REQUEST, f"missing field '{field}' ({_type_names(types)})")
        if not _matches(body[field], types):
            raise ApiError(
                Code.BAD_REQUEST,
                f"field '{field}' must be {_type_names(types)}, got {type(body[field]).__name__}",
            )
    unknown = sorted(set(body) - set(schema))
    if unknown:
        raise ApiError(
            Code.BAD_REQUEST,
            f"unknown field '{unknown[0]}'; expected fields: {', '.join(sorted(schema))}",
        )


def limit_route(app: Flask, rule: str, limit: int) -> None:
    """Gives ``rule`` its own body limit (bytes) instead of the app's.

    The app's guard answers 413 for a longer declared body before the view runs; the
    server hosting the app lets bodies up to the largest route limit through.
    """
    if limit <= 0:
        raise ValueError(f"a body limit must be positive, got {limit}")
    app.config.setdefault(_ROUTE_LIMITS, {})[rule] = int(limit)


def route_limit(app: Flask, rule: str | None, default: int) -> int:
    """The body limit of ``rule`` (``default``: the app's own)."""
    return app.config.get(_ROUTE_LIMITS, {}).get(rule, default)


def largest_limit(app: Any) -> int:
    """The largest body limit of any route of ``app`` (0: none set)."""
    config = getattr(app, "config", None)
    limits = config.get(_ROUTE_LIMITS, {}) if isinstance(config, dict) else {}
    return max(limits.values(), default=0)


def make_app(name: str, token: str, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Flask:
    """Builds a Flask app that authenticates, size-limits and answers in envelopes.

    Add routes with :func:`json_route`.

    Args:
        name: app name, also used for the logger ``ding_lite.interaction.<name>``.
        token: the shared token every request must carry as ``Authorization: Bearer <token>``.
        max_body_bytes: larger bodies get 413: by Content-Length before anything is read,
            and through Flask's ``MAX_CONTENT_LENGTH`` for a chunked body (which must stay
            below the limit).

    Returns:
        The Flask app.
    """
    if not token:
        raise ValueError("make_app needs a non-empty token")
    if max_body_bytes <= 0:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes}")
    logger = get_logger(f"interaction.{name}")
    app = Flask(f"ding_lite.interaction.{name}")
    app.config["MAX_CONTENT_LENGTH"] = max_body_bytes
    # A path with "//" is not a route (404 envelope), never a redirect to another one.
    app.url_map.merge_slashes = False

    @app.before_request
    def _guard() -> Response | None:
        if not check_bearer(request.headers.get("Authorization"), token):
            return error_response(Code.UNAUTHORIZED, "missing or wrong bearer token")
        rule = request.url_rule.rule if request.url_rule is not None else None
        limit = route_limit(app, rule, max_body_bytes)
        length = request.content_length
        if length is not None and length > limit:
            return error_response(
                Code.TOO_LARGE, f"body of {length} bytes exceeds the limit of {limit}"
            )
        request.max_content_length = limit
        return None

    @app.errorhandler(ApiError)
    def _api_error(e: ApiError) -> Response:
        return error_response(e.code, e.message)

    @app.errorhandler(HTTPException)
    def _http_error(e: HTTPException) -> Response:
        status = e.code or 500
        code = Code.from_http_status(status)
        message = {
            Code.NOT_FOUND: f"no route {request.method} {request.path}",
            Code.METHOD_NOT_ALLOWED: f"method {request.method} not allowed on {request.path}",
            Code.TOO_LARGE: f"body exceeds the limit of {max_body_bytes} bytes",
        }.get(code, e.description or e.name)
        return json_response(error_body(code, message), status)

    @app.errorhandler(Exception)
    def _handler_error(e: Exception) -> Response:
        logger.error("%s %s failed", request.method, request.path, exc_info=e)
        return error_response(Code.HANDLER_ERROR, f"{type(e).__name__}: {e}")

    return app


def json_route(app: Flask, rule: str, schema: Schema) -> Callable[[RouteHandler], RouteHandler]:
    """Registers a handler for ``POST rule`` whose JSON body must match ``schema``.

    The handler runs only for a body that parsed and validated; it may raise
    :class:`ApiError` for checks the schema cannot express, before changing any state.

    Args:
        app: an app from :func:`make_app`.
        rule: the URL path, e.g. ``"/master/register"``.
        schema: field name -> accepted type(s).
    """

    def decorator(handler: RouteHandler) -> RouteHandler:
        @functools.wraps(handler)
        def view() -> Response:
            if request.mimetype != "application/json":
                raise ApiError(
                    Code.BAD_REQUEST,
                    f"Content-Type must be application/json, got '{request.mimetype or 'none'}'",
                )
            raw = request.get_data(cache=False)
            limit = current_app.config["MAX_CONTENT_LENGTH"]
            if request.content_length is None and len(raw) >= limit:
                # A chunked body is cut at the limit by werkzeug, silently: refuse it whole.
                raise RequestEntityTooLarge()
            body = parse_json_object(raw)
            validate_body(body, schema)
            data = handler(body)
            try:
                payload = success_body(data)
            except (TypeError, ValueError) as e:
                raise TypeError(f"handler returned data that is not JSON: {e}") from e
            return json_response(payload, 200)

        app.add_url_rule(rule, endpoint=rule, view_func=view, methods=["POST"])
        return handler

    return decorator
