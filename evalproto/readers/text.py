"""Reading plain-text corpora: one segment per line, `-` for stdin, `.gz` transparently.

Lines are split on "\\n" only, so a stray "\\r", U+2028 or U+0085 inside a segment
stays inside it, and trailing whitespace (including a CRLF "\\r") is stripped, as
sacrebleu does. Every problem is an InputError naming the file and, where there is
one, the line.
"""

from __future__ import annotations

import gzip
import io
import mmap
import operator
import os
import stat
import sys
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import (
    Any,
    BinaryIO,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
    overload,
)

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.items import SegmentNumbers
from evalproto.base.progress import QUIET, Progress

STDIN = "-"


GZIP_MAGIC = b"\x1f\x8b"


MAX_LINE_BYTES = 64 << 20
"""The longest line an input file may hold (64 MiB). Input is decompressed as a stream
and checked as it comes, so a small .gz that expands to gigabytes without a line end
(a decompression bomb) is refused after 64 MiB instead of filling the memory."""
_READ_BYTES = 1 << 20


def read_bytes(path: str, span: Optional[Tuple[int, int]] = None) -> bytes:
    """The whole content of a file, or of stdin for "-", decompressed when it is gzip
    (by its name or, e.g. on stdin, by its first bytes, which UTF-8 text cannot have);
    or only the bytes [begin, end) of a plain file (see `is_plain`). A line longer than
    MAX_LINE_BYTES is an error."""
    with _reading(path):
        if span is not None:
            with open(path, "rb") as stream:
                stream.seek(span[0])
                return _bounded(path, stream, span[1] - span[0])
        with _opened(path) as stream:
            if _is_regular_file(stream):  # checked where it lies, then read at once
                _check_line_lengths(path, stream)
                return stream.read()
            return _bounded(path, stream)


