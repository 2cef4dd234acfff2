"""Post-processing of stepsim's HDF5 step files (docs/hdf5-schema.md).

    stepsim-post report FILE.h5 [--markdown]     summary of one step
    stepsim-post plot FILE.h5 [-o DIR]           timeline, collective-time CDF, link heatmap,
                                                 busbw vs size (PNG files)
    stepsim-post compare A.h5 B.h5 [--markdown]  two steps side by side, with B / A per row

Runs with Debian's /usr/bin/python3 (h5py, numpy, matplotlib). Exit codes: 0 done, 2 a bad
argument or file (one message on stderr).
"""

import argparse
import os
import sys

SCHEMA_VERSION = 2
GROUPS = ["tp", "cp", "ep", "pp", "dp"]
KINDS = ["allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall",
         "alltoallv", "sendrecv"]
OP_KINDS = ["forward", "backward", "optimizer", "comm", "wait"]
TIERS = ["server", "leaf", "spine", "core"]
# The op timeline's colours: compute (forward, backward) in blues, the optimizer purple,
# blocking communication red, waiting for another stage light gray.
OP_COLORS = {0: "#1f77b4", 1: "#6baed6", 2: "#9467bd", 3: "#d62728", 4: "#d9d9d9"}

# What every step file has (docs/hdf5-schema.md): /meta attributes and each table's columns.
META_REQUIRED = ["schema_version", "model", "topology", "gpu", "gpus", "fidelity", "complete",
                 "step_s", "mfu", "compute_s", "bubble_s", "optimizer_s"]
TABLES = {
    "ops": ["stage", "kind", "group", "start_s", "end_s"],
    "collectives": ["stage", "group", "kind", "gpus", "bytes", "start_s", "end_s", "busbw_gbs"],
    "flows": ["collective", "repeats", "bytes", "packets", "retransmitted", "ecn_marked"],
    "links": ["port", "node", "tier", "bytes", "ecn_marks", "drops", "busy_s", "paused_s"],
}


class UserError(Exception):
    pass


def _attr_text(path, name, value):
    """An attribute as text or a number; bytes that are not UTF-8 are a user error."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{path}: /meta attribute '{name}' is not UTF-8 text")
    if hasattr(value, "shape") and value.shape == ():
        value = value[()]
        if isinstance(value, bytes):
            return _attr_text(path, name, value)
    return value


def _read_meta(path, f):
    import h5py
    if "meta" not in f:
        raise UserError(f"{path}: no /meta group: not a stepsim step file")
    if not isinstance(f["meta"], h5py.Group):
        raise UserError(f"{path}: /meta is a dataset, not a group of attributes")
    meta = {}
    for k in f["meta"].attrs.keys():
        try:
            v = f["meta"].attrs[k]
        except UnicodeDecodeError:
            raise UserError(f"{path}: /meta attribute '{k}' is not UTF-8 text")
        except (OSError, TypeError, ValueError) as e:
            raise UserError(f"{path}: /meta attribute '{k}' cannot be read ({e})")
        meta[k] = _attr_text(path, k, v)
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        raise UserError(f"{path}: /meta lacks attribute(s) {', '.join(missing)} "
                        "(docs/hdf5-schema.md lists them)")
    for k in META_REQUIRED:
        if k in ("model", "topology", "gpu", "fidelity"):
            continue
        try:
            float(meta[k])
        except (TypeError, ValueError):
            raise UserError(f"{path}: /meta attribute '{k}' is not a number ({meta[k]!r})")
    version = int(float(meta["schema_version"]))
    if version != SCHEMA_VERSION:
        raise UserError(f"{path}: schema version {version}, this tool reads {SCHEMA_VERSION}")
    return meta


def _read_table(path, f, name):
    import h5py
    if name not in f:
        raise UserError(f"{path}: no /{name} table (docs/hdf5-schema.md)")
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise UserError(f"{path}: /{name} is a group, not a table")
    try:
        data = obj[()]
    except (OSError, TypeError, ValueError) as e:
        raise UserError(f"{path}: /{name} cannot be read ({e})")
    names = data.dtype.names or ()
    missing = [c for c in TABLES[name] if c not in names]
    if missing:
        raise UserError(f"{path}: /{name} lacks column(s) {', '.join(missing)}")
    return data


def load(path):
    """The file's /meta attributes and tables as numpy structured arrays."""
    try:
        import h5py
    except ImportError:
        raise UserError("h5py is missing: run with Debian's /usr/bin/python3 "
                        "(apt-get install python3-h5py)")
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory, not an HDF5 file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise UserError(f"{path}: not an HDF5 file ({e})")
    with f:
        meta = _read_meta(path, f)
        tables = {name: _read_table(path, f, name) for name in TABLES}
        # output.flows: 1 every flow row, K the flows of 1 in K collectives, 0 none.
        meta["flows_sample"] = int(f["flows"].attrs.get("sample", 1))
    return meta, tables


