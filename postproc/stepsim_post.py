"""Post-processing of stepsim's HDF5 step files (docs/hdf5-schema.md).

    stepsim-post report FILE.h5 [--markdown]     summary of one step
    stepsim-post plot FILE.h5 [-o DIR]           timeline, collective-time CDF, link heatmap,
                                                 busbw vs size (PNG files)
    stepsim-post compare A.h5 B.h5 [--markdown]  two steps side by side (e.g. 800G vs 1.6T)

Runs with Debian's /usr/bin/python3 (h5py, numpy, matplotlib). Exit codes: 0 done, 2 a bad
argument or file (one message on stderr).
"""

import argparse
import os
import sys

SCHEMA_VERSION = 1
GROUPS = ["tp", "cp", "ep", "pp", "dp"]
KINDS = ["allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall",
         "alltoallv", "sendrecv"]
OP_KINDS = ["forward", "backward", "optimizer", "comm", "wait"]
TIERS = ["server", "leaf", "spine", "core"]


class UserError(Exception):
    pass


def load(path):
    """The file's /meta attributes and tables as numpy structured arrays."""
    try:
        import h5py
    except ImportError:
        raise UserError("h5py is missing: run with Debian's /usr/bin/python3 "
                        "(apt-get install python3-h5py)")
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise UserError(f"{path}: not an HDF5 file ({e})")
    with f:
        if "meta" not in f:
            raise UserError(f"{path}: no /meta group: not a stepsim step file")
        meta = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["meta"].attrs.items()}
        version = int(meta.get("schema_version", -1))
        if version != SCHEMA_VERSION:
            raise UserError(f"{path}: schema version {version}, this tool reads {SCHEMA_VERSION}")
        tables = {name: f[name][()] for name in ("ops", "collectives", "flows", "links")}
    return meta, tables


def fmt_time(s):
    if s >= 1:
        return f"{s:.4f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.3f} us"


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
            "p50_us": float(t[max(0, int(np.ceil(0.5 * len(t))) - 1)]),
            "p99_us": float(t[max(0, int(np.ceil(0.99 * len(t))) - 1)]),
        }
    return out


def summary_rows(meta, tables):
    """(label, value) rows of a step, the same for report and compare."""
    rows = [("model", meta["model"]), ("topology", meta["topology"]),
            ("GPUs", f'{int(meta["gpus"])} {meta["gpu"]}'), ("fidelity", meta["fidelity"]),
            ("complete", "yes" if int(meta["complete"]) else "NO (stopped early)"),
            ("step time", fmt_time(float(meta["step_s"]))),
            ("MFU", f'{100 * float(meta["mfu"]):.2f} %'),
            ("compute", fmt_time(float(meta["compute_s"])))]
    for g in GROUPS:
        v = float(meta.get(f"exposed_{g}_s", 0.0))
        if v > 0:
            rows.append((f"exposed {g}", fmt_time(v)))
    rows.append(("pipeline bubble", fmt_time(float(meta["bubble_s"]))))
    rows.append(("optimizer", fmt_time(float(meta["optimizer_s"]))))
    for g, st in group_stats(tables["collectives"]).items():
        rows.append((f"busbw {g}", f'{st["busbw"]:.2f} GB/s ({st["count"]} collectives)'))
        rows.append((f"time {g} p50/p99", f'{st["p50_us"]:.2f} / {st["p99_us"]:.2f} us'))
    links = tables["links"]
    if len(links):
        step = float(meta["step_s"])
        util = links["busy_s"] / step if step > 0 else links["busy_s"] * 0
        rows.append(("busiest link", f"{100 * float(util.max()):.1f} % of the step "
                                     f'(port {int(links["port"][util.argmax()])})'))
        rows.append(("drops", f'{int(links["drops"].sum())}'))
        rows.append(("PFC pause", fmt_time(float(links["paused_s"].sum()))))
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
        print(f"# stepsim step: {meta['model']} ({args.file})\n")
    print_table(["", args.file], [list(r) for r in rows], args.markdown)
    return 0