@contextmanager
def _reading(path: str) -> Iterator[None]:
    """What goes wrong while `path` is read, as an InputError that names it."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"{path}: truncated or corrupt gzip data ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError:  # open() refuses a path holding a NUL
        raise InputError(f"{path!r}: not a file name: a file name cannot hold a NUL "
                         f"character") from None


def _opened(path: str) -> BinaryIO:
    """The file (or stdin) as a binary stream, decompressing gzip as it is read."""
    if path == STDIN:
        stream: BinaryIO = sys.stdin.buffer
        if not hasattr(stream, "peek"):  # not a real stdin (a test harness's): read it now
            stream = io.BufferedReader(io.BytesIO(stream.read()))
    elif path.endswith(".gz"):
        return cast(BinaryIO, gzip.open(path, "rb"))
    else:
        stream = open(path, "rb")
    if stream.peek(2)[:2] == GZIP_MAGIC:
        return cast(BinaryIO, gzip.GzipFile(fileobj=stream, mode="rb"))
    return stream


def _bounded(path: str, stream: BinaryIO, most: Optional[int] = None) -> bytes:
    """Everything (or `most` bytes) that `stream` gives, read a megabyte at a time; a
    line longer than MAX_LINE_BYTES is an error that names it."""
    pieces: List[bytes] = []
    line_length = 0  # bytes since the last line end
    lines = 0
    left = most
    while left is None or left > 0:
        piece = stream.read(_READ_BYTES if left is None else min(_READ_BYTES, left))
        if not piece:
            break
        if left is not None:
            left -= len(piece)
        first = piece.find(b"\n")
        if first < 0:
            line_length += len(piece)
        else:
            line_length += first
        if line_length > MAX_LINE_BYTES:
            raise _too_long(path, lines + 1)
        if first >= 0:
            lines += piece.count(b"\n")
            line_length = len(piece) - piece.rindex(b"\n") - 1
        pieces.append(piece)
    return b"".join(pieces)


def _is_regular_file(stream: BinaryIO) -> bool:
    """Whether `stream` reads a regular file as it is (not through gzip)."""
    try:
        return isinstance(stream, io.BufferedReader) and stat.S_ISREG(
            os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):  # no file behind it (a test's stdin)
        return False


def _check_line_lengths(path: str, stream: BinaryIO) -> None:
    """An InputError naming the first line of a regular file longer than
    MAX_LINE_BYTES, found in the file mapped into memory, so that such a file is never
    read whole. Each step looks for the last line end within MAX_LINE_BYTES of a
    line's start (a few pages at the window's end, as a rule), and starts again after
    it."""
    if os.fstat(stream.fileno()).st_size <= MAX_LINE_BYTES:
        return
    with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
        start = 0
        while len(data) - start > MAX_LINE_BYTES:
            end = data.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
            if end < 0:
                raise _too_long(path, data[:start].count(b"\n") + 1)
            start = end + 1


def _too_long(path: str, line: int) -> InputError:
    return InputError(f"{path}: line {line} is longer than {MAX_LINE_BYTES >> 20} MiB; "
                      f"expected text with one segment or record per line")


def is_plain(path: str, data: bytes) -> bool:
    """Whether `data`, as read_bytes gave it, is the file's bytes on disk, so that byte
    offsets into it are offsets into the file."""
    return path != STDIN and not path.endswith(".gz") and data[:2] != GZIP_MAGIC


def decoded_text(path: str, data: Union[bytes, memoryview], first_line: int = 0,
             offset: int = 0, whole: Optional[bytes] = None) -> str:
    """`data` as text; invalid UTF-8 is an InputError naming the line, counted from
    `first_line` (0-based) at byte `offset` of `whole` (data itself by default)."""
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as exc:
        source = whole if whole is not None else bytes(data)
        line = first_line + source.count(b"\n", 0, offset + exc.start) + 1
        raise InputError(
            f"{path}: line {line}: invalid UTF-8 (byte 0x{source[offset + exc.start]:02x}); "
            f"expected UTF-8 text") from None


def split_lines(path: str, data: bytes, first_line: int = 0) -> List[str]:
    """The lines in `data` without line ends or trailing whitespace; `data` is the part
    of `path` that starts at line `first_line` (0-based), which errors name."""
    lines = decoded_text(path, data, first_line).split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


_CHECKED_BYTES = 1 << 24
_ITERATED_LINES = 10_000
_COUNTED_LINES = 1 << 17
_ENDS_AS_IS = np.array([byte < 0x80 and not chr(byte).isspace() for byte in range(256)])
"""The last bytes of a line that rstrip() keeps and that end a character: ASCII, not
whitespace."""


def _identity(status: Optional[os.stat_result]) -> Optional[Tuple[int, int, int, int]]:
    if status is None:
        return None
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


_FOUND_BYTES = 1 << 26


def line_ends(data: bytes) -> np.ndarray:
    """The offset of every line's end in `data` (its "\n", or the end of a last line
    without one), as uint32 where they fit (ten million lines in 40 MB), found 64 MB at a
    time (not with a mask the size of the file)."""
    kind = np.uint32 if len(data) < 2 ** 32 else np.int64
    whole = np.frombuffer(data, dtype=np.uint8)
    pieces = [np.flatnonzero(whole[start:start + _FOUND_BYTES] == ord("\n")).astype(kind) + start
              for start in range(0, len(data), _FOUND_BYTES)]
    if data and not data.endswith(b"\n"):
        pieces.append(np.array([len(data)], kind))
    return np.concatenate(pieces) if pieces else np.zeros(0, kind)


class Lines(Sequence[str]):
    """The lines of one text file as read_lines gives them, kept as the offsets of its
    line ends and, unless the file is a plain file on disk (`on_disk`, its stat when
    `data` was read), its UTF-8 bytes: a million lines take 8 MB (and the file's size
    for stdin and .gz), where a list of str takes several times the file. The UTF-8
    is checked once, whole; lines are read and decoded a slice at a time, and a file
    that changes in between is an error."""

    def __init__(self, path: str, data: bytes, on_disk: Optional[os.stat_result] = None
                 ) -> None:
        self.path = path
        self._data: Optional[bytes] = None if on_disk else data
        self._on_disk = on_disk
        self._ends = line_ends(data)
        view = memoryview(data)
        start = 0
        while start < len(data):  # in blocks that end at a line end, not inside a character
            stop = data.find(b"\n", start + _CHECKED_BYTES)
            stop = len(data) if stop < 0 else stop + 1
            decoded_text(path, view[start:stop], 0, start, data)
            start = stop

    @classmethod
    def on_disk(cls, path: str, ends: np.ndarray, status: os.stat_result) -> Lines:
        """The Lines of a plain file whose line ends (and UTF-8) were found as it was
        read a piece at a time (streamed_line_ends), `status` its stat then."""
        lines = cls.__new__(cls)
        lines.path, lines._data, lines._on_disk, lines._ends = path, None, status, ends
        return lines

    def _bytes(self, begin: int, end: int) -> bytes:
        if self._data is not None:
            return self._data[begin:end]
        with open(self.path, "rb") as stream:
            data = os.pread(stream.fileno(), end - begin, begin)
            if _identity(os.fstat(stream.fileno())) != _identity(self._on_disk) \
                    or len(data) != end - begin:
                raise InputError(f"{self.path}: the file changed while evalproto was reading "
                                 f"it; score it again once it is written")
        return data

    def __len__(self) -> int:
        return len(self._ends)

    def _begin(self, line: int) -> int:
        return int(self._ends[line - 1]) + 1 if line else 0

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> List[str]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[str, List[str]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[line] for line in range(start, stop, step)]
            if start >= stop:
                return []
            text = str(self._bytes(self._begin(start), int(self._ends[stop - 1])), "utf-8")
            return [line.rstrip() for line in text.split("\n")]
        line = operator.index(index)
        if line < 0:
            line += len(self)
        if not 0 <= line < len(self):
            raise IndexError(f"{self.path} has {len(self)} lines, not {index}")
        return str(self._bytes(self._begin(line), int(self._ends[line])), "utf-8").rstrip()

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _ITERATED_LINES):
            yield from self[start:start + _ITERATED_LINES]

    def count_endings(self, suffix: str) -> int:
        """How many lines end with `suffix` (`sum(line.endswith(suffix) for line in
        self)`), found in the bytes, so that a check of every line (BLEU's for
        tokenized text) does not decode a million of them again. A line whose last
        byte may be stripped whitespace or part of a longer character is decoded."""
        wanted = suffix.encode("utf-8")
        count = 0
        for first in range(0, len(self), _COUNTED_LINES):
            last = min(first + _COUNTED_LINES, len(self))
            base = self._begin(first)
            data = np.frombuffer(self._bytes(base, int(self._ends[last - 1])), dtype=np.uint8)
            ends = self._ends[first:last] - base
            starts = np.concatenate(([0], ends[:-1] + 1))
            plain = ends > starts
            plain[plain] = _ENDS_AS_IS[data[ends[plain] - 1]]
            matched = plain & (ends - starts >= len(wanted))
            for back, byte in enumerate(reversed(wanted), 1):
                matched[matched] = data[ends[matched] - back] == byte
            count += int(np.count_nonzero(matched))
            for line in np.flatnonzero(~plain).tolist():
                text = str(data[starts[line]:ends[line]].tobytes(), "utf-8")
                count += text.rstrip().endswith(suffix)
        return count

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Lines, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Lines of {self.path}: {len(self)}>"


class SegmentReferences(Sequence[List[str]]):
    """Each segment's references, from one column of lines per reference file, read a
    slice at a time as the lines are."""

    def __init__(self, columns: Sequence[Sequence[str]]) -> None:
        self.columns = list(columns)

    def __len__(self) -> int:
        return len(self.columns[0])

    @overload
    def __getitem__(self, index: int) -> List[str]: ...

    @overload
    def __getitem__(self, index: slice) -> List[List[str]]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[List[str], List[List[str]]]:
        if isinstance(index, slice):
            return [list(segment) for segment in zip(*(column[index] for column in self.columns))]
        return [column[index] for column in self.columns]

    def __iter__(self) -> Iterator[List[str]]:
        for start in range(0, len(self), _ITERATED_LINES):
            yield from self[start:start + _ITERATED_LINES]


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file, without line ends or trailing whitespace."""
    return split_lines(path, read_bytes(path))


