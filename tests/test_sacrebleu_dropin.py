"""`evalproto sacrebleu ARGS` against the real `sacrebleu ARGS`: the same stdout (but for
the version in signatures), the same exit code, and the same stderr where sacrebleu's
is deterministic, for a table of invocations on the WMT22 excerpts in tests/data and on
files written here. Each invocation runs both commands side by side."""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import sacrebleu
from conftest import DATA, read_lines, script
from sacrebleu.dataset import DATASETS
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from evalproto import __version__


def test_the_installed_sacrebleu_is_the_one_reproduced() -> None:
    """The drop-in reproduces sacrebleu 2.6.0's output; the test extra pins it."""
    assert sacrebleu.__version__ == "2.6.0"


def normalise(text: str) -> str:
    """sacrebleu's output with our version where its own stands."""
    theirs, ours = sacrebleu.__version__, f"evalproto-{__version__}"
    for before, after in ((f"version:{theirs}", f"version:{ours}"),
                          (f"v:{theirs}", f"v:{ours}"),
                          (f'"version": "{theirs}"', f'"version": "{ours}"'),
                          (f"sacrebleu {theirs}", f"sacrebleu {ours}")):
        text = text.replace(before, after)
    return text


# -- files the invocations use -------------------------------------------------------------

def write(path: Path, lines: List[str], encoding: str = "utf-8") -> str:
    path.write_bytes("".join(line + "\n" for line in lines).encode(encoding, "replace"))
    return str(path)


def fake_wmt19(cache: Path) -> None:
    """A sacrebleu cache holding wmt19 de-en as sacrebleu leaves it after a download: the
    tarball and its extracted SGML (40 segments in four documents, two of each original
    language, with docids that sacrebleu's wmt19 subsets know)."""
    raw = cache / "wmt19" / "raw"
    (raw / "sgm").mkdir(parents=True)
    (raw / "wmt19.test.tgz").write_bytes(b"not downloaded: written by the tests")
    documents = [("bbc.381790", "en"), ("rt.com.91337", "de"), ("nytimes.184853", "de"),
                 ("upi.176266", "en")]
    for name, source in (("newstest2019-deen-src.de.sgm", "de-en.ref.B.en"),
                         ("newstest2019-deen-ref.en.sgm", "de-en.ref.A.en")):
        segments = read_lines(str(DATA / source))[:40]
        lines = ['<srcset setid="newstest2019" srclang="any">']
        for number, (docid, origlang) in enumerate(documents):
            lines.append(f'<doc sysid="ref" docid="{docid}" genre="news" '
                         f'origlang="{origlang}">')
            lines += [f'<seg id="{i + 1}">{segments[10 * number + i]}</seg>'
                      for i in range(10)]
            lines.append("</doc>")
        write(raw / "sgm" / name, lines + ["</srcset>"])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """Paths by name: the test data, and the files written here."""
    root = tmp_path_factory.mktemp("dropin")
    lines = {name: read_lines(str(DATA / name)) for name in os.listdir(DATA)
             if not name.endswith(".md") and (DATA / name).is_file()}
    found = {name: str(DATA / name) for name in lines}
    lt22, lan_bridge = lines["de-en.hyp.LT22.en"], lines["de-en.hyp.Lan-Bridge.en"]
    ref_a, ref_b = lines["de-en.ref.A.en"], lines["de-en.ref.B.en"]
    tokenized = [line[:-1] + " ." if line.endswith(".") else line for line in lt22]
    assert sum(line.endswith(" .") for line in tokenized) >= 100
    found.update(
        tokenized=write(root / "tokenized.en", tokenized),
        refs_tsv=write(root / "refs.tsv", [f"{a}\t{b}" for a, b in zip(ref_a, ref_b)]),
        two_tsv=write(root / "two.tsv", [f"{a}\t{b}" for a, b in zip(lt22, lan_bridge)]),
        three_tsv=write(root / "three.tsv",
                        [f"{a}\t{b}\t{c}" for a, b, c in zip(lt22, lan_bridge, ref_b)]),
        ragged_tsv=write(root / "ragged.tsv", ["one\ttwo", "three"]),
        latin1_ref=write(root / "ref.latin1", lines["en-de.ref.A.de"], "latin-1"),
        latin1_hyp=write(root / "hyp.latin1", lines["en-de.hyp.Online-A.de"], "latin-1"),
        hyp40=write(root / "hyp40", lt22[:40]),
        near_lt22=write(root / "near-LT22", lan_bridge[:3] + lt22[3:]),  # p > 0.05
        hyp40b=write(root / "hyp40b", lan_bridge[:40]),
        hyp80=write(root / "hyp80", lt22[:40] * 2),
        ref40=write(root / "ref40", ref_a[:40]),
        ref40b=write(root / "ref40b", ref_b[:40]),
        refs3_tsv=write(root / "refs3.tsv", [f"{a}\t{b}\t{c}" for a, b, c in
                                             zip(ref_a[:40], ref_b[:40], lan_bridge[:40])]),
    )
    # Universal newlines on stdin (a lone \r ends a line there, not in files), and
    # trailing spaces that sacrebleu keeps in the first line's fields only.
    (root / "crlf.tsv").write_bytes(b"the cat sat  \tthe  dog sat \r\nthe cat\tsat on\r"
                                    b"mat\tthe dog\nhello world\tworld hello \n")
    found["crlf_tsv"] = str(root / "crlf.tsv")
    found["crlf_ref"] = write(root / "crlf.ref",
                              ["the cat sat", "sat on the mat", "sat on", "hello world"])
    cache = root / "sacrebleu-cache"
    fake_wmt19(cache)
    found["cache"] = str(cache)
    # sacrebleu turns the SGML into text files on first use; do it once, before the two
    # commands run side by side.
    subprocess.run([script("sacrebleu"), "-t", "wmt19", "-l", "de-en", "--echo", "src"],
                   env=environment({}, str(cache)), capture_output=True, check=True)
    return found


