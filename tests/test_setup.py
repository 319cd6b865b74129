"""The set-up a newcomer follows: the README's two commands (a virtual environment that
installs only what scoring needs, then the test extras and the tests), CI running the
very same lines, and scoring that works without any extra installed."""

import configparser
import re
import subprocess
import sys
from pathlib import Path

from conftest import DE_EN_HYP, DE_EN_REFS

ROOT = Path(__file__).parent.parent
NOT_FOR_SCORING = ("dask", "distributed", "mecab", "pandas", "pytest", "hypothesis", "jiwer",
                   "scikit-learn", "compare-mt", "nltk", "h5py")


def readme_commands():
    """The lines of the README's first shell block: its set-up and test commands."""
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    return block.strip().splitlines()


def test_the_readme_makes_a_venv_installs_what_scoring_needs_and_scores():
    first, second = readme_commands()
    steps = first.split(" && ")
    assert steps[0].startswith("python3 -m venv ") and "/bin/activate" in steps[1]
    assert steps[2] == "pip install -e ."  # no extras
    assert steps[3].startswith("evalproto corpus-score tests/data/")
    assert second.startswith("pip install -e '.[test") and second.endswith("pytest -q")


def test_ci_runs_the_readmes_commands():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in readme_commands():
        assert command in ci


def test_the_extras_are_listed_beside_the_set_up():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = set(config["options.extras_require"])
    assert {"ja", "ko", "dask", "pandas", "test"} <= extras
    readme = (ROOT / "README.md").read_text()
    table = readme[:readme.index("## Four uses")]
    for extra in ("ja", "ko", "dask", "pandas", "test"):
        assert f"`{extra}`" in table
    required = config["options"]["install_requires"].lower()
    for package in NOT_FOR_SCORING:
        assert package not in required


BLOCKED = ("import sys\n"
           "for name in ('dask', 'distributed', 'MeCab', 'mecab_ko', 'pandas', 'pytest', "
           "'hypothesis', 'jiwer', 'sklearn', 'compare_mt', 'nltk', 'h5py'):\n"
           "    sys.modules[name] = None  # as if not installed\n"
           "from evalproto.cli.launch import main\n"
           "main()\n")


def without_extras(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED, *args], capture_output=True,
                          text=True, timeout=120)


def test_scoring_works_without_any_extra():
    done = without_extras("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-m", "bleu", "chrf", "ter",
                          "wer", "-ci", "-cin", "20")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("System")


def test_the_scheduler_without_dask_names_the_extra():
    done = without_extras("corpus-score", *DE_EN_REFS, DE_EN_HYP, "--scheduler", "local")
    assert done.returncode == 1
    assert done.stderr == "Error: --scheduler needs Dask: pip install 'evalproto[dask]'\n"


def test_a_mecab_tokenizer_without_its_extra_names_it():
    done = without_extras("corpus-score", *DE_EN_REFS, DE_EN_HYP, "-tok", "ja-mecab")
    assert done.returncode == 1
    assert "pip install 'evalproto[ja]'" in done.stderr


def test_an_exception_that_ends_a_thread_fails_its_test(tmp_path):
    """The suite's configuration turns an unhandled exception in a thread (such as a
    writer thread's RuntimeError) into the failure of the test it happened in, instead
    of a warning in the summary."""
    (tmp_path / "test_threads_fail.py").write_text(
        "import threading\n\n"
        "def test_a_thread_that_raises():\n"
        "    thread = threading.Thread(target=lambda: 1 / 0)\n"
        "    thread.start()\n"
        "    thread.join()\n")
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-c", str(ROOT / "setup.cfg"), "--rootdir", str(tmp_path),
                          str(tmp_path / "test_threads_fail.py")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert ran.returncode == 1, ran.stdout
    assert "1 failed" in ran.stdout and "PytestUnhandledThreadExceptionWarning" in ran.stdout