def count_lines(data: bytes) -> int:
    """How many lines read_lines finds in `data`."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def line_starts(data: bytes, lines: Sequence[int]) -> List[int]:
    """The byte offset at which each of the given lines (0-based) starts; the line after
    the last starts at the end of `data`."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))
    return [int(starts[line]) if line < len(starts) else len(data) for line in lines]


def read_line_range(path: str, start: int, stop: int,
                    span: Optional[Tuple[int, int]] = None) -> List[str]:
    """Lines [start, stop) of a file, as read_lines gives them, decoding only those. With
    `span`, their byte offsets in a plain file, only those bytes are read."""
    if span is not None:
        return split_lines(path, read_bytes(path, span), start)
    data = read_bytes(path)
    begin, end = line_starts(data, [start, stop])
    return split_lines(path, data[begin:end], start)


def parse_jsonl(path: str, data: bytes) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """(line number, object) for every non-empty line of JSON Lines (parsed by msgspec,
    several times faster than the json module on large files). Callers that keep the
    objects read under `paused_gc`."""
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line or line.isspace():  # no copy, unlike strip()
            continue
        row = decode_json_line(path, number, line)
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {number}: expected a JSON object")
        yield number, row


def decode_json_line(path: str, number: int, line: bytes,
                     decode: Optional[Callable[[bytes], Any]] = None) -> Any:
    """One line of JSON Lines (line `number` of `path`), decoded by `decode` (msgspec's
    JSON decoder by default). Bytes that are not UTF-8 are refused as in a text file,
    naming the line and the byte: msgspec raises UnicodeDecodeError for them, which is
    no DecodeError. A typed decoder's ValidationError is the caller's to word."""
    import msgspec  # here: plain text, the usual input, never needs it

    try:
        return (decode or msgspec.json.decode)(line)
    except UnicodeDecodeError as exc:
        decoded_text(path, line, number - 1)  # raises, naming the byte
        raise InputError(f"{path}: line {number}: not JSON: {exc}") from None
    except msgspec.ValidationError as exc:
        if decode is not None:  # JSON, but not of the decoder's type: the caller says so
            raise
        raise InputError(f"{path}: line {number}: not JSON: {exc}") from None  # 1e999
    except (msgspec.DecodeError, RecursionError) as exc:
        if not line.isascii():  # a byte that is not UTF-8 is said as such first
            decoded_text(path, line, number - 1)
        raise InputError(f"{path}: line {number}: not JSON: {exc}") from None


