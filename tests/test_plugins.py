"""A third-party package that declares an `evalproto.evaluators` entry point shows up
in evalproto with no change to evalproto, installed here into a fresh virtual environment."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, json_rows, read_lines, venv_with_package

FIXTURE = Path(__file__).parent / "plugin_fixture"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    """A virtual environment that sees this one's packages and has the plugin installed."""
    package = tmp_path_factory.mktemp("fixture") / "fixture"
    shutil.copytree(FIXTURE, package)
    return venv_with_package(tmp_path_factory.mktemp("venv"), package)


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