def environment(extra: Dict[str, str], cache: str) -> Dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("SACREBLEU_FORMAT", "SACREBLEU_SEED", "NO_COLOR")}
    return {**env, "SACREBLEU": cache, "COLUMNS": "80", **extra}


def run_both(args: List[str], stdin: Optional[str], env: Dict[str, str]
             ) -> List[subprocess.CompletedProcess]:
    """sacrebleu and evalproto sacrebleu on the same arguments and input, concurrently."""
    data = Path(stdin).read_bytes() if stdin else b""
    commands = [[script("sacrebleu"), *args], [script("evalproto"), "sacrebleu", *args]]
    processes = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=DATA, env=env)
                 for command in commands]
    results = []
    for command, process in zip(commands, processes):
        out, err = process.communicate(data, timeout=120)
        results.append(subprocess.CompletedProcess(command, process.returncode,
                                                   out.decode(), err.decode()))
    return results


# -- the table -----------------------------------------------------------------------------

A, B = "de-en.ref.A.en", "de-en.ref.B.en"
LT22, LAN = "de-en.hyp.LT22.en", "de-en.hyp.Lan-Bridge.en"
EN_DE = "en-de.ref.A.de en-de.ref.B.de -i en-de.hyp.Online-A.de"
MULTI = "multilingual.ref.A multilingual.ref.B -i multilingual.hyp"
WMT19 = "-t wmt19 -l de-en"


@dataclass
class Case:
    id: str
    args: str  # shell words; {name} is a path from `files`
    stdin: Optional[str] = None  # a name from `files`
    env: Dict[str, str] = field(default_factory=dict)
    stderr: bool = True  # compare stderr (not where sacrebleu prints a traceback)
    needs: Optional[str] = None


