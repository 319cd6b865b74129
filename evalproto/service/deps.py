"""The routes' dependencies, typed: the one way to the running service (ServiceDep), the
admin's and a team's identity from the request's token (checked before any body is
read), request bodies (a bounded JSON model, an upload), and the status of every
refusal, the service's own and the records'."""

from __future__ import annotations

from typing import Annotated, Any, Awaitable, Callable, Dict, Optional

from fastapi import Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from evalproto.service import auth, store
from evalproto.service.context import Service
from evalproto.service.errors import Refused

MAX_JSON = 256 << 10
"""The bound of a JSON request's body (a task of many long metric specs fits): far
below --max-upload, which is for uploaded files."""
STORE_STATUS = {store.Missing: 404, store.Taken: 409, store.NotYours: 403}
"""The HTTP status of what the records refuse."""
REFUSALS = (Refused, store.StoreError)
"""What a request may be refused with: the service's refusals and the records'."""


def status_of(refusal: Exception) -> int:
    """The HTTP status of a refusal: the service's (Refused) or the records'."""
    if isinstance(refusal, Refused):
        return refusal.status
    return next((status for kind, status in STORE_STATUS.items() if isinstance(refusal, kind)),
                400)


def service_of(request: Request) -> Service:
    """The running service, as create_app put it in the application's state."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(service_of)]
Authorization = Annotated[Optional[str], Header(include_in_schema=False)]


def admin(action: str) -> Any:
    """A dependency giving the admin's identity, for `action` (said in its refusal)."""

    async def checked(service: ServiceDep, authorization: Authorization = None) -> auth.Admin:
        """The admin, or a refusal that names the action."""
        return auth.admin(auth.bearer(authorization), service.admin, action)

    return Depends(checked)


async def team(service: ServiceDep, authorization: Authorization = None) -> auth.Team:
    """The team whose token the request carries; anyone else is refused."""
    return await run_in_threadpool(auth.team, service.engine, auth.bearer(authorization),
                                   service.admin)


TeamDep = Annotated[auth.Team, Depends(team)]


async def upload(request: Request) -> bytes:
    """An upload's bytes (bounded by the application's BoundedBodies). Declared after
    the token's check in a route's parameters, so that no one without a token has a
    body read."""
    return await request.body()


Upload = Annotated[bytes, Depends(upload)]


def json_body(model: Any) -> Callable[..., Awaitable[Any]]:
    """A dependency reading a JSON body of at most MAX_JSON bytes into `model`, after the
    dependencies before it (the token's check): FastAPI would read a model parameter's
    body before any of them."""

    async def parse(request: Request, service: ServiceDep) -> Any:
        """The body, bounded and validated into the model."""
        limit = min(MAX_JSON, service.settings.max_upload)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise StarletteHTTPException(413, f"a JSON request's body is at most "
                                                  f"{limit} bytes")
        try:
            return model.model_validate_json(bytes(data))
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None

    return parse


def described_body(model: type[BaseModel]) -> Dict[str, Any]:
    """The OpenAPI description of a route's JSON body (read by `json_body`)."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema()}}}}
