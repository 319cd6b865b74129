"""The names the service stores (tasks, datasets, teams, models) follow Dynabench's rule
for dataset names, and the names of uploads (used in messages) are base names: nothing
from a request becomes a path, and a name from the service can safely name a file.
Tokens are printable ASCII."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence
from urllib.parse import urlsplit

from evalproto.service.errors import Invalid

NAME_RULE = "lowercase letters, digits and dashes, starting with a letter or digit"
NAME_LENGTH = 64
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
MAX_NUMBER = 2**31 - 1
"""The largest round or id: the database's Integer columns (PostgreSQL's are 32-bit)."""
_NUMBER = re.compile(r"[0-9]{1,10}\Z")  # ASCII digits only: "²".isdigit() is true
_UPLOAD_NAME = re.compile(r"[^\x00-\x1f\x7f/\\]{1,200}\Z")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
DESCRIPTION_LENGTH = 500
LINK_LENGTH = 2000
RESERVED_KEYS = {"input": ("id", "uid"), "output": ("id", "pred")}
"""Keys a task's I/O may not declare: what every example and every reply carries."""


def check_name(value: str, what: str) -> str:
    """`value`, if it is a valid name of a `what` (task, dataset, team, model)."""
    if not _NAME.match(value) or len(value) > NAME_LENGTH:
        raise Invalid(f"{what} name {value!r} is not valid: a name is {NAME_RULE}, at most "
                      f"{NAME_LENGTH} characters")
    return value


def upload_name(value: Optional[str], default: str) -> str:
    """The name an upload is called in messages (a file's base name; never a path)."""
    if value is None:
        return default
    if not _UPLOAD_NAME.match(value):
        raise Invalid(f"filename {value[:200]!r}: give a file's base name, without "
                      f"slashes or control characters")
    return value


def whole_number(value: str) -> Optional[int]:
    """`value` as a whole number of 0 to MAX_NUMBER written in ASCII digits, or None."""
    if not _NUMBER.match(value) or int(value) > MAX_NUMBER:
        return None
    return int(value)


def token_problem(token: str) -> Optional[str]:
    """What keeps `token` from being one, or None. The service's tokens are URL-safe
    ASCII, and an HTTP header carries nothing but printable ASCII (a line break would
    end it), so no other token could ever be presented."""
    bad = next((character for character in token if not "!" <= character <= "~"), None)
    if bad is None:
        return None
    what = ("a line break" if bad in "\r\n" else "a space" if bad == " "
            else "a control character" if bad.isascii() else "a character that is not ASCII")
    return (f"it holds {what}; a token is printable ASCII without spaces, as `evalproto "
            f"board add-team` and the server's admin token file give it")


def check_keys(keys: Sequence[str], what: str) -> List[str]:
    """A task's input or output keys (`what`), if each is a key a JSON row can name
    plainly, once, and none is one every row carries anyway."""
    for key in keys:
        if not _KEY.match(key):
            raise Invalid(f"{what} key {key[:80]!r} is not valid: a key is letters, digits, "
                          f"'_', '.' and '-', starting with a letter or '_', at most 64")
        if key in RESERVED_KEYS[what]:
            raise Invalid(f"{what} key {key!r}: every {'example' if what == 'input' else 'reply'}"
                          f" carries it already; name the task's own keys")
    repeated = [key for key in keys if list(keys).count(key) > 1]
    if repeated:
        raise Invalid(f"{what} key {repeated[0]!r} is given twice")
    return list(keys)


def check_description(value: str) -> str:
    """A model's description, as its team sets it: one line of text (no control
    characters: it is shown inline on every page), at most DESCRIPTION_LENGTH; ""
    removes it."""
    text = value.strip()
    if len(text) > DESCRIPTION_LENGTH:
        raise Invalid(f"description: {len(text)} characters; at most {DESCRIPTION_LENGTH}")
    if any(ord(character) < 32 or 127 <= ord(character) < 160 for character in text):
        raise Invalid("description: one line of text, without control characters")
    return text


def check_link(value: str) -> str:
    """A link to a model's paper or code: an absolute http or https address of printable
    ASCII (a page links to it: no javascript: or data: address, nothing a browser would
    read otherwise than shown); "" removes it."""
    link = value.strip()
    if not link:
        return link
    if len(link) > LINK_LENGTH or any(not "!" <= c <= "~" for c in link):
        raise Invalid(f"url {link[:80]!r}: an http or https address of printable ASCII "
                      f"without spaces, at most {LINK_LENGTH} characters")
    try:
        parts = urlsplit(link)
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid(f"url {link[:80]!r}: give an absolute http:// or https:// address")
    return link


@dataclass(frozen=True)
class About:
    """What a team says of its model: a description and a link to its paper or code
    (None: left as it is; "": removed)."""

    description: Optional[str] = None
    url: Optional[str] = None

    def checked(self) -> About:
        """Itself, if each part is one a page can show (check_description, check_link)."""
        return About(None if self.description is None else check_description(self.description),
                     None if self.url is None else check_link(self.url))
