"""What every plot shares: colours, axes of simulated time, options, saving."""

import argparse
import os

from ..schema import UserError


GROUPS = ["tp", "cp", "ep", "pp", "dp"]
GROUP_COLORS = {0: "#7f7f7f", 1: "#2ca02c", 2: "#ff7f0e", 3: "#9467bd", 4: "#1f77b4"}


# The op timeline's colours: forward blue, backward green (told apart at a glance), the
# optimizer purple, blocking communication red, waiting for another stage light gray.
OP_COLORS = {0: "#1f77b4", 1: "#2ca02c", 2: "#9467bd", 3: "#d62728", 4: "#d9d9d9"}
# The op timeline's two lanes per stage (y offsets from the stage's row): compute on top, the
# blocking communication and waits below, so that neither can cover the other.
COMPUTE_LANE = (-0.02, 0.4)
COMM_LANE = (-0.38, 0.3)


def _unavailable(ax, text):
    """An axis that says what is missing instead of staying empty."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def time_axis(span_s):
    """(scale, unit) for an axis of simulated time that spans span_s seconds."""
    if span_s >= 1:
        return 1.0, "s"
    if span_s >= 1e-3:
        return 1e3, "ms"
    return 1e6, "us"


def _time_ticks(ax, span_s, axis="x"):
    """Keeps the data in seconds and labels the axis in the unit that suits the span."""
    from matplotlib.ticker import FuncFormatter
    scale, unit = time_axis(span_s)
    getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v * scale:g}"))
    getattr(ax, f"set_{axis}label")(f"simulated time ({unit})")


def _finish_log_x(ax, drawn, xlabel, ylabel, missing):
    """Labels a log-x plot with a legend, or says what is `missing` when nothing was drawn."""
    if drawn:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
        ax.set_xscale("log")
        # Plain numbers (20, 50, 100, not 2x10^1), and ticks at 1-2-5 when the data span less
        # than three decades (a default log axis then labels one tick or none).
        lo, hi = ax.dataLim.intervalx
        few = lo > 0 and hi / lo < 1e3
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend()
    else:
        _unavailable(ax, missing)


# The heatmaps show at most this many time columns (bins are merged into columns beyond it).
MAX_COLUMNS = 1000
# The heatmaps' colour scale ends at this percentile of the non-zero cells (the colour bar
# says so, and extends when larger values exist).
SCALE_PERCENTILE = 99


def plot_options(file, collective=None, tiers=None, top=8, max_ports=128, max_flows=200):
    """What the plots of schema version 2 take besides the tables (the `plot` options)."""
    return argparse.Namespace(file=file, collective=collective, tiers=tiers, top=top,
                              max_ports=max_ports, max_flows=max_flows)


def need_v2(path, meta, kind):
    if meta["schema_version"] < 2:
        raise UserError(f"{path}: {kind} needs schema version 2 (flow times, node and port "
                        f"names, /samples); this file has schema version "
                        f"{meta['schema_version']}")


def need_samples(path, meta, tables, kind):
    need_v2(path, meta, kind)
    if tables.get("samples") is None:
        raise UserError(f"{path}: no /samples group: {kind} needs the time series "
                        f"(docs/hdf5-schema.md)")


def output_dir(path):
    """-o: an existing directory we can write into, or one we can create."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"-o {path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(f"-o {path}: cannot create the directory ({e.strerror})")
    probe = os.path.join(path, f".stepsim-post-{os.getpid()}")
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise UserError(f"-o {path}: cannot write into the directory ({e.strerror})")
    return path


def save(fig, directory, stem, name):
    import matplotlib.pyplot as plt
    path = os.path.join(directory, f"{stem}_{name}.png")
    if fig.get_layout_engine() is None:  # a figure with its own layout (constrained) keeps it
        fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})")
    finally:
        plt.close(fig)
    return path
