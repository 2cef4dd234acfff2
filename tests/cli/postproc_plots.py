"""Renders each of stepsim-post's plots of a step file and checks what they show.
Usage: postproc_plots.py POSTPROC_DIR FILE.h5 [--compute-bound]
- timeline: the compute time read back from the drawn bars of the critical stage equals /meta
  compute_s; that stage's compute lane has no communication-red pixel, and its pixels are
  mostly compute colours when the step is compute-bound (communication bars once covered the
  compute of such a step);
- every plot carries the run name (suptitle), a title, and axis labels with units or says what
  is unavailable;
- link heatmap: a row per tier, labelled with the tier and its own ports' names, colour scale
  0-100 % of each port's capacity, cells equal to the ports' busy share of the step;
- timeline: forward and backward in different colours.
Exit 0 when every check holds; otherwise prints the failures and exits 1."""

import sys

import numpy as np


def bar_widths(ax, labels):
    """Total width of the bars whose collection label is in `labels`."""
    total = 0.0
    for c in ax.collections:
        if c.get_label() not in labels:
            continue
        for path in c.get_paths():
            xs = path.vertices[:, 0]
            total += float(xs.max() - xs.min())
    return total


def row_pixels(fig, ax, stage, lane, colors):
    """Pixels of the stage's lane (offset, height), classified by the nearest of `colors`
    (RGB 0..1)."""
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[:, :, :3].astype(float) / 255
    h = img.shape[0]
    lo, hi = stage + lane[0] + 0.1 * lane[1], stage + lane[0] + 0.9 * lane[1]
    (x0, y0), (x1, y1) = ax.transData.transform([(ax.get_xlim()[0], lo),
                                                 (ax.get_xlim()[1], hi)])
    band = img[int(h - y1):int(h - y0), int(x0) + 1:int(x1) - 1].reshape(-1, 3)
    palette = np.array(colors)
    nearest = np.argmin(((band[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2), axis=1)
    return np.bincount(nearest, minlength=len(colors))


def main(argv):
    sys.path.insert(0, argv[1])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import stepsim_post as sp
    meta, tables = sp.load(argv[2])
    name = sp.run_name(argv[2], meta)
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    for plot, make in sp.PLOTS:
        fig, ax = make(meta, tables, name)
        check(fig._suptitle is not None and fig._suptitle.get_text() == name,
              f"{plot}: suptitle is not the run name")
        check(bool(ax.get_title()), f"{plot}: no title")
        texts = " ".join(t.get_text() for t in ax.texts)
        has_data = bool(ax.get_xlabel()) and bool(ax.get_ylabel())
        check(has_data or "fidelity" in texts or "no " in texts,
              f"{plot}: neither axis labels nor a word on what is unavailable")
        if has_data and plot != "link_heatmap":
            check("(" in ax.get_xlabel() and "(" in ax.get_ylabel() or plot == "timeline",
                  f"{plot}: axis labels without units: {ax.get_xlabel()!r}, {ax.get_ylabel()!r}")
        if plot == "timeline":
            check(sp.OP_COLORS[0] != sp.OP_COLORS[1], "timeline: forward and backward look alike")
            st = int(meta["critical_stage"])
            drawn = bar_widths(ax, {f"forward:{st}", f"backward:{st}"})
            want = float(meta["compute_s"])
            check(abs(drawn - want) <= 1e-6 * want + 1e-12,
                  f"timeline: compute drawn on stage {st} is {drawn} s, /meta compute_s {want} s")
            colors = [mcolors.to_rgb(sp.OP_COLORS[k]) for k in (0, 1, 3)] + [(1, 1, 1)]
            px = row_pixels(fig, ax, st, sp.COMPUTE_LANE, colors)
            check(px[2] == 0, f"timeline: {px[2]} communication-red pixels on stage {st}'s "
                              f"compute lane")
            if "--compute-bound" in argv:
                share = (px[0] + px[1]) / max(1, px.sum())
                step = float(meta["step_s"])
                check(share > 0.5 and share > want / step - 0.15,
                      f"timeline: compute is {share:.2f} of the pixels of stage {st}'s compute "
                      f"lane, {want / step:.2f} of the step")
        if plot == "link_heatmap" and len(tables["links"]):
            links = tables["links"]
            rows = [a for a in fig.axes if a.images]
            tiers = sorted(set(int(t) for t in links["tier"]))
            check(len(rows) == len(tiers), f"heatmap: {len(rows)} rows for {len(tiers)} tiers")
            for a, t in zip(rows, tiers):
                sel = links[links["tier"] == t]
                sel = sel[np.argsort(sel["port"], kind="stable")]
                want_util = 100 * sel["busy_s"] / float(meta["step_s"])
                got = a.images[0].get_array()
                check(a.images[0].get_clim() == (0, 100),
                      f"heatmap: colour scale {a.images[0].get_clim()}, not 0-100 % of capacity")
                check(np.allclose(np.asarray(got).ravel(), want_util),
                      f"heatmap: tier {t}'s cells are not its ports' busy share")
                ticks = [x.get_text() for x in a.get_xticklabels()]
                names = {f"n{int(n)}/p{int(p)}" for n, p in zip(sel["node"], sel["port"])}
                check(ticks and all(x in names for x in ticks),
                      f"heatmap: tier {t}'s ticks {ticks[:4]} are not its own ports")
                check([x.get_text() for x in a.get_yticklabels()] == [sp.TIERS[t]],
                      f"heatmap: tier {t}'s row is not labelled {sp.TIERS[t]}")
        if plot == "link_heatmap" and not len(tables["links"]):
            check("packet fidelity only" in texts, "heatmap: empty without saying why")
        matplotlib.pyplot.close(fig)
    for f in failures:
        print(f"postproc_plots: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
