"""The documentation site builds with `mkdocs build --strict` (every link, anchor and API
reference holds), documents every public name, and fetches nothing: no web fonts, no
script or stylesheet from another site."""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import evalproto

ROOT = Path(__file__).parent.parent
PUBLIC = ["load", "Metric", "Score", "info", "registered_evaluators", "describe_evaluator",
          "MetricSpec", "EvaluatorProcess", "DEFAULT_TIMEOUT", "Evaluator", "CountsEvaluator",
          "mbr", "MBRChoice", "dynascore",
          "compare", "Comparison", "Analysis", "Result", "StatsTable", "DEFAULT_SEED",
          "read_corpus", "read_dataset", "Corpus", "DATA_FORMATS", "score_files",
          "reduce_stats", "lm_score", "LMScore", "lm_compare", "LMComparison", "report_corpus",
          "report_from_stats", "format_report", "Report", "ReportOptions", "meta_evaluate",
          "MetaEvaluation", "MetricAgreement", "read_score_file", "read_oasst_replies",
          "meta_eval_files", "williams_test", "META_STATISTICS", "perturb_dataset",
          "PERTURBATIONS", "bag_stats",
          "bag_score", "EvalprotoError", "EvaluatorError", "InputError", "SetupError",
          "SpecError", "UsageProblem", "EvaluatorWarning", "InputWarning", "__version__"]
"""The public API, as docs/python.md's reference documents it."""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError:
        pytest.fail("building the docs needs the docs extra (in the test extra too): "
                    "pip install -e '.[docs]'")
    directory = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(directory)], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert built.returncode == 0, built.stderr
    return directory


def test_the_site_builds_strictly_with_every_page(site):
    pages = {path.stem for path in (ROOT / "docs").glob("*.md")}
    for page in pages - {"index"}:
        assert (site / page / "index.html").exists(), page
    listed = (ROOT / "mkdocs.yml").read_text()
    for page in pages:
        assert f"{page}.md" in listed, f"docs/{page}.md is not in mkdocs.yml's nav"


def test_the_test_extra_holds_the_docs_extra():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = config["options.extras_require"]
    docs = {line.strip() for line in extras["docs"].splitlines() if line.strip()}
    test = {line.strip() for line in extras["test"].splitlines() if line.strip()}
    assert docs and docs <= test


def test_the_reference_documents_every_public_name(site):
    reference = (site / "python" / "index.html").read_text(encoding="utf-8")
    for name in PUBLIC:
        assert f'id="evalproto.{name}"' in reference, name
        assert hasattr(evalproto, name), name


def test_the_site_fetches_nothing(site):
    for path in site.rglob("*"):
        if path.suffix == ".html":
            text = path.read_text(encoding="utf-8")
            assert not re.search(r'<script[^>]+src="(https?:)?//', text), path
            assert not re.search(r'<link[^>]+rel="(stylesheet|preconnect|preload)"[^>]+'
                                 r'href="(https?:)?//', text), path
            assert not re.search(r'<link[^>]+href="(https?:)?//[^"]*"[^>]+rel="stylesheet"',
                                 text), path
        if path.suffix in (".html", ".css"):
            text = path.read_text(encoding="utf-8")
            assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, path
            assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), path
            assert not re.search(r"@import\s+(url\()?['\"]?(https?:)?//", text), path
