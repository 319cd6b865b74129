"""The compiled kernels, sources in native/: evalproto.evaluators._native (BLEU, chrF and
TER statistics), evalproto.stats._resample (bootstrap and approximate randomization
sums), evalproto.stats._kendall (the pair counts of meta-evaluation's Kendall-style
statistics), evalproto.wire._lines (the protocol server's batches of SCORE lines) and
evalproto.readers._lmlog (the per-event loops of LM Challenge logs). The package's
metadata is in setup.cfg."""

from setuptools import Extension, setup

# POSIX with gcc or clang only: resample.cpp counts with unsigned __int128, and evaluator
# processes run in POSIX sessions (setup.cfg declares the platforms).
# -ffp-contract=off: chrF's F and TER's beam must round each float operation as Python
# does; a fused multiply-add (gcc contracts by default where the target has one, e.g.
# aarch64) would change the last bit. -Wall -Wextra: the build is warning-free.
COMPILE_ARGS = ["-std=c++17", "-O2", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra"]

setup(
    ext_modules=[
        Extension(
            "evalproto.evaluators._native",
            sources=["native/module.cpp", "native/text.cpp", "native/bleu.cpp",
                     "native/chrf.cpp", "native/ter.cpp", "native/pairwise.cpp"],
            depends=["native/text.hpp", "native/kernels.hpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "evalproto.stats._resample",
            sources=["native/resample.cpp"],
            language="c++",
            # -O3: the sums' loops are vectorized (and built for wider vectors too).
            extra_compile_args=[*COMPILE_ARGS, "-O3"],
        ),
        Extension(
            "evalproto.stats._kendall",
            sources=["native/kendall.cpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "evalproto.wire._lines",
            sources=["native/wire.cpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "evalproto.readers._lmlog",
            sources=["native/lmlog.cpp", "native/lmevents.cpp", "native/jsonl.cpp",
                     "native/md5.cpp"],
            depends=["native/lmevents.hpp", "native/jsonl.hpp", "native/md5.hpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
    ]
)
