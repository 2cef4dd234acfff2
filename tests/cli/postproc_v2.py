"""stepsim-post on step files of schema version 2 (flow times, /nodes, /ports, /samples) that
this test writes itself with h5py, column for column as docs/hdf5-schema.md lists them, and on
the same step written as schema version 1:
- every plot is a non-empty PNG; the old four still come out of a version-1 file, and the new
  ones refuse it (exit 2, one message), as they refuse a file without /samples;
- flow_gantt draws exactly the timed flows of the chosen collective (the longest network one by
  default), each from its start to its end, labelled with GPUs and NIC ports by name;
- fct_cdf has one curve per group, each ends at 1, and a row counts `repeats` times;
- link_util's colour scale ends at the 99th percentile of the busy cells (well under 1 for a
  lightly loaded fabric), its rows are the named ports of the chosen tier, and the drawn
  utilisation integrated over time gives back each port's bytes, also when bins are merged;
- queue_depth draws the top-K ports by largest queue, pfc_pause the paused fraction;
- the op timeline keeps compute and communication on separate lanes: the compute lane's pixels
  are compute colours even when thousands of thin collectives interleave with it;
- report prints the /flows row count and the busiest links by name.
Usage: postproc_v2.py POSTPROC_DIR. Prints failures and the counts; exit 1 when any failed."""

import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

POST = None  # stepsim_post, imported from POSTPROC_DIR
INTERVAL_PS = 1_000_000  # 1 us
RATE_GBPS = 400.0
passed, failed = 0, 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))


# ---- a small fabric: 4 servers with 2 NIC ports, 2 leaves, 2 spines -------------------------
NODES = [("srv0", 0), ("srv1", 0), ("srv2", 0), ("srv3", 0), ("leaf0", 1), ("leaf1", 1),
         ("spine0", 2), ("spine1", 2)]


