"""Writing output files so that an interrupted run never leaves one that looks complete."""

from __future__ import annotations

import os
import tempfile

from evalproto.errors import EvalprotoError


def write_atomically(path: str, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`.

    A rename within one directory is atomic, so readers see the old file or the whole
    new one, never a prefix.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise EvalprotoError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException as exc:
        os.unlink(temporary)
        if isinstance(exc, OSError):
            raise EvalprotoError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
