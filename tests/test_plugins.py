"""A third-party package that declares an `evalproto.evaluators` entry point shows up
in evalproto with no change to evalproto, installed here into a fresh virtual environment."""

import shutil
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, json_rows, read_lines

FIXTURE = Path(__file__).parent / "plugin_fixture"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    """A virtual environment that sees this one's packages and has the plugin installed."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    # Reach evalproto, its dependencies, pip and setuptools where they are installed now;
    # addsitedir also runs their .pth files (an editable install of evalproto is one).
    outer = [sysconfig.get_path("purelib"), *site.getsitepackages()]
    (Path(target) / "outer.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({path!r})" for path in dict.fromkeys(outer)))
    package = root / "fixture"
    shutil.copytree(FIXTURE, package)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", str(package)], check=True, capture_output=True)
    return root / "bin"


def test_the_plugin_is_listed(plugin_env):
    listing = subprocess.run([str(plugin_env / "python"), "-m", "evalproto", "list"],
                             capture_output=True, text=True, check=True).stdout
    assert "length-ratio (higher is better): Hypothesis words per reference word." in listing
    assert "  stats: hyp_words ref_words" in listing
    assert "bleu (higher is better)" in listing


def test_the_plugin_is_not_visible_outside_its_environment():
    listing = subprocess.run([sys.executable, "-m", "evalproto", "list"],
                             capture_output=True, text=True, check=True).stdout
    assert "length-ratio" not in listing


def test_the_plugin_scores_in_process_and_over_its_console_script(plugin_env):
    expected = (sum(len(line.split()) for line in read_lines(DE_EN_HYP))
                / sum(len(line.split()) for line in read_lines(DE_EN_REFS[0])))
    for flag, value in (("-m", "length-ratio"), ("-e", str(plugin_env / "length-ratio-evaluator"))):
        completed = subprocess.run(
            [str(plugin_env / "python"), "-m", "evalproto", "corpus-score", DE_EN_REFS[0],
             DE_EN_HYP, flag, value, "-f", "json"], capture_output=True, text=True)
        assert completed.returncode == 0, completed.stderr
        assert json_rows(completed.stdout)[0]["score"] == pytest.approx(expected, abs=1e-12)
