"""The pages' forms that write (submit predictions, add a dataset, add a metric), all
posted through one helper, `post_form`. A form carries its token as a field (there is
no cookie, so no other site can act for a user), and the token is checked as soon as
its field has arrived: before the file, which must come after it (browsers send the
fields in the page's order, and the templates put the token first), so that no upload
is read for someone without a token. A refusal is the API's, with its status and
message, shown beside the form; nothing of a refused form is stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from evalproto.service.deps import REFUSALS, status_of
from evalproto.service.errors import Invalid, Refused, log_refusal

log = logging.getLogger("evalproto.service")

MAX_FIELDS = 8
"""A form holds a few fields and at most one file (its size bounded by --max-upload)."""
FIELD_BYTES = 64 << 10
"""The bound of a text field, and of a form without a file."""
TOKEN = "token"


@dataclass
class Upload:
    """A form's file: its bytes and the name the browser gave it (a base name)."""

    data: bytes
    filename: str


@dataclass
class _Part:
    name: str = ""
    filename: Optional[str] = None
    data: bytearray = field(default_factory=bytearray)
    done: bool = False


class _Reading:
    """A form's fields as they arrive, the token checked once its field has."""

    def __init__(self, values: Dict[str, str], file: Optional[str],
                 authorize: Callable[[Optional[str]], Any]) -> None:
        """A form to fill in `values` and take the file field `file` of."""
        self.values = values
        self.file = file
        self.authorize = authorize
        self.identity: Any = None
        self.checked = False
        self.upload: Optional[Upload] = None

    async def check(self, token: Optional[str]) -> None:
        """Make the identity of the token, once."""
        if not self.checked:
            self.identity = await run_in_threadpool(self.authorize, token or None)
            self.checked = True

    def take(self, name: str, value: bytes | bytearray, filename: Optional[str]) -> None:
        """A field that has arrived whole (the token is taken by `check`)."""
        if name == self.file and filename is not None:
            self.upload = Upload(bytes(value), filename) if filename else None
        elif name in self.values:
            self.values[name] = value.decode("utf-8", "replace").strip()


async def read_form(request: Request, values: Dict[str, str], file: Optional[str],
                    authorize: Callable[[Optional[str]], Any]) -> _Reading:
    """The form of a request: `values` filled in with its text fields, `file` (the name
    of its file field) taken, and the identity that `authorize` makes of its token,
    which runs before the file is read."""
    reading = _Reading(values, file, authorize)
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    try:
        if kind == b"multipart/form-data" and options.get(b"boundary"):
            await _multipart(request, options[b"boundary"], reading)
        elif kind == b"application/x-www-form-urlencoded":
            await _urlencoded(request, reading)
        else:
            raise Invalid("expected a form (multipart/form-data or "
                          "application/x-www-form-urlencoded)")
    except StarletteHTTPException as exc:  # a body beyond --max-upload
        refused = Refused(str(exc.detail))
        refused.status = exc.status_code
        raise refused from None
    await reading.check(None)  # a form without a token
    return reading


async def _urlencoded(request: Request, reading: _Reading) -> None:
    """A form without a file: small, read whole, its token checked first."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FIELD_BYTES:
            raise Invalid(f"a form without a file is at most {FIELD_BYTES} bytes")
    try:
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                          max_num_fields=MAX_FIELDS)
    except ValueError:
        raise Invalid(f"a form has at most {MAX_FIELDS} fields") from None
    found = dict(pairs)
    await reading.check(found.get(TOKEN, "").strip())
    for name, value in pairs:
        if name != TOKEN:
            reading.take(name, value.encode("utf-8"), None)


async def _multipart(request: Request, boundary: bytes, reading: _Reading) -> None:
    """A form with a file, parsed as it arrives (see _take)."""
    parts: List[_Part] = []
    header: List[bytearray] = [bytearray(), bytearray()]  # a header's field and value
    ended: List[bool] = []

    def header_end() -> None:
        """Take a part's name and file name from its Content-Disposition."""
        if bytes(header[0]).lower() == b"content-disposition":
            _, options = parse_options_header(bytes(header[1]))
            parts[-1].name = options.get(b"name", b"").decode("utf-8", "replace")
            filename = options.get(b"filename")
            parts[-1].filename = None if filename is None else filename.decode("utf-8", "replace")
        header[0].clear()
        header[1].clear()

    def data(chunk: bytes, start: int, end: int) -> None:
        """A part's bytes as they come; a text field is bounded."""
        part = parts[-1]
        part.data += chunk[start:end]
        if part.filename is None and len(part.data) > FIELD_BYTES:
            raise Invalid(f"the form's field {part.name!r} is longer than {FIELD_BYTES} bytes")

    def begin() -> None:
        """A new part; a form has a few."""
        if len(parts) >= MAX_FIELDS:
            raise Invalid(f"a form has at most {MAX_FIELDS} fields")
        parts.append(_Part())

    parser = MultipartParser(boundary, {
        "on_part_begin": begin,
        "on_header_field": lambda chunk, start, end: header[0].extend(chunk[start:end]),
        "on_header_value": lambda chunk, start, end: header[1].extend(chunk[start:end]),
        "on_header_end": header_end,
        "on_part_data": data,
        "on_part_end": lambda: setattr(parts[-1], "done", True),
        "on_end": lambda: ended.append(True)})
    taken = 0
    try:
        async for chunk in request.stream():
            parser.write(chunk)
            taken = await _take(parts, taken, reading)
    except MultipartParseError as exc:
        raise Invalid(f"not a form: {exc}") from None
    if not ended:
        raise Invalid("not a form: its body ends before its last part does")
    await _take(parts, taken, reading)


async def _take(parts: Sequence[_Part], taken: int, reading: _Reading) -> int:
    """Take, in order, the parts that have arrived whole since the first `taken`: the
    token is checked at its arrival, and a file that comes before it is refused unread."""
    while taken < len(parts):
        part = parts[taken]
        if part.filename is not None and part.name != TOKEN and not reading.checked:
            raise Invalid("the form's token must come before its file")
        if not part.done:
            break
        if part.name == TOKEN:
            await reading.check(part.data.decode("utf-8", "replace").strip())
        else:
            reading.take(part.name, part.data, part.filename)
        taken += 1
    return taken


async def post_form(request: Request, values: Dict[str, str], file: Optional[str],
                    authorize: Callable[[Optional[str]], Any],
                    act: Callable[[Any, Dict[str, str], Optional[Upload]], str],
                    refused: Callable[[int, str, Dict[str, str]], Response]) -> Response:
    """A form's POST: read it (`values` are its text fields, filled in; `file` names its
    file field), make the identity of its token with `authorize`, then `act(identity,
    values, upload)`, which answers the path to go to. A refusal is answered by
    `refused(status, message, values)` (the form again, with the message) and logged as
    the API logs its own."""
    try:
        form = await read_form(request, values, file, authorize)
        location = await run_in_threadpool(act, form.identity, values, form.upload)
    except REFUSALS as exc:
        log_refusal(getattr(request.state, "request_id", "-"), request.method,
                    request.url.path, status_of(exc), str(exc))
        return await run_in_threadpool(refused, status_of(exc), str(exc), values)
    return RedirectResponse(location, status_code=303)


def uploaded(upload: Optional[Upload], what: str) -> Upload:
    """The form's file, or a refusal that asks for it."""
    if upload is None:
        raise Invalid(f"file: choose the {what} file to upload")
    return upload
