"""The one error type of tornchat.

Anything below the HTTP layer raises ApiError; the base handler renders it as
`{"result": "error", "msg": ..., "code": ..., **data}` with `status` as the HTTP status.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A client-visible error: code, message, HTTP status, extra fields and extra headers."""

    def __init__(
        self,
        msg: str,
        code: str = "BAD_REQUEST",
        status: int = 400,
        data: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(msg)
        self.msg = msg
        self.code = code
        self.status = status
        self.data = data or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """Return the JSON-ready error envelope."""
        return {"result": "error", "msg": self.msg, "code": self.code, **self.data}

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.status}, {self.msg!r})"


def not_found(msg: str) -> ApiError:
    """Missing resources of the caller's own (draft, scheduled message): 404 with BAD_REQUEST."""
    return ApiError(msg, status=404)


def missing_argument(name: str) -> ApiError:
    return ApiError(f"Missing '{name}' argument", "REQUEST_VARIABLE_MISSING", data={"var_name": name})


def insufficient_permission() -> ApiError:
    return ApiError("Insufficient permission")


def must_be_admin() -> ApiError:
    return ApiError("Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")


def must_be_owner() -> ApiError:
    return ApiError("Must be an organization owner", "UNAUTHORIZED_PRINCIPAL")


def no_such_user() -> ApiError:
    return ApiError("No such user")
