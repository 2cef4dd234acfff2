"""`stepsim-post plot`: one PNG per kind of plot."""

import os
import sys

from ..schema import TIERS, UserError, load
from ..report import run_name
from .common import need_samples, need_v2, output_dir, plot_options, save
from ..fabric import fabric_of
from .flows import fct_figure, gantt_figure, timed
from .plan import plan_figure
from .samples import pause_figure, queue_figure, util_figure
from .step import busbw_figure, cdf_figure, heatmap_figure, timeline_figure


# The plots of every file; those of schema version 2 (flow times); those that need /samples.
PLOTS = [("timeline", timeline_figure), ("cct_cdf", cdf_figure),
         ("link_heatmap", heatmap_figure), ("busbw", busbw_figure)]
PLOTS_V2 = [("flow_gantt", gantt_figure), ("fct_cdf", fct_figure)]
PLOTS_SAMPLES = [("link_util", util_figure), ("queue_depth", queue_figure),
                 ("pfc_pause", pause_figure)]
PLOT_KINDS = dict(PLOTS + PLOTS_V2 + PLOTS_SAMPLES)
PLOT_NEEDS_V2 = set(dict(PLOTS_V2 + PLOTS_SAMPLES))


def parse_tiers(text):
    """--tier leaf or --tier leaf,spine: tier numbers."""
    if text is None:
        return None
    out = []
    for t in text.split(","):
        t = t.strip()
        if t not in TIERS:
            raise UserError(f"--tier {t}: unknown tier (allowed: {', '.join(TIERS)})")
        out.append(TIERS.index(t))
    return sorted(set(out))


def _recorded(meta, what):
    """Why a packet-fidelity record is missing: the fidelity, or a step stopped early."""
    if meta["fidelity"] != "packet":
        return f"{what} are recorded at packet fidelity only, this run: {meta['fidelity']}"
    if meta.get("partial"):
        return f"the step stopped early, before any {what} were recorded"
    return f"the run recorded no {what}"


def _absent(meta, tables, kind):
    """Why the file cannot hold what `kind` draws (the run did not record it), or None."""
    import numpy as np
    if kind in PLOT_NEEDS_V2 and meta["schema_version"] < 2:
        return f"schema version {meta['schema_version']} has no flow times or time series"
    if kind in dict(PLOTS_SAMPLES) and tables.get("samples") is None:
        return "no /samples group (time series)"
    if kind in ("flow_gantt", "fct_cdf"):
        flows = tables["flows"]
        if not timed(flows).any():
            return f"no flow times in /flows ({len(flows)} rows; {_recorded(meta, 'flows')})"
    if kind == "link_heatmap" and not len(tables["links"]):
        return f"no /links rows ({_recorded(meta, 'link counters')})"
    if kind == "timeline" and not len(tables["ops"]):
        return "no /ops rows"
    colls = tables["collectives"]
    if kind == "busbw" and not len(colls):
        return "no collectives in /collectives"
    if kind == "cct_cdf" and not np.any(colls["group"] != 0):
        return "no collectives outside TP in /collectives"
    return None


def _empty(path, tables, kind):
    """Why a time-series plot the file has data for would still be empty (nothing queued or
    paused), or None: `plot` without KIND skips it; asked for, it is drawn saying so."""
    if kind not in dict(PLOTS_SAMPLES):
        return None
    pp = tables["samples"].per_port(fabric_of(path, tables, kind))
    if kind == "link_util" and not pp["bytes"].any():
        return "no port carried bytes in /samples"
    if kind == "queue_depth" and not pp["queue_max"].any():
        return "no queue built up at any port in /samples"
    if kind == "pfc_pause" and not pp["paused_ps"].any():
        return "no port was paused by PFC in /samples"
    return None


def plot_support(path, meta, tables, kind):
    """Raises UserError when the file lacks what `kind` needs (one message, exit 2)."""
    if kind in dict(PLOTS_V2):
        need_v2(path, meta, kind)
    elif kind in dict(PLOTS_SAMPLES):
        need_samples(path, meta, tables, kind)
    why = _absent(meta, tables, kind)
    if why:
        raise UserError(f"{path}: {kind} has nothing to draw: {why}")


def drawable(path, meta, tables, kinds):
    """(kinds with data, {reason: [kinds skipped]}) for `plot` without KIND."""
    out, skipped = [], {}
    for kind in kinds:
        why = _absent(meta, tables, kind) or _empty(path, tables, kind)
        if why:
            skipped.setdefault(why, []).append(kind)
        else:
            out.append(kind)
    return out, skipped


def cmd_plot(args):
    import matplotlib
    matplotlib.use("Agg")
    if args.file.endswith(".csv"):  # stepsim plan's table
        if args.kinds:
            raise UserError("a plan CSV has one plot (step time against memory peak); "
                            "give no KIND")
        stem = os.path.splitext(os.path.basename(args.file))[0]
        print(save(plan_figure(args.file), output_dir(args.output), stem, "plan"))
        return 0
    unknown = [k for k in args.kinds if k not in PLOT_KINDS]
    if unknown:
        raise UserError(f"plot kind '{unknown[0]}' unknown (kinds: {', '.join(PLOT_KINDS)})")
    opts = plot_options(args.file, args.collective, parse_tiers(args.tier), args.top,
                        args.max_ports, args.max_flows)
    meta, tables = load(args.file)
    kinds, skipped = list(dict.fromkeys(args.kinds)), {}
    if kinds:
        for kind in kinds:
            plot_support(args.file, meta, tables, kind)
    else:
        kinds, skipped = drawable(args.file, meta, tables, PLOT_KINDS)
    directory = output_dir(args.output)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    name = run_name(args.file, meta)
    for kind in kinds:
        fig, _ = PLOT_KINDS[kind](meta, tables, name, opts)
        print(save(fig, directory, stem, kind))
    for why, which in skipped.items():
        print(f"stepsim-post: note: {args.file}: {why}; skipped {', '.join(which)}",
              file=sys.stderr)
    return 0