def fmt_time(s):
    if s >= 1:
        return f"{s:.4f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


def percentile(sorted_values, q):
    """Nearest-rank percentile of a sorted array (as stepsim prints them)."""
    import numpy as np
    n = len(sorted_values)
    return float(sorted_values[max(0, int(np.ceil(q * n)) - 1)])


def group_stats(colls):
    """Per group: count, mean busbw (GB/s), bytes, p50/p99 time (us)."""
    import numpy as np
    out = {}
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel) == 0:
            continue
        t = np.sort((sel["end_s"] - sel["start_s"]) * 1e6)
        out[g] = {
            "count": len(sel),
            "busbw": float(sel["busbw_gbs"].mean()),
            "bytes": float(sel["bytes"].sum()),
            "p50_us": percentile(t, 0.5),
            "p99_us": percentile(t, 0.99),
        }
    return out


def run_name(path, meta):
    """The name every plot and table carries: file stem, model, topology, GPUs, fidelity."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return (f'{stem}: {meta["model"]} on {meta["topology"]}, {int(float(meta["gpus"]))} '
            f'{meta["gpu"]}, {meta["fidelity"]} fidelity')


def summary_rows(meta, tables):
    """(label, text, number or None) rows of a step, the same for report and compare; the
    number is what compare divides."""
    fid = meta["fidelity"]
    step = float(meta["step_s"])
    rows = [("model", meta["model"], None), ("topology", meta["topology"], None),
            ("GPUs", f'{int(float(meta["gpus"]))} {meta["gpu"]}', None),
            ("fidelity", fid, None),
            ("overrides (--set)", ", ".join(l for l in str(meta.get("sets", "")).splitlines()
                                            if l) or "none", None),
            ("complete", "yes" if int(float(meta["complete"])) else "NO (stopped early)", None),
            ("step time", fmt_time(step), step)]
    tokens = float(meta.get("tokens_per_step", 0) or 0)
    if tokens > 0 and step > 0:
        rows.append(("tokens/s", f"{tokens / step:,.0f}", tokens / step))
    else:
        rows.append(("tokens/s", "not recorded (file without tokens_per_step)", None))
    mfu = float(meta["mfu"])
    rows.append(("MFU", f"{100 * mfu:.2f} %", mfu))
    rows.append(("compute", fmt_time(float(meta["compute_s"])), float(meta["compute_s"])))
    for g in GROUPS:
        v = float(meta.get(f"exposed_{g}_s", 0.0))
        if v > 0:
            rows.append((f"exposed {g}", fmt_time(v), v))
    rows.append(("pipeline bubble", fmt_time(float(meta["bubble_s"])), float(meta["bubble_s"])))
    rows.append(("optimizer", fmt_time(float(meta["optimizer_s"])), float(meta["optimizer_s"])))
    for g, st in group_stats(tables["collectives"]).items():
        rows.append((f"busbw {g}", f'{st["busbw"]:.2f} GB/s ({st["count"]} collectives)',
                     st["busbw"]))
        rows.append((f"time {g} p50/p99", f'{st["p50_us"]:.2f} / {st["p99_us"]:.2f} us',
                     st["p99_us"]))
    rows += network_rows(meta, tables)
    return rows


def network_rows(meta, tables):
    """FCT percentiles, ECN, retransmissions, drops, PFC: recorded at packet fidelity only."""
    fid = meta["fidelity"]
    flows, links = tables["flows"], tables["links"]
    if "fct_p50_us" in meta and float(meta.get("messages", 0) or 0) > 0:
        p50, p99, pmax = (float(meta[k]) for k in ("fct_p50_us", "fct_p99_us", "fct_max_us"))
        rows = [("FCT p50/p99/max", f"{p50:.2f} / {p99:.2f} / {pmax:.2f} us", p99)]
    else:
        rows = [("FCT p50/p99/max", f"not recorded at {fid} fidelity (packet only)", None)]
    if len(flows) == 0 and len(links) == 0:
        rows.append(("ECN, retransmissions",
                     f"not recorded at {fid} fidelity (/flows and /links: packet only)", None))
        return rows
    rep = flows["repeats"].astype(float)
    retx = float((flows["retransmitted"] * rep).sum())
    ecn_rx = float((flows["ecn_marked"] * rep).sum())
    k = meta.get("flows_sample", 1)
    of = "" if k == 1 else f" (the flows of 1 in {k} collectives)"
    rows.append(("retransmitted packets", f"{retx:,.0f}{of}", retx))
    rows.append(("ECN-marked packets", f"{ecn_rx:,.0f} received{of}, "
                                       f'{float(links["ecn_marks"].sum()):,.0f} marks at switches',
                 ecn_rx))
    if len(links):
        step = float(meta["step_s"])
        util = links["busy_s"] / step if step > 0 else links["busy_s"] * 0
        rows.append(("busiest link", f"{100 * float(util.max()):.1f} % of the step "
                                     f'(port {int(links["port"][util.argmax()])})',
                     float(util.max())))
        rows.append(("drops", f'{int(links["drops"].sum())}', float(links["drops"].sum())))
        paused = float(links["paused_s"].sum())
        rows.append(("PFC pause", fmt_time(paused), paused))
    return rows


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(str(x) for x in r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())


def cmd_report(args):
    meta, tables = load(args.file)
    rows = summary_rows(meta, tables)
    if args.markdown:
        print(f"# stepsim step: {run_name(args.file, meta)}\n")
    print_table(["", args.file], [[label, text] for label, text, _ in rows], args.markdown)
    return 0


def cmd_compare(args):
    meta_a, tab_a = load(args.a)
    meta_b, tab_b = load(args.b)
    ra = {label: (text, v) for label, text, v in summary_rows(meta_a, tab_a)}
    rb = {label: (text, v) for label, text, v in summary_rows(meta_b, tab_b)}
    keys = list(ra) + [k for k in rb if k not in ra]
    rows = []
    for k in keys:
        ta, va = ra.get(k, ("-", None))
        tb, vb = rb.get(k, ("-", None))
        ratio = f"{vb / va:.4f}" if va is not None and vb is not None and va != 0 else ""
        rows.append([k, ta, tb, ratio])
    print_table(["", args.a, args.b, "B / A"], rows, args.markdown)
    return 0


def _unavailable(ax, text):
    """An axis that says what is missing instead of staying empty."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def timeline_figure(meta, tables, name):
    """Per-stage op timeline: one row per pipeline stage, ops coloured by kind without
    outlines (an outline would paint thin communication bars over the compute)."""
    import matplotlib.pyplot as plt
    import numpy as np
    ops = tables["ops"]
    stages = int(ops["stage"].max()) + 1 if len(ops) else 1
    fig, ax = plt.subplots(figsize=(12, 1.5 + 0.5 * stages))
    for k in (4, 3, 2, 0, 1):
        sel = ops[ops["kind"] == k]
        for st in np.unique(sel["stage"]):
            s2 = sel[sel["stage"] == st]
            ax.broken_barh(list(zip(s2["start_s"], s2["end_s"] - s2["start_s"])),
                           (float(st) - 0.4, 0.8), facecolors=OP_COLORS[k], edgecolors="none",
                           linewidth=0, label=f"{OP_KINDS[k]}:{int(st)}")
    ax.set_xlim(0, max(float(meta["step_s"]), float(ops["end_s"].max()) if len(ops) else 0) or 1)
    ax.set_ylim(-0.6, stages - 0.4)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("pipeline stage")
    ax.set_yticks(range(stages))
    ax.set_title(f'op timeline: step {fmt_time(float(meta["step_s"]))}, compute '
                 f'{fmt_time(float(meta["compute_s"]))} on the critical stage')
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=OP_COLORS[k]) for k in OP_COLORS],
              ["forward (compute)", "backward (compute)", "optimizer", "blocking comm", "wait"],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    if not len(ops):
        _unavailable(ax, "no ops recorded")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def cdf_figure(meta, tables, name):
    import matplotlib.pyplot as plt
    import numpy as np
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel) == 0 or g == "tp":
            continue
        t = np.sort((sel["end_s"] - sel["start_s"]) * 1e6)
        ax.step(t, np.arange(1, len(t) + 1) / len(t), where="post", label=f"{g} ({len(t)})")
        drawn += 1
    ax.set_title("completion time of the network groups' collectives")
    _finish_log_x(ax, drawn, "collective completion time (us)", "CDF (fraction of collectives)",
                  "no collectives outside TP in this step")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def _finish_log_x(ax, drawn, xlabel, ylabel, missing):
    """Labels a log-x plot with a legend, or says what is `missing` when nothing was drawn."""
    if drawn:
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend()
    else:
        _unavailable(ax, missing)


