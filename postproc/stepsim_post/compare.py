"""`stepsim-post compare`: steps (or a sweep's CSV rows) side by side with ratios."""

import os
import sys

from .files import regular_file
from .report import PARTIAL, column_name, print_table, summary_rows
from .schema import UserError, load


def _number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v else None  # NaN: not a number to divide


def _csv_rows(path):
    """The variants of a sweep's (or plan's) CSV: [(name, [(label, text, number)])]."""
    import csv
    regular_file(path)
    try:
        with open(path, newline="") as f:
            table = list(csv.DictReader(f))
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})")
    except csv.Error as e:
        raise UserError(f"{path}: not a CSV table ({e})")
    if not table:
        raise UserError(f"{path}: no rows (a sweep's CSV has a row per variant)")
    out = []
    for k, row in enumerate(table, 1):
        axes = [f"{c[4:].split('.')[-1]}={v}" for c, v in row.items() if c.startswith("set.")]
        name = " ".join(axes) or row.get("layout") or os.path.basename(row.get("h5") or "") \
            or f"{os.path.basename(path)}:{k}"
        out.append((name, [(c, v, _number(v) if not c.startswith("set.") else None)
                           for c, v in row.items() if c is not None]))
    return out


def compare_variants(files):
    """[(name, rows)] of every variant in `files`: a step file is one, a CSV one per row."""
    kinds = {f.endswith(".csv") for f in files}
    if len(kinds) > 1:
        raise UserError("compare: give step files (.h5) or sweep tables (.csv), not both "
                        "(their rows differ)")
    variants = []
    for f in files:
        if f.endswith(".csv"):
            variants += _csv_rows(f)
        else:
            meta, tables = load(f)
            variants.append((column_name(f, meta), summary_rows(f, meta, tables)))
    if len(variants) < 2:
        raise UserError("compare: needs at least two variants (step files, or a CSV of "
                        "two or more rows)")
    return variants


def cmd_compare(args):
    variants = compare_variants(args.files)
    by = [{label: (text, v) for label, text, v in rows} for _, rows in variants]
    keys = list(dict.fromkeys(label for _, rows in variants for label, _, _ in rows))
    first = variants[0][0]
    header = [""] + [variants[0][0]]
    for name, _ in variants[1:]:
        header += [name, f"/ {first}" if args.csv else "ratio"]
    rows = []
    for k in keys:
        ta, va = by[0].get(k, ("-", None))
        row = [k, ta]
        for r in by[1:]:
            t, v = r.get(k, ("-", None))
            row += [t, f"{v / va:.4f}" if va is not None and v is not None and va != 0 else ""]
        rows.append(row)
    if args.csv:
        import csv
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    else:
        print_table(header, rows, args.markdown)
        print(f"(ratio: each variant over the first, {first})")
        if any(name.endswith(f"({PARTIAL})") for name, _ in variants):
            print(f"({PARTIAL}: a step that stopped early; its MFU and tokens/s are n/a and its "
                  f"step time has no ratio)")
    return 0
