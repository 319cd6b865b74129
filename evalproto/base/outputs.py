"""Writing results so that an interrupted run never leaves a file that looks complete,
and nothing but a regular file is ever replaced.

`-` is standard output. Text is written as UTF-8; the undecodable bytes of a file name
that is not UTF-8 (a system's name, say) are written as backslash escapes. A regular
file (or a path where none exists yet) is written whole to an unnamed temporary file
beside it (Linux's O_TMPFILE), which is given a name
only once complete and renamed over the target at once: readers see the old file or the
whole new one, and a run killed at any moment leaves no stray temporary file behind.
The target keeps its permissions. Anything else at the path (a FIFO, a device, a
socket) is written through, never replaced; a symbolic link is followed and its target
written as above. A name of a stream this process holds open (/dev/stdout,
/dev/stderr, /dev/fd/N, /proc/self/fd/N: the shell's `>(gzip > out.gz)` too) is
written through that descriptor, where the stream stands, so that what the shell wrote
before and after stays. No output may be one of the command's inputs (`check_outputs`).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from typing import Dict, Iterable, Optional, Tuple

from evalproto.base.errors import EvalprotoError, UsageProblem

STDOUT = "-"
_STREAM = re.compile(r"/dev/(?:(stdout)|(stderr)|fd/([0-9]+))|/proc/(self|[0-9]+)/fd/([0-9]+)")


def stream_descriptor(path: str) -> Optional[int]:
    """The descriptor an open-stream name stands for in this process ("-" and
    /dev/stdout: 1), or None for any other path."""
    if path == STDOUT:
        return 1
    found = _STREAM.fullmatch(path)
    if found is None:
        return None
    stdout, stderr, fd, process, proc_fd = found.groups()
    if process is not None and process not in ("self", str(os.getpid())):
        return None  # another process's stream is a path like any other
    return 1 if stdout else 2 if stderr else int(fd or proc_fd)


def check_outputs(outputs: Iterable[Optional[str]], inputs: Iterable[str]) -> None:
    """Refuse, before any work, an output that is one of the inputs (the same file, by
    device and inode, whatever the path says) or another output: it would be replaced
    by the results, and the input lost. Paths that do not exist yet are fine."""
    read: Dict[object, str] = {}
    for path in inputs:
        found = _identity(path)
        if found is not None:
            read.setdefault(found, path)
    written: Dict[object, str] = {}
    for output in outputs:
        if output is None or output == STDOUT:
            continue
        path = output
        identity: object = _identity(path) or os.path.realpath(path)
        if identity in read:
            same = "" if read[identity] == path else f" ({read[identity]})"
            raise UsageProblem(f"{path}: the output is one of the command's inputs{same}; "
                               f"writing the results there would destroy it: give another "
                               f"file")
        if identity in written and stream_descriptor(path) is None:
            raise UsageProblem(f"{path}: given as two outputs ({written[identity]} too); give "
                               f"each its own file")
        written[identity] = path


def _identity(path: str) -> Optional[Tuple[int, int]]:
    """(device, inode) of what a path names, an open stream's file included; None for
    standard input or output ("-"), a path that does not exist, or one that cannot be
    read (the command says why when it gets there)."""
    if path == STDOUT or "\0" in path:
        return None
    try:
        descriptor = stream_descriptor(path)
        status = os.fstat(descriptor) if descriptor is not None else os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def write_output(path: str, text: str) -> None:
    """Write `text` to `path`: stdout for "-", atomically for a regular file, and
    straight through for anything else."""
    descriptor = stream_descriptor(path)
    if descriptor == 1:  # "-" or /dev/stdout: where this process's output stands
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
        sys.stdout.buffer.flush()
        return
    if descriptor is not None:
        _write_through(path, descriptor, text.encode("utf-8", "backslashreplace"))
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


def _write_through(path: str, descriptor: int, data: bytes) -> None:
    """Write to a stream this process holds, where it stands (its shell's offset)."""
    if descriptor == 2:
        sys.stderr.flush()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
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
    import tempfile  # here: standard output, the usual output, needs none

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
