"""Writing results so that an interrupted run never leaves a file that looks complete,
and nothing but a regular file is ever replaced.

`-` is standard output. Text is written as UTF-8; the undecodable bytes of a file name
that is not UTF-8 (a system's name, say) are written as backslash escapes. A regular
file (or a path where none exists yet) is written whole to an unnamed temporary file
beside it (Linux's O_TMPFILE), which is given a name
only once complete and renamed over the target at once: readers see the old file or the
whole new one, and a run killed at any moment leaves no stray temporary file behind.
The target keeps its permissions. Anything else at the path (a FIFO, a device such as
/dev/stdout, a socket) is written through, never replaced; a symbolic link is followed
and its target written as above.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile

from evalproto.base.errors import EvalprotoError

STDOUT = "-"


def write_output(path: str, text: str) -> None:
    """Write `text` to `path`: stdout for "-", atomically for a regular file, and
    straight through for anything else."""
    if path == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
        sys.stdout.buffer.flush()
        return
    if "\0" in path:
        raise EvalprotoError(f"{path!r}: not a file name: a file name cannot hold a NUL "
                             f"character")
    target = os.path.realpath(path)
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    try:
        if status is not None and not stat.S_ISREG(status.st_mode):
            if stat.S_ISDIR(status.st_mode):
                raise EvalprotoError(f"{path}: cannot write: it is a directory")
            with open(target, "w", encoding="utf-8", errors="backslashreplace",
                      newline="\n") as stream:
                stream.write(text)
            return
        mode = stat.S_IMODE(status.st_mode) if status else 0o666 & ~_umask()
        _replace(target, text.encode("utf-8", "backslashreplace"), mode)
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def _replace(target: str, data: bytes, mode: int) -> None:
    directory, name = os.path.split(target)
    try:
        handle = os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except (AttributeError, OSError) as exc:  # not Linux, or a filesystem without it
        if isinstance(exc, OSError) and exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR,
                                                          errno.EINVAL):
            raise
        return _replace_through_named_file(target, data, mode)
    folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _write_all(handle, data, mode)
        # linkat with AT_SYMLINK_FOLLOW names the unnamed file (os.link uses linkat,
        # rather than link, only when given a directory descriptor).
        source = f"/proc/self/fd/{handle}"
        try:
            os.link(source, name, dst_dir_fd=folder)  # a new file: it appears whole
            return
        except FileExistsError:
            pass
        temporary = f".{name}.{os.urandom(6).hex()}.tmp"
        os.link(source, temporary, dst_dir_fd=folder)
        try:
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(handle)
        os.close(folder)


def _replace_through_named_file(target: str, data: bytes, mode: int) -> None:
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target),
                                         prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        _write_all(handle, data, mode)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
    finally:
        os.close(handle)


def _write_all(handle: int, data: bytes, mode: int) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view):]
    os.fchmod(handle, mode)
    os.fsync(handle)


def _cannot_write(path: str, exc: OSError) -> EvalprotoError:
    return EvalprotoError(f"{path}: cannot write: {exc.strerror or exc}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
