"""The compiled kernels, sources in native/: evalproto.evaluators._native (BLEU, chrF and
TER statistics), evalproto.stats._resample (bootstrap and approximate randomization sums), evalproto.wire._lines
(the protocol server's batches of SCORE lines) and evalproto.readers._lmlog (the
per-event loops of LM Challenge logs). The package's metadata is in setup.cfg."""

import sys

from setuptools import Extension, setup

if sys.platform == "win32":
    COMPILE_ARGS = ["/std:c++17", "/O2", "/fp:precise"]
else:
    # -ffp-contract=off: chrF's F and TER's beam must round each float operation as
    # Python does; a fused multiply-add (gcc contracts by default where the target
    # has one, e.g. aarch64) would change the last bit.
    COMPILE_ARGS = ["-std=c++17", "-O2", "-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=[
        Extension(
            "evalproto.evaluators._native",
            sources=["native/module.cpp", "native/text.cpp", "native/bleu.cpp",
                     "native/chrf.cpp", "native/ter.cpp"],
            depends=["native/text.hpp", "native/kernels.hpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "evalproto.stats._resample",
            sources=["native/resample.cpp"],
            language="c++",
            # -O3: the sums' loops are vectorized (and built for wider vectors too).
            extra_compile_args=COMPILE_ARGS + ([] if sys.platform == "win32" else ["-O3"]),
        ),
        Extension(
            "evalproto.wire._lines",
            sources=["native/wire.cpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "evalproto.readers._lmlog",
            sources=["native/lmlog.cpp"],
            language="c++",
            extra_compile_args=COMPILE_ARGS,
        ),
    ]
)