def heatmap_figure(meta, tables, name):
    """Link utilization by tier and sending port, on a colour scale from 0 to the busiest
    link, with the ports' names."""
    import matplotlib.pyplot as plt
    import numpy as np
    links = tables["links"]
    fig, ax = plt.subplots(figsize=(11, 3.5))
    ax.set_title("link utilization: busy time of each sending port over the step")
    step = float(meta["step_s"])
    if not len(links) or step <= 0:
        _unavailable(ax, f"no link counters: /links is recorded at packet fidelity only "
                         f"(this run: {meta['fidelity']} fidelity)")
        fig.suptitle(name, fontsize="medium")
        return fig, ax
    tiers = sorted(set(int(t) for t in links["tier"]))
    width = max(int((links["tier"] == t).sum()) for t in tiers)
    grid = np.full((len(tiers), width), np.nan)
    labels = [[""] * width for _ in tiers]
    for row, t in enumerate(tiers):
        sel = links[links["tier"] == t]
        sel = sel[np.argsort(sel["port"])]
        grid[row, :len(sel)] = 100 * sel["busy_s"] / step
        for i, (n, p) in enumerate(zip(sel["node"], sel["port"])):
            labels[row][i] = f"n{int(n)}/p{int(p)}"
    vmax = float(np.nanmax(grid)) or 1.0
    im = ax.imshow(grid, aspect="auto", vmin=0, vmax=vmax, cmap="viridis",
                   interpolation="nearest")
    ax.set_yticks(range(len(tiers)), [TIERS[t] if t < len(TIERS) else str(t) for t in tiers])
    # Port names along x (node/port of the first tier's row), at most 24 of them.
    step_ticks = max(1, width // 24)
    ticks = list(range(0, width, step_ticks))
    ax.set_xticks(ticks, [labels[0][i] or str(i) for i in ticks], rotation=60, fontsize="x-small")
    for row in range(len(tiers)):
        ax.text(width - 0.5, row, f" max {np.nanmax(grid[row]):.1f} %", va="center",
                fontsize="x-small", color="white", ha="right")
    fig.colorbar(im, ax=ax, label="busy (% of the step)")
    ax.set_ylabel("tier of the sending node")
    ax.set_xlabel(f"sending port (node/port, sorted by port; row: {', '.join(TIERS[t] if t < len(TIERS) else str(t) for t in tiers)})")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


def busbw_figure(meta, tables, name):
    import matplotlib.pyplot as plt
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_title("bus bandwidth of the step's collectives by size")
    drawn = 0
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel):
            ax.scatter(sel["bytes"], sel["busbw_gbs"], s=8, label=g)
            drawn += 1
    _finish_log_x(ax, drawn, "size S (bytes)", "busbw (GB/s)", "no collectives in this step")
    fig.suptitle(name, fontsize="medium")
    return fig, ax