@dataclass
class Corpus:
    """References per segment, the hypotheses of one or more systems, segment ids, and
    each segment's tags when the data has them."""

    refs: Sequence[Sequence[str]]
    systems: Dict[str, Sequence[str]]
    ids: Sequence[str]
    tags: Optional[List[List[str]]] = None

    @property
    def nrefs(self) -> int | str:
        """References per segment, or "var" when it varies, as sacrebleu writes it."""
        if isinstance(self.refs, SegmentReferences):
            return len(self.refs.columns)
        counts = {len(segment) for segment in self.refs}
        return counts.pop() if len(counts) == 1 else "var"


def check_inputs(ref_paths: Sequence[str], hyp_paths: Sequence[str]) -> None:
    """Refuse stdin given twice and a system given twice."""
    if [*ref_paths, *hyp_paths].count(STDIN) > 1:
        raise InputError("standard input ('-') can be read only once")
    for path in set(hyp_paths):
        if hyp_paths.count(path) > 1:
            raise InputError(f"{path}: given twice as a system to score")


def empty_file(path: str) -> InputError:
    return InputError(f"{path}: file is empty; expected one segment per line")


def check_line_counts(ref_paths: Sequence[str], hyp_paths: Sequence[str],
                      counts: Dict[str, int]) -> None:
    """Every file must have as many lines as the first reference file."""
    first = ref_paths[0]
    for path in [*ref_paths[1:], *hyp_paths]:
        if counts[path] != counts[first]:
            raise InputError(
                f"{first} has {counts[first]} lines but {path} has {counts[path]} lines; "
                f"every file needs one line per segment")


