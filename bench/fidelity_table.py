"""Prints the fidelity agreement table from `stepsim run --json` files named NAME.FIDELITY.json
(and NAME.FIDELITY.rss, peak KB from /usr/bin/time) in a directory. Used by
bench/fidelity_agreement.sh."""
import json
import pathlib
import sys

FIDELITIES = ("packet", "cell", "analytical")
GROUPS = ("tp", "cp", "ep", "pp", "dp")


def main(folder):
    d = pathlib.Path(folder)
    names = sorted({p.name.split(".")[0] for p in d.glob("*.json")})
    for name in names:
        runs = {f: json.loads((d / f"{name}.{f}.json").read_text()) for f in FIDELITIES
                if (d / f"{name}.{f}.json").exists()}
        ref = runs["packet"]
        print(f"## {name}: {ref['gpus']} GPUs, {ref['model']} on {ref['topology']}")
        print("| fidelity | step (s) | ratio | " +
              " | ".join(f"busbw {g} (GB/s) | ratio" for g in GROUPS if ref["collectives"][g]) +
              " | events | wall (s) | peak RSS (MB) |")
        cols = 3 + 2 * sum(1 for g in GROUPS if ref["collectives"][g]) + 3
        print("|" + "---|" * cols)
        for f, r in runs.items():
            rss = d / f"{name}.{f}.rss"
            mb = int(rss.read_text().split()[-1]) / 1024 if rss.exists() else float("nan")
            cells = [f, f"{r['step_s']:.4f}", f"{r['step_s'] / ref['step_s']:.3f}"]
            for g in GROUPS:
                if not ref["collectives"][g]:
                    continue
                b, b0 = r["busbw_gbs"][g], ref["busbw_gbs"][g]
                cells += [f"{b:.1f}", f"{b / b0:.3f}" if b0 else "-"]
            cells += [str(r["events"]), f"{r['wall_s']:.2f}", f"{mb:.0f}"]
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