def fabric():
    """(ports rows [(port, node, index, peer, rate)], port id of (node name, index))."""
    links = []  # (node a, index a, node b, index b)
    for s in range(4):
        for i in range(2):
            links.append((s, i, 4 + s // 2, (s % 2) * 2 + i))
    for leaf in range(2):
        for sp in range(2):
            links.append((4 + leaf, 4 + sp, 6 + sp, leaf))
    ids = {}
    for a, ia, b, ib in links:
        for n, i in ((a, ia), (b, ib)):
            ids[(n, i)] = len(ids)
    peer = {}
    for a, ia, b, ib in links:
        peer[ids[(a, ia)]] = ids[(b, ib)]
        peer[ids[(b, ib)]] = ids[(a, ia)]
    rows = [(p, n, i, peer[p], RATE_GBPS) for (n, i), p in ids.items()]
    return rows, {(NODES[n][0], i): p for (n, i), p in ids.items()}


PORTS, PORT = fabric()


def nic(gpu):
    """GPU g sits on server g // 4, its NIC port (g // 2) % 2."""
    return PORT[(f"srv{gpu // 4}", (gpu // 2) % 2)]


# ---- the step -------------------------------------------------------------------------------
# Collectives: 0 a TP allreduce (the longest, with flows: the default Gantt must skip it),
# 1 a DP allreduce (the longest network collective), 2 a PP send, 3 a short DP allreduce with
# one flow of unknown times, 4 an EP all-to-all without flows, 5 a repetition of 1 (longer,
# but without flow rows of its own).
COLLS = [  # id, stage, group, kind, gpus, bytes, start_s, end_s
    (0, 0, 0, 0, 4, 1 << 20, 0.0, 60e-6),
    (1, 0, 4, 0, 4, 1 << 24, 5e-6, 45e-6),
    (2, 0, 3, 7, 2, 1 << 16, 2e-6, 6e-6),
    (3, 1, 4, 0, 4, 1 << 22, 20e-6, 30e-6),
    (4, 1, 2, 5, 4, 1 << 18, 31e-6, 33e-6),
    (5, 1, 4, 0, 4, 1 << 24, 50e-6, 95e-6),  # collective 1 again: its flows are 1's (memoized)
]


def flow_rows():
    """(collective, repeats, src_gpu, dst_gpu, group, kind, start_ps, first_byte_ps, end_ps)"""
    rows = []
    for i, (s, d) in enumerate([(0, 1), (1, 2), (2, 3), (3, 0)]):  # TP over the NICs
        rows.append((0, 3, s, d, 0, 0, 0, 500_000, 58_000_000 - i * 1_000_000))
    ring = [0, 4, 8, 12]
    for i in range(4):  # DP ring, both directions
        s, d = ring[i], ring[(i + 1) % 4]
        rows.append((1, 2, s, d, 4, 0, 5_000_000 + i * 100_000, 5_400_000 + i * 100_000,
                     40_000_000 + i * 1_000_000))
        rows.append((1, 2, d, s, 4, 0, 5_000_000 + i * 200_000, 5_300_000 + i * 200_000,
                     42_000_000 + i * 500_000))
    rows.append((2, 1, 2, 6, 3, 7, 2_000_000, 2_300_000, 6_000_000))
    rows.append((3, 5, 1, 5, 4, 0, 20_000_000, 20_100_000, 28_000_000))
    rows.append((3, 5, 5, 9, 4, 0, 20_000_000, -1, 29_000_000))
    rows.append((3, 5, 9, 13, 4, 0, 21_000_000, 21_500_000, 30_000_000))
    rows.append((3, 5, 13, 1, 4, 0, -1, -1, -1))
    return rows


def ops_rows(stages=2, interleaved=2000):
    """Per stage: `interleaved` pairs of compute (3 us) and a thin blocking collective (1 us),
    then a wait; returns the rows and the compute time of stage 0."""
    rows = []
    for st in range(stages):
        t = 0.0
        for i in range(interleaved):
            rows.append((st * 4, st, i % 2, 0, i, 0, i % 8, t, t + 3e-6))
            rows.append((st * 4, st, 3, 0, i, 0, i % 8, t + 3e-6, t + 4e-6))
            t += 4e-6
        rows.append((st * 4, st, 4, 0, 0, 0, 0, t, t + 50e-6))
    return rows, interleaved * 3e-6


def sample_rows(bins, rng):
    """Sparse (bin, port, bytes, queue, paused_ps, ecn, pause_sent, drops) rows: server and leaf
    uplinks carry 0..30 % of line rate, spine ports idle; three ports queue, two pause."""
    per_bin = RATE_GBPS * 1e9 * INTERVAL_PS * 1e-12 / 8  # bytes at line rate
    rows = []
    busy = [PORT[("srv0", 0)], PORT[("srv1", 1)], PORT[("srv2", 0)], PORT[("leaf0", 4)],
            PORT[("leaf1", 5)], PORT[("leaf0", 0)]]
    for b in range(bins):
        for j, p in enumerate(busy):
            if (b + j) % 3 == 0:
                continue  # sparse: idle (bin, port) pairs are absent
            util = rng.uniform(0.0, 0.3)
            queue = int(rng.integers(0, 40_000)) if j < 3 else 0
            paused = int(rng.integers(0, INTERVAL_PS // 2)) if j in (1, 4) and b % 5 == 0 else 0
            rows.append((b, p, int(util * per_bin), queue, paused, int(rng.integers(0, 3)),
                         1 if paused else 0, 0))
    return rows


def write_step(path, schema=2, samples=True, bins=50, seed=1, samples_mutation=None):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        m = f.create_group("meta")
        ops, compute = ops_rows()
        step = max(r[8] for r in ops)
        for k, v in dict(schema_version=np.int32(schema), stepsim_version="test",
                         model="synthetic", topology="leafspine-4", gpu="h100",
                         fidelity="packet", gpus=np.int64(16), ranks=np.int64(1),
                         threads=np.int64(1), complete=np.int32(1), step_s=step, mfu=0.4,
                         compute_s=compute, bubble_s=0.0, optimizer_s=0.0,
                         critical_stage=np.uint32(0), tokens_per_step=4096.0,
                         exposed_dp_s=1e-5, messages=np.uint64(0)).items():
            m.attrs[k] = v
        f["ops"] = np.array(ops, dtype=[("gpu", "u4"), ("stage", "u4"), ("kind", "u2"),
                                        ("group", "u2"), ("micro", "u4"), ("chunk", "u4"),
                                        ("layer", "u4"), ("start_s", "f8"), ("end_s", "f8")])
        f["collectives"] = np.array(
            [c + (c[5] / max(1e-12, c[7] - c[6]) / 1e9,) for c in COLLS],
            dtype=[("id", "u4"), ("stage", "u4"), ("group", "u2"), ("kind", "u2"),
                   ("gpus", "u4"), ("bytes", "i8"), ("start_s", "f8"), ("end_s", "f8"),
                   ("busbw_gbs", "f8")])
        flows = flow_rows()
        if schema >= 2:
            f["flows"] = np.array(
                [(c, rep, nic(s), nic(d), s, d, g, k, 1 << 20, 4, 1024, 0, 3, a, fb, e)
                 for c, rep, s, d, g, k, a, fb, e in flows],
                dtype=[("collective", "u4"), ("repeats", "u4"), ("src_nic", "u4"),
                       ("dst_nic", "u4"), ("src_gpu", "u4"), ("dst_gpu", "u4"),
                       ("group", "u2"), ("kind", "u2"), ("bytes", "u8"), ("messages", "u8"),
                       ("packets", "u8"), ("retransmitted", "u8"), ("ecn_marked", "u8"),
                       ("start_ps", "i8"), ("first_byte_ps", "i8"), ("end_ps", "i8")])
        else:
            f["flows"] = np.array(
                [(c, rep, nic(s), nic(d), 1 << 20, 4, 1024, 0, 3)
                 for c, rep, s, d, g, k, a, fb, e in flows],
                dtype=[("collective", "u4"), ("repeats", "u4"), ("src_nic", "u4"),
                       ("dst_nic", "u4"), ("bytes", "u8"), ("messages", "u8"),
                       ("packets", "u8"), ("retransmitted", "u8"), ("ecn_marked", "u8")])
        f["links"] = np.array(
            [(p, n, p, NODES[n][1], 1e6, 1e3, 0, 0, 0, 1e-5, 0) for p, n, i, _, _ in PORTS],
            dtype=[("port", "u4"), ("node", "u4"), ("link", "u4"), ("tier", "u4"),
                   ("bytes", "f8"), ("packets", "f8"), ("ecn_marks", "f8"),
                   ("pause_sent", "f8"), ("drops", "f8"), ("busy_s", "f8"), ("paused_s", "f8")])
        if schema < 2:
            return None
        f["nodes"] = np.array([(i, name.encode(), tier) for i, (name, tier) in enumerate(NODES)],
                              dtype=[("node", "u4"), ("name", "S32"), ("tier", "u4")])
        f["ports"] = np.array(PORTS, dtype=[("port", "u4"), ("node", "u4"), ("index", "u4"),
                                            ("peer", "u4"), ("rate_gbps", "f8")])
        if not samples:
            return None
        g = f.create_group("samples")
        g.attrs["interval_ps"] = np.int64(INTERVAL_PS)
        rows = np.array(sample_rows(bins, rng),
                        dtype=[("bin", "u4"), ("port", "u4"), ("bytes", "u8"),
                               ("queue_max_bytes", "u8"), ("paused_ps", "i8"),
                               ("ecn_marks", "u4"), ("pause_sent", "u4"), ("drops", "u4")])
        g.create_dataset("ports", data=rows, chunks=True, maxshape=(None,))
        if samples_mutation:
            samples_mutation(f, g)
        return rows


def run(*args):
    p = subprocess.run([sys.executable, os.path.join(POSTDIR, "stepsim_post", "__main__.py"), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect_error(want, *args):
    rc, _, err = run(*args)
    lines = [l for l in err.splitlines() if l]
    check(rc == 2 and len(lines) == 1 and err.count(want) == 1,
          f"stepsim-post {' '.join(args)}: exit 2 with one message '{want}'",
          f"exit {rc}, stderr: {err.strip()[:400]}")


def png_ok(path):
    with open(path, "rb") as fh:
        head = fh.read(8)
    return head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 5000


def util_cells(rows, ports, factor, bins):
    """The test's own utilisation grid (rows: ports; columns: `factor` bins merged)."""
    cols = -(-bins // factor)
    grid = np.zeros((len(ports), cols))
    row_of = {p: i for i, p in enumerate(ports)}
    for r in rows:
        if int(r["port"]) in row_of:
            grid[row_of[int(r["port"])], int(r["bin"]) // factor] += float(r["bytes"]) * 8
    cover = np.minimum(factor, bins - np.arange(cols) * factor) * INTERVAL_PS * 1e-12
    return grid / (RATE_GBPS * 1e9 * cover)


def label_port(label):
    """'leaf0/p4 (leaf)' -> the port id."""
    node, idx = label.split(" ")[0].split("/p")
    return PORT[(node, int(idx))]


def main(argv):
    global POST, POSTDIR
    POSTDIR = argv[1]
    sys.path.insert(0, POSTDIR)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt
    import stepsim_post as sp
    POST = sp
    tmp = tempfile.mkdtemp(prefix="postproc_v2.")
    v2 = os.path.join(tmp, "v2.h5")
    rows = write_step(v2)
    bins = 50

    # The CLI: every plot of a full file, a PNG each, no note.
    rc, out, err = run("plot", v2, "-o", os.path.join(tmp, "all"))
    pngs = out.split()
    kinds = list(sp.PLOT_KINDS)
    check(rc == 0 and not err and len(pngs) == len(kinds) and
          all(p.endswith(f"_{k}.png") and png_ok(p) for p, k in zip(pngs, kinds)),
          "plot of a schema-2 file: every kind a non-empty PNG", f"exit {rc} {out} {err}")
    rc, out, err = run("plot", v2, "link_util", "flow_gantt", "--tier", "leaf", "--collective",
                       "3", "-o", os.path.join(tmp, "two"))
    check(rc == 0 and len(out.split()) == 2 and all(png_ok(p) for p in out.split()),
          "plot KIND KIND: just those two", f"exit {rc} {out} {err}")
    rc, out, err = run("plot", v2, "-o", os.path.join(tmp, "after"), "fct_cdf")
    check(rc == 0 and out.split() == [os.path.join(tmp, "after", "v2_fct_cdf.png")],
          "plot FILE -o DIR KIND: kinds after the options", f"exit {rc} {out} {err}")

    name = "synthetic"
    meta, tables = sp.load(v2)

    # flow_gantt: the default is collective 1 (TP's collective 0 is longer but not a network
    # one); exactly its flows, start to end, named by GPU and port.
    fig, ax = sp.gantt_figure(meta, tables, name, sp.plot_options(v2))
    want = [r for r in flow_rows() if r[0] == 1]
    bars = ax.containers[0].patches if ax.containers else []
    t0 = min(r[6] for r in want)
    drawn = sorted((round(b.get_x() * 1e12 + t0), round((b.get_x() + b.get_width()) * 1e12 + t0))
                   for b in bars)
    check(drawn == sorted((r[6], r[8]) for r in want),
          "flow_gantt (default): the bars are collective 1's flows, start to end",
          f"drawn {drawn}")
    labels = {t.get_text() for t in ax.get_yticklabels()}
    want_labels = {f"GPU {s} (srv{s // 4}/p{(s // 2) % 2}) -> GPU {d} (srv{d // 4}/p{(d // 2) % 2})"
                   for _, _, s, d, *_ in want}
    check(labels == want_labels, "flow_gantt: one label per flow, src -> dst GPU and NIC port",
          f"{sorted(labels)[:3]}")
    marks = ax.collections[0].get_offsets() if ax.collections else np.zeros((0, 2))
    check(sorted(round(x * 1e12 + t0) for x in marks[:, 0]) == sorted(r[7] for r in want),
          "flow_gantt: a first-byte mark per flow")
    check("collective 1" in ax.get_title() and "first of 2 repetitions" in ax.get_title(),
          "flow_gantt: the title names the collective and its repetitions", ax.get_title())
    plt.close(fig)
    fig, ax = sp.gantt_figure(meta, tables, name, sp.plot_options(v2, collective=3))
    n = len(ax.containers[0].patches)
    check(n == 3 and "1 without times not drawn" in ax.get_title(),
          "flow_gantt --collective 3: its three timed flows, the untimed one counted",
          f"{n} bars; {ax.get_title()}")
    plt.close(fig)
    # At most --max-flows bars: the flows that end last, the title saying so.
    timed3 = sorted((r[8], r[6]) for r in flow_rows() if r[0] == 3 and r[6] >= 0 and r[8] >= r[6])
    fig, ax = sp.gantt_figure(meta, tables, name, sp.plot_options(v2, collective=3, max_flows=2))
    t0 = min(s for _, s in timed3[-2:])
    ends = sorted(round((b.get_x() + b.get_width()) * 1e12 + t0) for b in ax.containers[0].patches)
    check(ends == [e for e, _ in timed3[-2:]] and "the 2 that end last drawn" in ax.get_title(),
          "flow_gantt --max-flows 2: the two flows that end last, said in the title",
          f"ends {ends}, want {[e for e, _ in timed3[-2:]]}; {ax.get_title()}")
    plt.close(fig)
    expect_error("--collective 9: no such collective", "plot", v2, "flow_gantt", "--collective",
                 "9", "-o", tmp)
    expect_error("--collective 4: ", "plot", v2, "flow_gantt", "--collective", "4", "-o", tmp)
    expect_error("--collective 5: ", "plot", v2, "flow_gantt", "--collective", "5", "-o", tmp)
    rc, _, err = run("plot", v2, "flow_gantt", "--collective", "5", "-o", tmp)
    check("(--collective 1)" in err, "flow_gantt --collective 5: points to the first of its kind",
          err)

    # fct_cdf: one curve per group with timed flows (tp, pp, dp), each ending at 1; weights.
    fig, ax = sp.fct_figure(meta, tables, name, sp.plot_options(v2))
    lines = {l.get_label().split(":")[0]: l for l in ax.get_lines()}
    check(sorted(lines) == ["dp", "pp", "tp"], "fct_cdf: one curve per group present",
          f"{sorted(lines)}")
    check(all(abs(l.get_ydata()[-1] - 1) < 1e-12 and l.get_ydata()[0] == 0
              for l in lines.values()), "fct_cdf: each CDF runs from 0 to 1")
    dp = [r for r in flow_rows() if r[4] == 4 and r[6] >= 0 and r[8] >= r[6]]
    fct = np.array([(r[8] - r[6]) * 1e-6 for r in dp])
    w = np.array([r[1] for r in dp], dtype=float)
    y = lines["dp"].get_ydata()[1:]
    x = lines["dp"].get_xdata()[1:]
    order = np.argsort(fct, kind="stable")
    check(np.allclose(x, fct[order]) and np.allclose(y, np.cumsum(w[order]) / w.sum()),
          "fct_cdf: dp's curve is its flows' FCTs weighted by repeats")
    check(f"{int(w.sum())} flows" in lines["dp"].get_label(), "fct_cdf: the legend counts flows",
          lines["dp"].get_label())
    plt.close(fig)

    # link_util: the scale follows the data; rows are the busy ports by name; the drawn grid
    # integrates back to each port's bytes.
    fig, ax = sp.util_figure(meta, tables, name, sp.plot_options(v2))
    ids = [label_port(t.get_text()) for t in ax.get_yticklabels()]
    busy = sorted({int(p) for p in rows["port"] if rows["bytes"][rows["port"] == p].sum() > 0})
    check(sorted(ids) == busy, "link_util: one row per port that carried bytes, named",
          f"{ids} vs {busy}")
    grid = util_cells(rows, ids, 1, bins)
    vmax = ax.images[0].get_clim()[1]
    want_vmax = float(np.percentile(grid[grid > 0], 99))
    check(abs(vmax - want_vmax) < 1e-9 and vmax < 0.35,
          "link_util: the colour scale ends at the 99th percentile of busy cells, not at 1",
          f"vmax {vmax}, want {want_vmax}")
    drawn = np.ma.filled(ax.images[0].get_array(), np.nan)
    check(np.allclose(drawn, grid), "link_util: every cell is bytes*8/(rate*interval)")
    cbar = fig.axes[-1].get_ylabel()
    check("utilisation" in cbar and f"colour scale 0 to {vmax:.3g}: the 99th percentile" in
          ax.get_title(), "link_util: the colour bar says what, the title how it is scaled",
          f"{cbar!r}, {ax.get_title()!r}")
    plt.close(fig)
    fig, ax = sp.util_figure(meta, tables, name, sp.plot_options(v2, tiers=[1]))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    leaf_busy = [p for p in busy if NODES[PORTS[p][1]][1] == 1]
    check(len(labels) == len(leaf_busy) and all(l.endswith("(leaf)") for l in labels),
          "link_util --tier leaf: the leaves' busy ports only", f"{labels}")
    plt.close(fig)
    fig, ax = sp.util_figure(meta, tables, name, sp.plot_options(v2, max_ports=2))
    ids2 = [label_port(t.get_text()) for t in ax.get_yticklabels()]
    totals = {p: float(rows["bytes"][rows["port"] == p].sum()) for p in busy}
    check(sorted(ids2) == sorted(sorted(busy, key=lambda p: -totals[p])[:2]) and
          "2 busiest of 6" in ax.get_title(), "link_util --max-ports 2: the two busiest",
          f"{ids2}; {ax.get_title()}")
    plt.close(fig)
    # 2,500 bins: three bins per column; utilisation x time x rate is still the bytes.
    long = os.path.join(tmp, "long.h5")
    lrows = write_step(long, bins=2500, seed=2)
    lmeta, ltables = sp.load(long)
    fig, ax = sp.util_figure(lmeta, ltables, name, sp.plot_options(long))
    ids = [label_port(t.get_text()) for t in ax.get_yticklabels()]
    drawn = np.ma.filled(ax.images[0].get_array(), np.nan)
    cover = np.minimum(3, 2500 - np.arange(drawn.shape[1]) * 3) * INTERVAL_PS * 1e-12
    back = (drawn * cover[None, :]).sum(axis=1) * RATE_GBPS * 1e9 / 8
    want_bytes = np.array([lrows["bytes"][lrows["port"] == p].sum() for p in ids], dtype=float)
    check(drawn.shape[1] == 834 and np.allclose(back, want_bytes, rtol=1e-9),
          "link_util over 2,500 bins: 834 columns, utilisation integrates to the bytes",
          f"{drawn.shape}, {back[:2]} vs {want_bytes[:2]}")
    g = util_cells(lrows, ids, 3, 2500)
    check(abs(ax.images[0].get_clim()[1] - np.percentile(g[g > 0], 99)) < 1e-9,
          "link_util over 2,500 bins: the scale follows the merged columns")
    plt.close(fig)

    # queue_depth: the top-K ports by largest queue, each line peaking at that queue.
    fig, ax = sp.queue_figure(meta, tables, name, sp.plot_options(v2, top=2))
    qmax = {int(p): float(rows["queue_max_bytes"][rows["port"] == p].max()) for p in busy}
    top = sorted(qmax, key=lambda p: -qmax[p])[:2]
    got = {label_port(l.get_label()): float(np.max(l.get_ydata())) for l in ax.get_lines()}
    check(sorted(got) == sorted(top) and all(abs(got[p] - qmax[p] / 1e3) < 1e-9 for p in top),
          "queue_depth --top 2: the two largest queues, each line peaking at its queue",
          f"{got} vs {[(p, qmax[p]) for p in top]}")
    plt.close(fig)

    # pfc_pause: the ports that paused, paused_ps / interval per cell.
    fig, ax = sp.pause_figure(meta, tables, name, sp.plot_options(v2))
    ids = [label_port(t.get_text()) for t in ax.get_yticklabels()]
    paused = sorted({int(p) for p in rows["port"][rows["paused_ps"] > 0]})
    drawn = np.ma.filled(ax.images[0].get_array(), np.nan)
    want = np.zeros((len(ids), bins))
    for r in rows:
        if int(r["port"]) in ids:
            want[ids.index(int(r["port"])), r["bin"]] += r["paused_ps"] / INTERVAL_PS
    check(sorted(ids) == paused and np.allclose(drawn, want),
          "pfc_pause: rows are the paused ports, cells the paused fraction", f"{ids} {paused}")
    check(abs(ax.images[0].get_clim()[1] - np.percentile(want[want > 0], 99)) < 1e-9,
          "pfc_pause: the colour scale follows the data")
    plt.close(fig)

    # The op timeline: compute on its own lane; stage 0's compute lane is compute-coloured
    # although 2,000 thin collectives interleave with it.
    fig, ax = sp.timeline_figure(meta, tables, name)
    lanes = {}
    for c in ax.collections:
        kind = c.get_label().split(":")[0]
        for path in c.get_paths():
            lanes.setdefault(kind, set()).add((round(path.vertices[:, 1].min(), 6),
                                               round(path.vertices[:, 1].max(), 6)))
    comp = {iv for k in ("forward", "backward") for iv in lanes.get(k, ())}
    comm = {iv for k in ("comm", "wait") for iv in lanes.get(k, ())}
    check(comp and comm and all(a[1] <= b[0] or b[1] <= a[0] for a in comp for b in comm),
          "timeline: compute and comm/wait bars on lanes that do not overlap",
          f"{sorted(comp)[:2]} {sorted(comm)[:2]}")
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[:, :, :3].astype(float) / 255
    h = img.shape[0]
    y0, hh = sp.COMPUTE_LANE
    t_end = 2000 * 4e-6
    (x0, ya), (x1, yb) = ax.transData.transform([(0, y0 + 0.1 * hh), (t_end, y0 + 0.9 * hh)])
    band = img[int(h - max(ya, yb)) + 1:int(h - min(ya, yb)) - 1, int(x0) + 1:int(x1) - 1]
    palette = np.array([mcolors.to_rgb(sp.OP_COLORS[k]) for k in (0, 1, 3)] + [(1, 1, 1)])
    near = np.argmin(((band.reshape(-1, 3)[:, None, :] - palette[None]) ** 2).sum(axis=2), axis=1)
    px = np.bincount(near, minlength=4)
    check(px[2] == 0 and (px[0] + px[1]) > 0.6 * px.sum(),
          "timeline: the compute lane's pixels are compute, none red",
          f"pixels forward/backward/comm/white {px.tolist()}")
    plt.close(fig)
    # /ops with two GPUs per stage (whole-step files may hold several): one row per stage,
    # its lowest GPU's ops; GPU 1's longer compute must not add to stage 0's bars.
    ops = tables["ops"]
    extra = ops[ops["stage"] == 0].copy()
    extra["gpu"] += 1
    extra["end_s"] += 1e-6
    fig, ax = sp.timeline_figure(meta, dict(tables, ops=np.concatenate([ops, extra])), name)
    drawn = sum(float(p.vertices[:, 0].max() - p.vertices[:, 0].min()) for c in ax.collections
                if c.get_label() in ("forward:0", "backward:0") for p in c.get_paths())
    check(abs(drawn - float(meta["compute_s"])) < 1e-9 and "lowest GPU" in ax.get_ylabel(),
          "timeline with two GPUs per stage: the lowest GPU's compute only, said on the axis",
          f"drawn {drawn}, compute_s {meta['compute_s']}, {ax.get_ylabel()!r}")
    plt.close(fig)

    # report: the /flows row count and the busiest links by name.
    rc, out, err = run("report", v2)
    per = {p: rows["bytes"][rows["port"] == p].sum() * 8 / (RATE_GBPS * 1e9 * bins * 1e-6)
           for p in busy}
    first = max(per, key=per.get)
    peer = PORTS[first][3]
    want_name = (f"{NODES[PORTS[first][1]][0]}/p{PORTS[first][2]} -> "
                 f"{NODES[PORTS[peer][1]][0]}/p{PORTS[peer][2]}: mean {100 * per[first]:.1f} %")
    line = [l for l in out.splitlines() if l.startswith("busiest sampled link 1")]
    check(rc == 0 and "flows (rows)" in out and
          any(l.split() == ["flows", "(rows)", f"{len(flow_rows())}", "(standing", "for",
                            f"{sum(r[1] for r in flow_rows())}", "flows)"]
              for l in out.splitlines()),
          "report: the /flows row count and the flows they stand for", out[-600:])
    check(len(line) == 1 and want_name in line[0], "report: the busiest link by name, mean, max",
          f"{line} want {want_name}")

    def sampled_flows(f, g):
        f["flows"].attrs["rows_total"] = np.uint64(170)
        f["flows"].attrs["sample"] = np.uint32(10)
    sampled = os.path.join(tmp, "sampled.h5")
    write_step(sampled, samples_mutation=sampled_flows)
    rc, out, err = run("report", sampled)
    check(rc == 0 and "17 (standing for 49 flows) of 170 (output.flows: one collective in 10)"
          in out, "report: sampled /flows say of how many rows", out[-400:] + err)

    # Schema version 1: the old plots and the report as before, the new plots refuse it.
    v1 = os.path.join(tmp, "v1.h5")
    write_step(v1, schema=1)
    rc, out, err = run("plot", v1, "-o", os.path.join(tmp, "v1"))
    check(rc == 0 and len(out.split()) == 4 and all(png_ok(p) for p in out.split()) and
          "skipped flow_gantt" in err, "schema 1: the four old plots, a note on the rest",
          f"exit {rc}: {out} {err}")
    rc, out, err = run("report", v1)
    check(rc == 0 and "flows (rows)" in out and "busiest sampled link" not in out,
          "schema 1: report without /samples", err)
    for kind in ("flow_gantt", "fct_cdf", "link_util", "queue_depth", "pfc_pause"):
        expect_error(f"{kind} needs schema version 2", "plot", v1, kind, "-o", tmp)

    # Schema version 2 without /samples: the flow plots, not the time series.
    nos = os.path.join(tmp, "nosamples.h5")
    write_step(nos, samples=False)
    rc, out, err = run("plot", nos, "-o", os.path.join(tmp, "nos"))
    check(rc == 0 and len(out.split()) == 6 and "no /samples group" in err,
          "schema 2 without /samples: six plots and a note", f"exit {rc}: {out} {err}")
    for kind in ("link_util", "queue_depth", "pfc_pause"):
        expect_error(f"no /samples group: {kind} needs the time series", "plot", nos, kind,
                     "-o", tmp)

    # Broken files and arguments: one message, exit 2.
    bad = os.path.join(tmp, "nointerval.h5")
    write_step(bad, samples_mutation=lambda f, g: g.attrs.__delitem__("interval_ps"))
    expect_error("/samples lacks attribute interval_ps", "plot", bad, "-o", tmp)
    bad = os.path.join(tmp, "zerointerval.h5")
    write_step(bad, samples_mutation=lambda f, g: g.attrs.__setitem__("interval_ps", np.int64(0)))
    expect_error("interval_ps is not a positive number", "report", bad)

    def stray_port(f, g):
        d = g["ports"]
        d.resize((d.shape[0] + 1,))
        d[-1] = (0, 999, 1, 0, 0, 0, 0, 0)
    bad = os.path.join(tmp, "strayport.h5")
    write_step(bad, samples_mutation=stray_port)
    expect_error("/samples/ports names port 999, which /ports lacks", "plot", bad, "link_util",
                 "-o", tmp)

    def no_ports(f, g):
        del f["ports"]
    bad = os.path.join(tmp, "noports.h5")
    write_step(bad, samples_mutation=no_ports)
    expect_error("no /ports table: link_util needs", "plot", bad, "link_util", "-o", tmp)

    def no_column(f, g):
        d = g["ports"][()]
        del g["ports"]
        g["ports"] = d[["bin", "port", "bytes"]]
    bad = os.path.join(tmp, "nocolumn.h5")
    write_step(bad, samples_mutation=no_column)
    expect_error("/samples/ports lacks column(s) queue_max_bytes", "report", bad)
    expect_error("--tier spline: unknown tier (allowed: server, leaf, spine, core)", "plot", v2,
                 "--tier", "spline", "-o", tmp)
    expect_error("plot kind 'gant' unknown", "plot", v2, "gant", "-o", tmp)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
