"""The report's plots, drawn by matplotlib as SVG text to be inlined into the page.

Each plot is drawn on its own `Figure` (no pyplot, so no global backend or state is
touched) inside an rc_context that makes the SVG the same on every run: a fixed
`svg.hashsalt` per plot (its ids are then unique in the page, and stable), text kept as
text (`svg.fonttype` "none": no font is embedded or fetched; the browser draws it), no
date in the metadata, and mathtext off (a system named "$x$" is shown as typed).
"""

from __future__ import annotations

import io
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import SetupError

WIDTH, HEIGHT = 7.2, 3.4
"""A plot's size in inches."""
LABEL_LIMIT = 24
"""Longer labels are cut (with an ellipsis) in plots; tables show them whole."""
TITLE_LIMIT = 80
"""... and longer titles."""
LEGEND_WIDTH = 1.9
"""Inches kept right of a plot for its legend."""


def _figure_class() -> type:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SetupError("evalproto report draws its plots with matplotlib, which is not "
                         "installed: pip install matplotlib") from None
    return Figure


class Plot:
    """One plot being drawn: `with Plot("id") as axes: ...`, then `.svg` holds it."""

    def __init__(self, plot_id: str, width: float = WIDTH, height: float = HEIGHT,
                 left: float = 0.6, bottom: float = 0.95, top: float = 0.35) -> None:
        self.plot_id = plot_id
        self.size = (width, height)
        self.margins = (left, bottom, top)  # inches
        self.svg = ""

    def __enter__(self) -> Any:  # matplotlib's Axes
        import matplotlib

        self._context = matplotlib.rc_context({
            "svg.hashsalt": f"evalproto-{self.plot_id}", "svg.fonttype": "none",
            "svg.id": self.plot_id, "text.parse_math": False, "font.size": 9,
            "axes.spines.top": False, "axes.spines.right": False})
        self._context.__enter__()
        # fixed margins: a layout engine would draw every plot twice to measure it
        self.figure = _figure_class()(figsize=self.size)
        (width, height), (left, bottom, top) = self.size, self.margins
        self.figure.subplots_adjust(left=left / width, right=1 - 0.15 / width,
                                    bottom=bottom / height, top=1 - top / height)
        return self.figure.add_subplot()

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                buffer = io.StringIO()
                with warnings.catch_warnings():
                    # a label in a script DejaVu Sans lacks is measured without it; the
                    # browser draws it with a font that has it
                    warnings.filterwarnings("ignore", message="Glyph .* missing from",
                                            category=UserWarning)
                    self.figure.savefig(buffer, format="svg", metadata={"Date": None})
                text = buffer.getvalue()
                self.svg = text[text.index("<svg"):]
        finally:
            self._context.__exit__(exc_type, *rest)  # type: ignore[arg-type]


def text(label: str) -> str:
    """A label that a font can draw: the undecodable bytes of a file name that is not
    UTF-8 (lone surrogates, which matplotlib refuses) written as escapes."""
    return label.encode("utf-8", "backslashreplace").decode("utf-8")


def cut(label: str, limit: int = LABEL_LIMIT) -> str:
    """A label short enough for a plot, cut in the middle: systems named by their files
    share a directory at the start and differ at the end."""
    label = text(label)
    if len(label) <= limit:
        return label
    head = (limit - 1) // 3
    return label[:head] + "…" + label[len(label) - (limit - 1 - head):]


def _colours(count: int) -> Iterator[Tuple[float, ...]]:
    import matplotlib

    palette = matplotlib.colormaps["tab10"]
    for i in range(count):
        yield palette(i % 10)


def _legend(axes: Any, handles: List[Any], labels: Sequence[str]) -> None:
    """A legend right of the plot, with the labels as given (matplotlib skips labels
    that start with "_" when it collects them itself)."""
    if len(labels) > 1:
        figure = axes.figure
        figure.subplots_adjust(right=1 - LEGEND_WIDTH / figure.get_figwidth())
        axes.legend(handles, [cut(label) for label in labels], fontsize=8, frameon=False,
                    loc="upper left", bbox_to_anchor=(1.01, 1.0))


Interval = Tuple[Optional[float], Optional[float]]
"""(mean, half-width) of a bootstrap interval, sacrebleu's "μ ± ci"."""


def _spread(values: Sequence[Optional[float]], intervals: Sequence[Interval]) -> np.ndarray:
    """matplotlib's (2, n) error bar lengths below and above each value, for intervals
    centred on their mean (which need not be the value)."""
    low, high = [], []
    for value, (mean, half) in zip(values, intervals):
        if value is None or mean is None or half is None:
            low.append(np.nan)
            high.append(np.nan)
            continue
        low.append(max(value - (mean - half), 0.0))
        high.append(max(mean + half - value, 0.0))
    return np.array([low, high])


