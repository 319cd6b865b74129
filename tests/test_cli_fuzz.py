"""Every command and option of the CLI, fed generated bad values: the run ends with an
`Error:` line and exit status 1 or 2 (or succeeds), never with a traceback.

Commands and options are read from the click group itself, so a new option is fuzzed
without anyone remembering to add it here. Each example takes a valid invocation of one
command and spoils one of its files or option values, or adds flags."""

import gzip
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import DE_EN_HYP, DE_EN_REFS, fake, read_lines, script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalproto.cli.main import main

LINES = 6

# Values that are read as numbers, counts, names or addresses somewhere; and text.
AWKWARD = ["", " ", "-1", "0", "1e999", "nan", "-inf", "1_0", "١٢", "１", "𝟏", "0x10",
           "99999999999999999999999", "'", '"', "a b", "\x00", "\udcff", "-", "--", "local2",
           "tcp://", "none", "None", "3,4", "1,2,3", ",", "\n", "bleu", "chrf", "ter",
           "bleu --no-such-option", "bleu 'unclosed", "no-such-metric", "combine",
           "combine bleu=nan", "f1", "f1 --labels a,a"]
TEXT = st.one_of(st.sampled_from(AWKWARD), st.text(max_size=12))
# Options whose values must stay small for the test to stay quick, or safe to run.
BOUNDED = {"--jobs": ["1", "2", "0", "-3", "x", "\u00b2"],
           "--confidence-n": ["1", "2", "50", "0", "-5", "x", "1e3"],
           "--paired-bs-n": ["1", "3", "50", "0", "x"], "--paired-ar-n": ["1", "7", "64", "0"],
           "--samples": ["1", "5", "0", "-1", "z"],
           "--scheduler": ["local2", "a b", "local:x", "local:0", "local:\u00b2", "tcp://", "::",
                           "/"],
           "--timeout": ["0", "-1", "nan", "inf", "1e309", "0.001", "x"]}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small valid inputs, and spoiled files of every kind a user may pass."""
    work = tmp_path_factory.mktemp("fuzz")

    def put(name, data):
        path = work / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(path)

    good = {
        "ref": put("ref.txt", "".join(line + "\n" for line in read_lines(DE_EN_REFS[0])[:LINES])),
        "ref2": put("ref2.txt", "".join(line + "\n" for line in read_lines(DE_EN_REFS[1])[:LINES])),
        "hyp": put("hyp.txt", "".join(line + "\n" for line in read_lines(DE_EN_HYP)[:LINES])),
        "log": put("we.jsonl", "".join(f'{{"target": "w{i}", "user": "u", "logp": -{i}.5}}\n'
                                       for i in range(LINES))),
        "groups": put("groups.txt", "a\nb\na,b\n\nb\na\n"),
        "scores": put("scores.txt", "0.5\n0.25\n1\n-0.125\n0.75\n0\n"),
    }
    stats = CliRunner().invoke(main, ["stats", good["ref"], good["hyp"], "-o",
                                      str(work / "good.stats")])
    assert stats.exit_code == 0, stats.output
    good["stats"] = str(work / "good.stats")
    (work / "folder").mkdir()
    bad = [
        str(work / "missing.txt"), str(work / "folder"), put("empty.txt", b""),
        put("binary.bin", bytes(range(256)) * 4), put("latin1.txt", "café\n".encode("latin-1")),
        put("nul.txt", b"a\x00b\n" * LINES), put("crlf.txt", b"a b\r\n" * LINES),
        put("short.txt", b"one line\n"), put("garbage.gz", b"\x1f\x8bnot really gzip"),
        put("truncated.gz", gzip.compress(b"a b c\n" * 100)[:30]),
        put("json.jsonl", b'{"target": 5}\n[1, 2]\n{"a": {"b": [1, 2, {"c": null}]}}\n'),
        put("deep.jsonl", b'{"target": "a", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"),
        put("stats.stats", b'#evalproto-stats {"format": 2, "metrics": [{}]}\nid\n'),
        put("cut.stats", Path(good["stats"]).read_bytes()[:-3]),
        put("tabs.txt", "\t\t\n \n|||\n\x85\u2028\n" * 2),
        put(b"name\xff.txt".decode("utf-8", "surrogateescape"), b"x\n" * LINES),
        put("surprisals.tsv", "sentence_id\ttoken_id\ttoken\tsurprisal\n1\t1\ta\tnan\n"),
    ]
    return good, bad


def commands():
    return sorted(main.commands)


def base_args(command, good):
    """A valid invocation of `command` (its words after the command's name)."""
    return {
        "corpus-score": [good["ref"], good["hyp"]],
        "stats": [good["ref"], good["hyp"], "-o", "-"],
        "reduce": [good["stats"]],
        "lm-score": [good["log"]],
        "lm-compare": [good["log"], good["log"]],
        "info": ["bleu"],
        "sacrebleu": [good["ref"], "-i", good["hyp"], "-m", "bleu", "chrf"],
        "report": [good["ref"], "-i", good["hyp"], good["ref2"], "-o", "-"],
        "import-scores": [good["scores"], "--metric", "M", "--system", "S", "-o", "-"],
    }.get(command, [])


def evaluator_commands(work):
    """-e values that are safe to run: missing or unparsable commands, a real evaluator
    with bad options, and fakes that misbehave."""
    return st.sampled_from([
        "no-such-evaluator-anywhere", "'unclosed", "", " ", "|||",
        f"{script('bleu-evaluator')} --no-such-option", f"{script('bleu-evaluator')} -tok x",
        fake(work, 'print("garbage", flush=True); continue'),
        fake(work, "sys.exit(7)"),
        fake(work, 'print("1e999 1 1", flush=True); continue'),
        fake(work, 'print("١ 2 3", flush=True); continue'),
    ])


@st.composite
def invocations(draw, files, work):
    good, bad = files
    command = draw(st.sampled_from(commands()))
    args = base_args(command, good)
    files = [i for i, word in enumerate(args) if word.startswith("/")]
    params = [p for p in main.commands[command].params if p.name != "help"]
    options = [p for p in params if isinstance(p, click.Option)]
    for _ in range(draw(st.integers(0, 3))):
        change = draw(st.sampled_from(["file", "option", "flag"]))
        if change == "file" and files:
            args[draw(st.sampled_from(files))] = draw(st.sampled_from(bad))
        elif change == "flag" and options:
            flags = [p for p in options if p.is_flag]
            if flags:
                args.append(draw(st.sampled_from(flags)).opts[-1])
        elif options:
            option = draw(st.sampled_from([p for p in options if not p.is_flag] or options))
            name = max(option.opts, key=len)
            if option.is_flag:
                args.append(name)
            elif name in ("--evaluator",):
                args += [name, draw(evaluator_commands(work))]
            elif name in BOUNDED:
                args += [name, draw(st.sampled_from(BOUNDED[name]))]
            elif name in ("--output", "--latex", "--json"):
                args += [name, draw(st.sampled_from([str(work), str(work / "no" / "dir"),
                                                     "/proc/version", "-"]))]
            elif name in ("--groups", "--freq-corpus", "--source"):
                args += [name, draw(st.sampled_from([good["groups"], *bad]))]
            elif isinstance(option.type, click.Choice):
                args += [name, draw(st.one_of(st.sampled_from(list(option.type.choices)),
                                              TEXT))]
            else:
                args += [name, draw(TEXT)]
    return [command, *args]


@pytest.mark.parametrize("seed", range(4))
def test_no_generated_bad_input_gives_a_traceback(files, tmp_path_factory, seed):
    work = tmp_path_factory.mktemp(f"work{seed}")

    @settings(max_examples=150, deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck))
    @given(args=invocations(files, work))
    def check(args):
        result = CliRunner().invoke(main, args, input="a b\n" * LINES)
        shown = f"evalproto {shlex.join(args)}\n{result.output}"
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"a traceback: {shown}") from result.exception
        assert "Traceback" not in result.output and "internal error" not in result.output, shown
        if args[0] == "sacrebleu":  # sacrebleu's own messages and statuses (17: FATAL)
            assert result.exit_code in (0, 1, 2, 17), shown
            return
        assert result.exit_code in (0, 1, 2), shown
        if result.exit_code:
            assert "Error:" in result.output, shown

    check()