def cmd_compare(args):
    meta_a, tab_a = load(args.a)
    meta_b, tab_b = load(args.b)
    ra = dict(summary_rows(meta_a, tab_a))
    rb = dict(summary_rows(meta_b, tab_b))
    keys = list(ra) + [k for k in rb if k not in ra]
    rows = [[k, ra.get(k, "-"), rb.get(k, "-")] for k in keys]
    sa, sb = float(meta_a["step_s"]), float(meta_b["step_s"])
    if sa > 0:
        rows.append(["step time B / A", "", f"{sb / sa:.4f}"])
    print_table(["", args.a, args.b], rows, args.markdown)
    return 0


def cmd_plot(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    meta, tables = load(args.file)
    os.makedirs(args.output, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    written = []

    # Per-GPU timeline: one row per stage, ops colored by kind.
    ops = tables["ops"]
    colors = {0: "tab:blue", 1: "tab:green", 2: "tab:purple", 3: "tab:red", 4: "lightgray"}
    fig, ax = plt.subplots(figsize=(12, 1 + 0.5 * (int(ops["stage"].max()) + 1 if len(ops) else 1)))
    for k, c in colors.items():
        sel = ops[ops["kind"] == k]
        for st in np.unique(sel["stage"]):
            s2 = sel[sel["stage"] == st]
            ax.broken_barh(list(zip(s2["start_s"], s2["end_s"] - s2["start_s"])),
                           (float(st) - 0.4, 0.8), color=c)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("pipeline stage (GPU)")
    ax.set_title(f'{meta["model"]}: op timeline, step {fmt_time(float(meta["step_s"]))}')
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in colors],
              OP_KINDS, loc="upper right", fontsize="small")
    written.append(save(fig, args.output, stem, "timeline"))

    # Completion-time CDF of the network groups' collectives.
    colls = tables["collectives"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel) == 0 or g == "tp":
            continue
        t = np.sort((sel["end_s"] - sel["start_s"]) * 1e6)
        ax.step(t, np.arange(1, len(t) + 1) / len(t), where="post", label=g)
    ax.set_xscale("log")
    ax.set_xlabel("collective completion time (us)")
    ax.set_ylabel("CDF")
    ax.legend()
    written.append(save(fig, args.output, stem, "cct_cdf"))

    # Link utilization: busy time over the step, by tier and port.
    links = tables["links"]
    fig, ax = plt.subplots(figsize=(10, 3))
    if len(links):
        step = float(meta["step_s"])
        tiers = sorted(set(int(t) for t in links["tier"]))
        width = max(int((links["tier"] == t).sum()) for t in tiers)
        grid = np.full((len(tiers), width), np.nan)
        for row, t in enumerate(tiers):
            sel = links[links["tier"] == t]
            sel = sel[np.argsort(sel["port"])]
            grid[row, :len(sel)] = sel["busy_s"] / step
        im = ax.imshow(grid, aspect="auto", vmin=0, vmax=1, cmap="viridis",
                       interpolation="nearest")
        ax.set_yticks(range(len(tiers)), [TIERS[t] if t < len(TIERS) else str(t) for t in tiers])
        fig.colorbar(im, ax=ax, label="busy fraction of the step")
    ax.set_xlabel("sending port (sorted)")
    ax.set_title("link utilization")
    written.append(save(fig, args.output, stem, "link_heatmap"))

    # busbw against size, by group.
    fig, ax = plt.subplots(figsize=(6, 4))
    for gi, g in enumerate(GROUPS):
        sel = colls[colls["group"] == gi]
        if len(sel):
            ax.scatter(sel["bytes"], sel["busbw_gbs"], s=8, label=g)
    ax.set_xscale("log")
    ax.set_xlabel("size S (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.legend()
    written.append(save(fig, args.output, stem, "busbw"))
    for w in written:
        print(w)
    return 0


def save(fig, directory, stem, name):
    import matplotlib.pyplot as plt
    path = os.path.join(directory, f"{stem}_{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
