"""A byte that is not UTF-8 anywhere in a JSON Lines file (a used field, an id, a field
no one reads) is refused as in a text file: the file, the line and the byte, exit 1.
msgspec raises UnicodeDecodeError for such a byte (no DecodeError), which came out as
an internal error, and passes over an unread field's bytes without looking."""

import gzip
import shutil

import pytest
from conftest import run_cli

from evalproto.readers.lmzoo import read_spec

LM_FIXTURE = "tests/lm_fixture"

DATASET = [b'{"uid": "a", "answer": "yes", "tags": ["t"]}',
           b'{"uid": "b", "answer": ["no", "nein"], "tags": ["t", "u"], "note": "x"}']
PREDICTIONS = [b'{"id": "a", "pred": "yes"}', b'{"id": "b", "pred": "no", "note": "x"}']


def write(path, lines, compress=False):
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(gzip.compress(data) if compress else data)
    return str(path)


def broken(lines, line, old, new):
    """`lines` with `old` replaced by `new` (holding the bad byte) on line `line`."""
    changed = list(lines)
    assert old in changed[line - 1]
    changed[line - 1] = changed[line - 1].replace(old, new, 1)
    return changed


@pytest.mark.parametrize("where, dataset, predictions", [
    ("pred", DATASET, broken(PREDICTIONS, 2, b'"no"', b'"n\xff"')),
    ("prediction id", DATASET, broken(PREDICTIONS, 2, b'"b"', b'"b\xff"')),
    ("unread prediction field", DATASET, broken(PREDICTIONS, 2, b'"x"', b'"\xff"')),
    ("answer", broken(DATASET, 2, b'"nein"', b'"nei\xff"'), PREDICTIONS),
    ("tag", broken(DATASET, 2, b'"u"', b'"\xff"'), PREDICTIONS),
    ("uid", broken(DATASET, 2, b'"b"', b'"\xffb"'), PREDICTIONS),
    ("unread dataset field", broken(DATASET, 2, b'"note"', b'"no\xffte"'), PREDICTIONS),
    ("key", broken(DATASET, 2, b'"note"', b'"\xff"'), PREDICTIONS),
])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_dynabench_file_with_a_byte_that_is_not_utf8(tmp_path, where, dataset,
                                                       predictions, compress):
    suffix = ".gz" if compress else ""
    dataset_path = write(tmp_path / f"d.jsonl{suffix}", dataset, compress)
    predictions_path = write(tmp_path / f"p.jsonl{suffix}", predictions, compress)
    bad = dataset_path if dataset is not DATASET else predictions_path
    result = run_cli("corpus-score", "--data-format", "dynabench", dataset_path,
                     predictions_path, "-m", "exact-match")
    assert result.exit_code == 1, result.output
    assert result.output == (f"Error: {bad}: line 2: invalid UTF-8 (byte 0xff); expected "
                             f"UTF-8 text\n")


def test_an_open_assistant_export_with_a_byte_that_is_not_utf8(tmp_path):
    export = write(tmp_path / "oasst.jsonl", [
        b'{"message_id": "m1", "role": "assistant", "text": "hi", "lang": "en"}',
        b'{"message_id": "m2", "role": "prompter", "text": "\xc3(", "lang": "en"}'])
    predictions = write(tmp_path / "p.jsonl", [b'{"id": "m1", "pred": "hi"}'])
    result = run_cli("corpus-score", "--data-format", "oasst", export, predictions,
                     "-m", "exact-match")
    assert result.exit_code == 1
    assert result.output == (f"Error: {export}: line 2: invalid UTF-8 (byte 0xc3); expected "
                             f"UTF-8 text\n")


@pytest.mark.parametrize("reader", ["compiled", "python"])
@pytest.mark.parametrize("field", ["target", "unread"])
def test_an_lm_challenge_log_with_a_byte_that_is_not_utf8(tmp_path, monkeypatch, reader,
                                                          field):
    """The compiled reader declines the chunk; msgspec, which takes it then, read an
    unread field's bytes without a look (and so did the compiled reader's decline)."""
    if reader == "python":
        monkeypatch.setenv("EVALPROTO_PURE_PYTHON", "1")
    with open(f"{LM_FIXTURE}/logs/we.jsonl", "rb") as stream:
        lines = stream.read().splitlines()[:5]
    old, new = ((b'"target": "', b'"target": "\xfe') if field == "target"
                else (b'"target"', b'"extra": "\xfe", "target"'))
    log = write(tmp_path / "we.jsonl", broken(lines, 4, old, new))
    result = run_cli("lm-score", log)
    assert result.exit_code == 1, result.output
    assert result.output == (f"Error: {log}: line 4: invalid UTF-8 (byte 0xfe); expected "
                             f"UTF-8 text\n")


def test_an_lm_zoo_spec_with_a_byte_that_is_not_utf8(tmp_path):
    spec = tmp_path / "spec.json"
    shutil.copy(f"{LM_FIXTURE}/zoo/spec.json", spec)
    data = spec.read_bytes()
    line = data[:data.index(b'"name"')].count(b"\n") + 1
    spec.write_bytes(data.replace(b'"name"', b'"n\xe9": 1, "name"', 1))
    with pytest.raises(Exception) as caught:
        read_spec(str(spec))
    assert str(caught.value) == (f"{spec}: line {line}: invalid UTF-8 (byte 0xe9); "
                                 f"expected UTF-8 text")
