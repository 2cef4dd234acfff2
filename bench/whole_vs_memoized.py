"""Prints the whole-against-memoized tables (docs/fidelity.md, issue 14) from a directory of
`stepsim run --json` files NAME.memo.json and NAME.whole.json, with NAME.MODE.time (wall s,
peak KB and, if present, user CPU s from /usr/bin/time -f "%e %M %U") and NAME.MODE.timeout
(the limit in seconds, for a run that did not finish). Used by bench/whole_vs_memoized.sh.
Usage: whole_vs_memoized.py DIR [NAME ...] (default: every NAME in DIR, smallest first).

"dp (rest)" is the step time less compute, optimizer, bubble and the other groups' exposed
time: the data-parallel time the step's breakdown leaves. In memoized mode it equals the
reported exposed dp; in whole mode the reported figure also counts the ZeRO parameter
gather's time hidden behind the next forward pass (see docs/fidelity.md)."""
import json
import pathlib
import sys

GROUPS = ("tp", "cp", "ep", "pp", "dp")
MODES = ("memo", "whole")


def load(d, name, mode):
    j, t, to = (d / f"{name}.{mode}.{x}" for x in ("json", "time", "timeout"))
    run = {"json": json.loads(j.read_text()) if j.exists() else None}
    if run["json"] is not None and not run["json"].get("complete", True):
        run["json"] = None  # stopped: its numbers cover part of the step
    if to.exists():
        run["timeout"] = float(to.read_text())
    elif t.exists():
        f = t.read_text().split()
        if len(f) >= 3 and f[-3].replace(".", "").isdigit():
            run["wall"], run["rss"], run["cpu"] = float(f[-3]), int(f[-2]) / 1024, float(f[-1])
        elif len(f) >= 2:
            run["wall"], run["rss"] = float(f[-2]), int(f[-1]) / 1024
    return run


def dp_rest(j):
    """The step less everything but the data-parallel exposure (ms)."""
    other = j["compute_s"] + j["optimizer_s"] + j["bubble_s"]
    other += sum(j["exposed_s"][g] for g in GROUPS if g != "dp")
    return 1e3 * (j["step_s"] - other)


def stopped(run):
    t = run["timeout"]
    return f"> {t / 60:.0f} min" if t >= 60 else f"> {t:g} s"


def cell(run, fmt):
    """fmt(json), or '> N min' for a run stopped at its timeout ('-' if absent)."""
    if run["json"] is None:
        return stopped(run) if "timeout" in run else "-"
    return fmt(run["json"])


def wall(run):
    if "timeout" in run:
        return stopped(run)
    if "wall" not in run:
        return "-"
    return f"{run['wall']:.1f}" + (f" ({run['cpu']:.1f})" if "cpu" in run else "")


def main(folder, names):
    d = pathlib.Path(folder)
    if not names:
        found = {p.name.split(".")[0] for p in d.glob("*.memo.json")}
        names = sorted(found, key=lambda n: json.loads((d / f"{n}.memo.json").read_text())["gpus"])
    runs = {n: {m: load(d, n, m) for m in MODES} for n in names}
    print("| scenario | GPUs | step memoized (ms) | step whole (ms) | whole / memoized "
          "| MFU memoized | MFU whole | exposed dp memoized (ms) | exposed dp whole (ms) "
          "| dp (rest) whole (ms) | events memoized | events whole | wall (CPU) memoized (s) "
          "| wall (CPU) whole (s) | RSS memoized (MB) | RSS whole (MB) |")
    print("|" + "---|" * 16)
    for n, r in runs.items():
        m, w = r["memo"], r["whole"]
        ratio = (f"{w['json']['step_s'] / m['json']['step_s']:.4f}"
                 if m["json"] and w["json"] else cell(w, lambda j: "-"))
        rss = lambda x: f"{x['rss']:.0f}" if "rss" in x else "-"
        gpus = (m["json"] or w["json"] or {}).get("gpus", "-")
        print("| " + " | ".join([
            n, str(gpus),
            cell(m, lambda j: f"{1e3 * j['step_s']:.3f}"),
            cell(w, lambda j: f"{1e3 * j['step_s']:.3f}"
                 + (" (rails folded)" if j.get("folded_rails", 1) > 1 else "")), ratio,
            cell(m, lambda j: f"{100 * j['mfu']:.2f}%"),
            cell(w, lambda j: f"{100 * j['mfu']:.2f}%"),
            cell(m, lambda j: f"{1e3 * j['exposed_s']['dp']:.3f}"),
            cell(w, lambda j: f"{1e3 * j['exposed_s']['dp']:.3f}"),
            cell(w, lambda j: f"{dp_rest(j):.3f}"),
            cell(m, lambda j: f"{j['events']:,}"), cell(w, lambda j: f"{j['events']:,}"),
            wall(m), wall(w), rss(m), rss(w)]) + " |")
    print()
    print("| scenario | mode | " + " | ".join(f"exposed {g} (ms)" for g in GROUPS) + " | "
          + " | ".join(f"busbw {g} (GB/s)" for g in GROUPS)
          + " | bubble (ms) | PFC pause (ms) | collective max (ms) |")
    print("|" + "---|" * (5 + 2 * len(GROUPS)))
    for n, r in runs.items():
        for mode in MODES:
            j = r[mode]["json"]
            if j is None:
                print(f"| {n} | {mode} | "
                      + " | ".join([cell(r[mode], None)] * (3 + 2 * len(GROUPS))) + " |")
                continue
            print(f"| {n} | {mode} | "
                  + " | ".join(f"{1e3 * j['exposed_s'][g]:.3f}" if j["collectives"][g] else "-"
                               for g in GROUPS) + " | "
                  + " | ".join(f"{j['busbw_gbs'][g]:.1f}" if j["collectives"][g] else "-"
                               for g in GROUPS)
                  + f" | {1e3 * j['bubble_s']:.3f} | {1e3 * j['pfc_paused_s']:.3f}"
                  + f" | {1e-3 * j['collective_time_us']['max']:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