PLOTS = [("timeline", timeline_figure), ("cct_cdf", cdf_figure),
         ("link_heatmap", heatmap_figure), ("busbw", busbw_figure)]


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


def cmd_plot(args):
    import matplotlib
    matplotlib.use("Agg")
    meta, tables = load(args.file)
    directory = output_dir(args.output)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    name = run_name(args.file, meta)
    for plot, make in PLOTS:
        fig, _ = make(meta, tables, name)
        print(save(fig, directory, stem, plot))
    return 0


def save(fig, directory, stem, name):
    import matplotlib.pyplot as plt
    path = os.path.join(directory, f"{stem}_{name}.png")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})")
    finally:
        plt.close(fig)
    return path


def main(argv):
    p = argparse.ArgumentParser(prog="stepsim-post", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="summary of one step")
    r.add_argument("file")
    r.add_argument("--markdown", action="store_true")
    r.set_defaults(run=cmd_report)
    pl = sub.add_parser("plot", help="PNG plots of one step")
    pl.add_argument("file")
    pl.add_argument("-o", "--output", default=".", help="directory for the PNG files")
    pl.set_defaults(run=cmd_plot)
    c = sub.add_parser("compare", help="two steps side by side")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--markdown", action="store_true")
    c.set_defaults(run=cmd_compare)
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        return args.run(args)
    except UserError as e:
        print(f"stepsim-post: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