def streamed_line_ends(path: str, size: int) -> Optional[np.ndarray]:
    """The line ends of a plain file of `size` bytes (as line_ends finds them in its
    bytes), read _CHECKED_BYTES at a time and never held whole, each piece's UTF-8 and
    lines' lengths checked as Lines and read_bytes check them; None for a file that is
    gzip by its first bytes."""
    kind = np.uint32 if size < 2 ** 32 else np.int64
    found: List[np.ndarray] = []
    start = lines = 0  # where `rest`, the part of a line not yet ended, starts
    rest = b""
    with _reading(path), open(path, "rb") as stream:
        if stream.peek(2)[:2] == GZIP_MAGIC:
            return None
        while True:
            piece = stream.read(_CHECKED_BYTES)
            data = rest + piece if rest else piece
            cut = data.rfind(b"\n") + 1 if piece else len(data)  # the whole rest at the end
            if len(data) - cut > MAX_LINE_BYTES:
                raise _too_long(path, lines + 1)
            block = memoryview(data)[:cut]
            ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == ord("\n"))
            if not piece and cut:
                ends = np.append(ends, cut)  # a last line without a line end
            lengths = np.diff(ends, prepend=-1) - 1
            if len(lengths) and lengths.max() > MAX_LINE_BYTES:
                raise _too_long(path, lines + int(np.argmax(lengths > MAX_LINE_BYTES)) + 1)
            decoded_text(path, block, lines)
            found.append(ends.astype(kind) + start)  # below 2**32 where kind is uint32
            start, lines, rest = start + cut, lines + len(ends), data[cut:]
            if not piece:
                return np.concatenate(found)


def _lines_of(path: str) -> Lines:
    """A file's Lines: a plain file is read a piece at a time (streamed_line_ends) and
    read again when needed, if it did not change while it was read; stdin and gzip,
    read whole, are kept."""
    try:
        before = os.stat(path) if path != STDIN else None
    except (OSError, ValueError):
        before = None  # read_bytes says what is wrong
    if before is not None and stat.S_ISREG(before.st_mode) and not path.endswith(".gz"):
        ends = streamed_line_ends(path, before.st_size)
        if ends is not None and _identity(os.stat(path)) == _identity(before):
            return Lines.on_disk(path, ends, before)
    data = read_bytes(path)
    plain = before is not None and stat.S_ISREG(before.st_mode) and is_plain(path, data)
    if plain and _identity(os.stat(path)) == _identity(before):
        return Lines(path, data, before)
    return Lines(path, data)


def looks_like_json_lines(lines: Sequence[str]) -> bool:
    """Whether every line of a text is a JSON object (blank lines aside), as a dataset
    or a file of predictions is, rather than one segment per line."""
    found = False
    for line in lines:
        if not line:
            continue
        if not (line.startswith("{") and line.endswith("}")):
            return False
        import msgspec  # here: plain text returns at its first line

        try:
            if not isinstance(msgspec.json.decode(line), dict):
                return False
        except (msgspec.DecodeError, RecursionError):
            return False
        found = True
    return found


def read_corpus(ref_paths: Sequence[str], hyp_paths: Sequence[str],
                progress: Progress = QUIET) -> Corpus:
    """Read reference files and hypothesis files, checking they align line by line."""
    check_inputs(ref_paths, hyp_paths)
    columns = {}
    phase = progress.start("reading", len(ref_paths) + len(hyp_paths))
    for path in [*ref_paths, *hyp_paths]:
        lines = _lines_of(path)
        if not lines:
            raise empty_file(path)
        columns[path] = lines
        phase.advance()
    phase.close()
    check_line_counts(ref_paths, hyp_paths, {path: len(lines) for path, lines in columns.items()})
    refs = SegmentReferences([columns[path] for path in ref_paths])
    systems: Dict[str, Sequence[str]] = {}
    for path in hyp_paths:
        found = stdin_columns(columns[path]) if path == STDIN else [columns[path]]
        if len(found) == 1:
            systems[path] = columns[path]
        else:  # named as sacrebleu names them
            systems.update({f"System {number}": column
                            for number, column in enumerate(found, 1)})
    return Corpus(refs, systems, SegmentNumbers(len(refs)))


def stdin_columns(lines: Sequence[str]) -> List[List[str]]:
    """Standard input's systems as sacrebleu reads them: one per tab-separated field
    of the first line (its fields keep their trailing whitespace, later lines' lose
    it, as in sacrebleu). A later line with another number of fields, a tab in a
    one-system input among them, is an InputError naming it."""
    columns: List[List[str]] = [[field] for field in lines[0].split("\t")] if lines else [[]]
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != len(columns):
            raise InputError(f"standard input: line {number}: {len(fields)} tab-separated "
                             f"fields, but line 1 has {len(columns)}: standard input holds "
                             f"one system per tab-separated column, as sacrebleu reads it")
        for column, field in zip(columns, fields):
            column.append(field.rstrip())
    return columns