CASES = [
    # one system, from files
    Case("json-default", f"{A} -i {LT22}"),
    Case("text-two-refs-three-metrics", f"{A} {B} -i {LT22} -m bleu chrf ter -f text"),
    Case("json-list-metrics-reordered", f"{A} -i {LT22} -m ter chrf bleu"),
    Case("score-only-text", f"{A} -i {LT22} -m bleu chrf -b -f text"),
    Case("score-only-json", f"{A} -i {LT22} -m bleu chrf -b"),
    Case("short-text", f"{A} {B} -i {LT22} -m bleu chrf --short -f text"),
    Case("short-ignored-in-json", f"{A} -i {LT22} -m chrf ter --short"),
    Case("width-4", f"{A} -i {LT22} -m bleu ter -w 4 -f text"),
    Case("latex-single-is-text", f"{A} -i {LT22} -m bleu chrf -f latex"),
    Case("bleu-intl-lc-floor", f"{EN_DE} -tok intl -lc -s floor -sv 0.3 -f text -w 3"),
    Case("bleu-char-add-k", f"{EN_DE} -tok char -s add-k -sv 0.5 --short -f text"),
    Case("bleu-none-no-smoothing", f"{A} -i {LT22} -tok none -s none -w 5"),
    Case("chrf-options", f"{A} {B} -i {LT22} -m chrf -cc 4 -cw 2 --chrf-beta 3 "
                         f"--chrf-lowercase --chrf-whitespace -f text -w 4"),
    Case("chrf++-eps-smoothing", f"{EN_DE} -m chrf -cw 2 --chrf-eps-smoothing -w 6"),
    Case("ter-options", f"{MULTI} -m ter --ter-case-sensitive --ter-no-punct "
                        f"--ter-normalized --ter-asian-support -f text -w 4"),
    Case("ter-normalized-short", "{ref40} -i {hyp40} -m ter --ter-normalized --short -f text"),
    Case("multilingual-three-metrics", f"{MULTI} -m bleu chrf ter -f text -w 3"),
    Case("target-zh-picks-zh", f"{MULTI} -l en-zh -f text"),
    Case("target-zh-warns-13a", f"{MULTI} -l en-zh -tok 13a -f text"),
    Case("target-ja-picks-mecab", f"{MULTI} -l en-ja -f text", needs="mecab"),
    Case("target-ko-picks-mecab-quiet", f"{MULTI} -l en-ko -q", needs="mecab-ko"),
    # bootstrap confidence: float32 resamples, statistics.mean, at many digits
    Case("confidence-text-wide", f"{A} -i {LT22} -m bleu chrf ter --confidence "
                                 f"-cin 200 -f text -w 12"),
    Case("confidence-json", "en-de.ref.A.de -i en-de.hyp.Online-A.de -m bleu chrf ter -s add-k "
                            "-cw 2 -ci -cin 100 -w 6"),
    Case("confidence-n-1-is-none", f"{A} -i {LT22} --confidence -cin 1 -f text"),
    Case("confidence-seed-from-env", f"{A} -i {LT22} -m bleu chrf --confidence -cin 100 "
                                     f"-f text -w 6", env={"SACREBLEU_SEED": "007"}),
    Case("confidence-score-only", f"{A} -i {LT22} -m bleu chrf -b -ci -cin 100 -f text"),
    # sentence level: BLEU with effective order; chrF and TER unchanged
    Case("sentence-bleu", f"{A} {B} -i {LT22} -sl -w 3"),
    Case("sentence-bleu-floor", f"{MULTI} -sl -s floor -w 10"),
    Case("sentence-chrf++-score-only", f"{A} -i {LT22} -sl -m chrf -cw 2 -b"),
    Case("sentence-ter-short", f"{MULTI} -sl -m ter --short -w 4"),
    # several systems
    Case("systems-text", f"{A} -i {LT22} {LAN} -m bleu chrf -f text"),
    Case("systems-json", f"{A} {B} -i {LT22} {LAN} -m chrf bleu"),
    Case("systems-latex", f"{A} -i {LT22} {LAN} {B} -m bleu chrf -f latex -w 2"),
    Case("paired-bs-text", f"{A} -i {LT22} {LAN} -m bleu chrf --paired-bs "
                           f"--paired-bs-n 100 -f text"),
    Case("paired-bs-latex", f"{A} {B} -i {LT22} {LAN} -m chrf bleu -pbs -pbsn 100 "
                            f"-f latex -w 3"),
    Case("paired-bs-json-bleu-full-precision",
         f"{EN_DE} en-de.hyp.JDExploreAcademy.de en-de.ref.B.de -m bleu -s add-k -pbs "
         f"-pbsn 200", env={"SACREBLEU_SEED": "3"}),
    Case("paired-bs-wide", f"{EN_DE} en-de.hyp.JDExploreAcademy.de -m bleu chrf ter -cw 2 "
                           f"-pbs -pbsn 150 -f text -w 8"),
    Case("paired-ar-text", f"{A} {B} -i {LT22} {LAN} {B} -m bleu chrf --paired-ar "
                           f"--paired-ar-n 200 -f text -w 2"),
    Case("paired-ar-json", f"{MULTI} multilingual.ref.A multilingual.ref.B -m bleu chrf "
                           f"ter -par -parn 500"),
    # numpy's exp and log (evaluator.score_many) give 66.48818314702459 for this BLEU;
    # libm's, as in sacrebleu, 66.4881831470246, which this JSON shows
    Case("paired-ar-json-bleu-last-digit", "en-de.ref.A.de -i en-de.hyp.Online-A.de "
                                           "en-de.ref.B.de -m bleu -tok char -par -parn 100"),
    Case("paired-bs-default-n", f"{A} -i {LT22} {LAN} -m bleu -pbs -pbsn 0 -f text"),
    Case("paired-jobs-auto", f"{A} -i {LT22} {LAN} -m chrf -par -parn 100 -j 0 -f text"),
    Case("paired-jobs-2", f"{A} -i {LT22} {LAN} {B} -m chrf -pbs -pbsn 50 -j 2 -f text",
         stderr=False),  # sacrebleu's workers log in any order
    Case("paired-baseline-repeated", f"{A} -i {LT22} {LAN} {LT22} -par -parn 100 -f text"),
    Case("no-color-env", f"{A} -i {LT22} {LAN} -pbs -pbsn 50 -f text",
         env={"NO_COLOR": "1"}),
    # standard input: one system, or tab-separated systems
    Case("stdin-one-system", f"{A} -m bleu chrf", stdin=LT22),
    Case("stdin-two-systems", f"{A} -f text", stdin="two_tsv"),
    Case("stdin-three-systems-paired", f"{A} -m chrf bleu -pbs -pbsn 100 -f text",
         stdin="three_tsv"),
    Case("stdin-ragged", f"{A}", stdin="ragged_tsv"),
    Case("stdin-crlf-and-first-line-spaces",
         "{crlf_ref} -m chrf bleu --chrf-whitespace -f text -w 6", stdin="crlf_tsv"),
    # references: tab-separated with -nr; encodings
    Case("num-refs-tsv", "{refs_tsv} -nr 2 -i " + LT22 + " -m bleu chrf ter -f text"),
    # TER's average over 3 references is not exact in float32: sacrebleu's resample sums
    # depend on the order of its draws
    Case("num-refs-3-ter-confidence", "{refs3_tsv} -nr 3 -i {hyp40} -m ter -ci -cin 200 "
                                      "-f text -w 12"),
    Case("num-refs-3-ter-paired-bs", "{refs3_tsv} -nr 3 -i {hyp40} {ref40b} -m ter -pbs "
                                     "-pbsn 200 -f text -w 12"),
    Case("num-refs-wrong-count", "{refs_tsv} -nr 3 -i " + LT22),
    Case("num-refs-with-two-files", f"{A} {B} -nr 2 -i {LT22}"),
    Case("encoding-latin-1", "{latin1_ref} --encoding latin-1 -i {latin1_hyp} -m bleu chrf "
                             "-f text"),
    Case("encoding-latin-1-stdin", "{latin1_ref} -e latin-1 -m ter", stdin="latin1_hyp"),
    # the tokenized-period warning
    Case("tokenized-warning", f"{A} -i {{tokenized}} -f text"),
    Case("tokenized-warning-quiet", f"{A} -i {{tokenized}} -m chrf bleu -q"),
    Case("tokenized-force", f"{A} -i {{tokenized}} --force -f text"),
    Case("tokenized-per-system", f"{A} -i {{tokenized}} {LAN} {{tokenized}} -m bleu chrf "
                                 f"-pbs -pbsn 30 -f text"),
    # the environment
    Case("format-from-env", f"{A} -i {LT22} -m bleu chrf", env={"SACREBLEU_FORMAT": "text"}),
    Case("format-from-env-latex", f"{A} -i {LT22} {LAN} -m bleu",
         env={"SACREBLEU_FORMAT": "LaTeX"}),
    Case("format-from-env-invalid", f"{A} -i {LT22} -f text",
         env={"SACREBLEU_FORMAT": "csv"}),
    # usage errors and sacrebleu's own errors
    Case("no-max-ngram-order", f"{A} -i {LT22} --max-ngram-order 3"),
    Case("paired-bs-and-ar", f"{A} -i {LT22} {LAN} --paired-bs --paired-ar"),
    Case("unknown-metric", f"{A} -i {LT22} -m foo"),
    Case("unknown-format", f"{A} -i {LT22} -f csv"),
    Case("help", "-h"),
    Case("version", "-V"),
    Case("no-references", f"-i {LT22}"),
    Case("length-mismatch", f"{A} -i multilingual.hyp"),
    Case("system-given-twice", f"{A} -i {LT22} {LT22}"),
    Case("sentence-level-two-metrics-quiet", f"{A} -i {LT22} -sl -m bleu chrf -q"),
    Case("sentence-level-two-systems", f"{A} -i {LT22} {LAN} -sl"),
    Case("sentence-level-confidence", f"{A} -i {LT22} -sl --confidence"),
    Case("confidence-with-two-systems", f"{A} -i {LT22} {LAN} --confidence"),
    Case("paired-with-one-system", f"{A} -i {LT22} --paired-bs"),
    Case("no-systems", f"{A} -i"),
    Case("origlang-without-test-set", f"{A} -i {LT22} -ol de", stderr=False),
    Case("detail-without-test-set", f"{A} -i {LT22} -d -m bleu chrf"),
    # sacrebleu crashes on -w -1 only when it formats a score: every check before comes
    # first, in its words and with its exit code
    Case("length-mismatch-before-width", f"{A} -i multilingual.hyp -w -1"),
    Case("bad-nr-line-before-width", f"{{ragged_tsv}} -nr 2 -i {LT22} -w -1"),
    Case("paired-ar-one-system-before-width", f"{A} -i {LT22} --paired-ar -w -1"),
    Case("sentence-level-confidence-before-width", f"{A} -i {LT22} -sl --confidence -w -1"),
    # test sets from sacrebleu's cache
    Case("test-set", f"{WMT19} -i {{hyp40}} -m bleu chrf -f text"),
    Case("test-set-stdin-paired", f"{WMT19} -m bleu -pbs -pbsn 50 -f text", stdin="hyp40"),
    Case("test-set-concatenated", "-t wmt19,wmt19 -l de-en -i {hyp80} -f text"),
    Case("test-set-tokenize-none", f"{WMT19} -i {{hyp40}} -tok none -f text"),
    Case("test-set-detail", f"{WMT19} -i {{hyp40}} -d -m bleu chrf"),
    Case("test-set-origlang", f"{WMT19} -i {{hyp40}} -ol de -m bleu chrf -f text"),
    Case("test-set-subset-detail", f"{WMT19} -i {{hyp40}} --subset country:US -d -f text"),
    Case("test-set-length-mismatch", f"{WMT19} -i {{hyp80}}"),
    Case("echo", f"{WMT19} --echo src ref docid"),
    Case("echo-all-origlang", f"{WMT19} --echo all -ol de"),
    Case("echo-unknown-field", f"{WMT19} --echo ref:A"),
    Case("list", "--list"),
    Case("list-langpair", "--list -l de-en"),
    Case("list-test-set", "--list -t wmt19"),
    Case("download-cached", "--download wmt19 -l de-en"),
    Case("test-set-without-langpair", "-t wmt19 -i {hyp40}"),
    Case("test-set-unknown", "-t nope -l de-en -i {hyp40}"),
    Case("test-set-unknown-langpair", "-t wmt19 -l en-xx -i {hyp40}"),
    Case("test-set-and-references", f"{WMT19} {A} -i {{hyp40}}"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_same_as_sacrebleu(case: Case, files: Dict[str, str]) -> None:
    args = shlex.split(case.args.format(**files))
    stdin = files[case.stdin] if case.stdin else None
    theirs, ours = run_both(args, stdin, environment(case.env, files["cache"]))
    assert ours.returncode == theirs.returncode, ours.stderr
    assert ours.stdout == normalise(theirs.stdout)
    if case.stderr:
        assert ours.stderr == normalise(theirs.stderr)
    else:
        assert "Traceback" not in ours.stderr


# -- colours, which sacrebleu writes only to a terminal ------------------------------------

def on_terminal(command: List[str], env: Dict[str, str]) -> str:
    """What a command writes to a terminal (a pseudo-terminal here)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=slave, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, cwd=DATA, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("args", [
    f"{A} -i {LT22} {LAN} {{near_lt22}} -m bleu chrf -pbs -pbsn 50 -f text",  # all colours
    f"{A} -i {LT22} -m bleu chrf -ci -cin 50 -f text",  # cyan intervals
])
@pytest.mark.slow
@pytest.mark.parametrize("no_color", [None, "NO_COLOR=1", "--no-color"])
def test_colours_on_a_terminal_as_sacrebleu(args: str, no_color: Optional[str],
                                            files: Dict[str, str]) -> None:
    words = shlex.split(args.format(**files)) + (["--no-color"] if no_color == "--no-color"
                                                 else [])
    env = environment({"NO_COLOR": "1"} if no_color == "NO_COLOR=1" else {}, files["cache"])
    theirs = on_terminal([script("sacrebleu"), *words], env)
    ours = on_terminal([script("evalproto"), "sacrebleu", *words], env)
    assert ours == normalise(theirs)
    assert ("\x1b[" in ours) == (no_color is None)


# -- where sacrebleu cannot be run, or crashes ---------------------------------------------

@pytest.mark.slow
def test_paired_bootstrap_json_of_chrf_and_ter_has_sacrebleus_numbers(
        files: Dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """sacrebleu 2.6 crashes writing these float32 means; we write them, and they are
    the figures its PairedTest computes."""
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    systems = [files["hyp40"], files["hyp40b"], files["ref40b"]]
    args = [files["ref40"], "-i", *systems, "-m", "bleu", "chrf", "ter", "-pbs", "-pbsn", "100"]
    theirs, ours = run_both(args, None, environment({}, files["cache"]))
    assert theirs.returncode == 1 and "float32 is not JSON serializable" in theirs.stderr
    assert ours.returncode == 0
    assert ours.stderr == normalise(theirs.stderr[:theirs.stderr.index("Traceback")])
    rows = json.loads(ours.stdout)

    refs = [read_lines(files["ref40"])]
    metrics = {"BLEU": BLEU(references=refs), "CHRF": CHRF(references=refs),
               "TER": TER(references=refs)}
    named = [(f"Baseline: {name}" if i == 0 else name, read_lines(name))
             for i, name in enumerate(systems)]
    _, expected = PairedTest(named, metrics, references=None, test_type="bs",
                             n_samples=100)()
    assert [row["system"] for row in rows] == expected.pop("System")
    for metric, results in expected.items():
        for row, result in zip(rows, results):
            assert row[metric] == {key: None if value is None else float(value)
                                   for key, value in vars(result).items()}


def test_citation_is_printed_where_sacrebleu_crashes(files: Dict[str, str]) -> None:
    theirs, ours = run_both(["--citation", "-t", "wmt19"], None,
                            environment({}, files["cache"]))
    assert theirs.returncode == 1 and "TypeError" in theirs.stderr
    assert (ours.returncode, ours.stdout) == (0, DATASETS["wmt19"].citation + "\n")


@pytest.mark.slow
def test_uncached_test_set_fails_without_downloading(tmp_path: Path) -> None:
    empty = tmp_path / "empty-cache"
    for args in (["-t", "wmt22", "-l", "de-en", "-i", LT22], ["--echo", "src", "-t", "wmt22",
                                                              "-l", "de-en"],
                 ["--download", "wmt22"], ["--list", "-t", "wmt22"]):
        result = subprocess.run([script("evalproto"), "sacrebleu", *args], cwd=DATA,
                                env=environment({}, str(empty)), capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1
        assert "'wmt22' is not in sacrebleu's local cache" in result.stderr
        assert not empty.exists()


def test_cached_raw_files_are_processed_without_download(
        files: Dict[str, str], tmp_path: Path) -> None:
    """A cache holding only the downloaded tarball's files is read, as sacrebleu reads it."""
    fake_wmt19(tmp_path)
    result = subprocess.run([script("evalproto"), "sacrebleu", "-t", "wmt19", "-l", "de-en",
                             "--echo", "ref"], env=environment({}, str(tmp_path)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == read_lines(str(DATA / A))[:40]


def test_sentencepiece_tokenizers_are_refused(files: Dict[str, str]) -> None:
    """sacrebleu would download a SentencePiece model; evalproto's BLEU has none."""
    result = subprocess.run([script("evalproto"), "sacrebleu", A, "-i", LT22, "-tok", "spm"],
                            cwd=DATA, env=environment({}, files["cache"]),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "spm tokenizer" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--encoding", "nope"], "sacreBLEU: --encoding nope: unknown encoding"),
    (["--encoding", "utf-16"], "sacreBLEU: --encoding utf-16: UTF-16 stream does not start"),
    (["-l", "xx"], "sacreBLEU: -l xx: a language pair is SOURCE-TARGET"),
    (["-w", "-1"], "sacreBLEU: -w -1: the width is a number of decimals"),
])
def test_values_sacrebleu_crashes_on_get_its_exit_and_a_message(
        files: Dict[str, str], args: List[str], message: str) -> None:
    theirs, ours = run_both([A, "-i", LT22, *args], None, environment({}, files["cache"]))
    assert theirs.returncode == 1 and "Traceback" in theirs.stderr
    assert (ours.returncode, ours.stdout) == (1, "")
    assert message in ours.stderr and "bug" not in ours.stderr
