"""The compiled kernels build without a warning under -Wall -Wextra (setup.py turns
them on): every source of native/ is compiled here with them, as errors."""

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

NATIVE = Path(__file__).parent.parent / "native"
SOURCES = sorted(NATIVE.glob("*.cpp"))


def test_setup_builds_with_warnings_on():
    setup = (NATIVE.parent / "setup.py").read_text()
    assert '"-Wall", "-Wextra"' in setup and "win32" not in setup and "/std:" not in setup


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=[path.name for path in SOURCES])
def test_a_source_compiles_without_a_warning(source):
    compiler = shutil.which("g++") or shutil.which("c++")
    assert compiler, "a C++ compiler is needed to build evalproto's kernels"
    result = subprocess.run(
        [compiler, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
         f"-I{sysconfig.get_paths()['include']}", f"-I{NATIVE}", str(source)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