def bars(plot_id: str, categories: Sequence[str], series: Dict[str, Sequence[float]],
         title: str, ylabel: str,
         intervals: Optional[Dict[str, Sequence[Interval]]] = None) -> str:
    """Grouped bars: one group per category, one bar per series (with error bars showing
    each bar's interval, if given)."""
    plot = Plot(plot_id)
    with plot as axes:
        count = max(len(series), 1)
        width = 0.8 / count
        positions = np.arange(len(categories))
        handles = []
        for number, ((name, values), colour) in enumerate(zip(series.items(),
                                                              _colours(count))):
            spread = None
            if intervals is not None and name in intervals:
                spread = _spread(values, intervals[name])
            handles.append(axes.bar(positions - 0.4 + width * (number + 0.5), _numbers(values),
                                    width, yerr=spread, capsize=2, color=colour,
                                    error_kw={"elinewidth": 0.8}))
        slanted = len(categories) > 6
        axes.set_xticks(positions, [cut(category) for category in categories],
                        rotation=30 if slanted else 0, ha="right" if slanted else "center")
        axes.set_title(cut(title, TITLE_LIMIT))
        axes.set_ylabel(text(ylabel))
        _legend(axes, handles, list(series))
    return plot.svg


def intervals(plot_id: str, systems: Sequence[str], scores: Sequence[float],
              spans: Sequence[Interval], title: str) -> str:
    """Each system's score as a point with its interval (centred on the bootstrap
    mean), the first system on top."""
    labels = [cut(system) for system in systems]
    margin = 0.3 + 0.075 * max(len(label) for label in labels)  # inches, for the names
    plot = Plot(plot_id, margin + 2.4, 0.9 + 0.32 * len(systems), left=margin, bottom=0.5)
    with plot as axes:
        rows = np.arange(len(systems))[::-1]
        spread = _spread(scores, spans)
        axes.errorbar(_numbers(scores), rows,
                      xerr=None if np.isnan(spread).all() else spread, fmt="o",
                      markersize=4, capsize=3, color="tab:blue", elinewidth=1)
        axes.set_yticks(rows, labels)
        axes.set_ylim(-0.6, len(systems) - 0.4)
        axes.set_title(cut(title, TITLE_LIMIT))
    return plot.svg


def _numbers(values: Sequence[Optional[float]]) -> List[float]:
    return [np.nan if value is None else float(value) for value in values]


def scatter(plot_id: str, x: np.ndarray, y: np.ndarray, xlabel: str, ylabel: str,
            title: str) -> str:
    """One point per segment, with the diagonal x = y."""
    plot = Plot(plot_id, HEIGHT + 0.8, HEIGHT + 0.4)
    with plot as axes:
        # thousands of points as SVG elements weigh 150 bytes each: drawn as an image
        axes.plot(x, y, "o", markersize=2.5, alpha=0.5, color="tab:blue", rasterized=True)
        low = float(min(np.min(x, initial=0), np.min(y, initial=0)))
        high = float(max(np.max(x, initial=1), np.max(y, initial=1)))
        axes.plot([low, high], [low, high], "-", linewidth=0.8, color="grey")
        axes.set_xlabel(cut(xlabel))
        axes.set_ylabel(cut(ylabel))
        axes.set_title(cut(title, TITLE_LIMIT))
    return plot.svg


def histogram(plot_id: str, values: np.ndarray, xlabel: str, title: str) -> str:
    """The distribution of one set of values, with a line at 0."""
    plot = Plot(plot_id)
    with plot as axes:
        axes.hist(values, bins=40, color="tab:blue")
        axes.axvline(0, color="grey", linewidth=0.8)
        axes.set_xlabel(cut(xlabel))
        axes.set_ylabel("segments")
        axes.set_title(cut(title, TITLE_LIMIT))
    return plot.svg


def distributions(plot_id: str, values: Dict[str, np.ndarray], xlabel: str,
                  title: str) -> str:
    """Several distributions on one axis (each system's bootstrap scores), as outlined
    histograms over common bins."""
    plot = Plot(plot_id)
    with plot as axes:
        joined = np.concatenate([np.asarray(v, dtype=np.float64) for v in values.values()])
        bins = np.histogram_bin_edges(joined, bins=60)
        handles = []
        for drawn, colour in zip(values.values(), _colours(len(values))):
            _, _, patches = axes.hist(np.asarray(drawn, dtype=np.float64), bins=bins,
                                      histtype="step", linewidth=1.2, color=colour)
            handles.append(patches[0])
        axes.set_xlabel(cut(xlabel))
        axes.set_ylabel("resamples")
        axes.set_title(cut(title, TITLE_LIMIT))
        _legend(axes, handles, list(values))
    return plot.svg
