"""`stepsim-post export FILE --csv DIR`: the step's tables as CSV files, one per table, for
readers that use pandas or a spreadsheet: DIR/STEM_collectives.csv, _flows.csv, _samples.csv
(/samples/ports, read in chunks) and _memory.csv; a table the file lacks is not written (a note
says so). Columns keep the HDF5 names; strings are decoded, fixed-length arrays (exposed_s)
become one column per element (exposed_s_0 ...)."""

import os
import sys

from .plots.common import output_dir
from .schema import GROUPS, KINDS, UserError, load

EXPORTED = ("collectives", "flows", "samples", "memory")
def _columns(dtype):
    """[(header, field, element or None)] of a structured dtype."""
    out = []
    for name in dtype.names:
        sub = dtype[name]
        if sub.shape:
            out += [(f"{name}_{i}", name, i) for i in range(int(sub.shape[0]))]
        else:
            out.append((name, name, None))
    return out


def _cell(value):
    if isinstance(value, bytes):
        return value.rstrip(b"\0").decode("utf-8", "replace")
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bytes):
        return value.rstrip(b"\0").decode("utf-8", "replace")
    if isinstance(value, float):
        return repr(value)  # every digit: the file's double, read back exactly
    return value


def _names(table, kinds):
    """Extra columns that name a code: group_name (tp, ...) and, for collectives and flows,
    kind_name (allreduce, ...)."""
    extra = []
    names = table.dtype.names or ()
    if "group" in names:
        extra.append(("group_name", "group", GROUPS))
    if "kind" in names and kinds:
        extra.append(("kind_name", "kind", KINDS))
    return extra


def write_csv(path, chunks, dtype, kinds=False):
    """Writes the rows of `chunks` (structured arrays of `dtype`) to `path`; returns the count."""
    import csv
    cols = _columns(dtype)
    extra = []
    rows = 0
    try:
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            first = True
            for chunk in chunks:
                if first:
                    extra = _names(chunk, kinds)
                    w.writerow([h for h, _, _ in cols] + [h for h, _, _ in extra])
                    first = False
                for r in chunk:
                    line = [_cell(r[f] if i is None else r[f][i]) for _, f, i in cols]
                    for _, f, table in extra:
                        code = int(r[f])
                        line.append(table[code] if 0 <= code < len(table) else str(code))
                    w.writerow(line)
                    rows += 1
            if first:
                w.writerow([h for h, _, _ in cols])
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})")
    return rows


def cmd_export(args):
    meta, tables = load(args.file)
    directory = output_dir(args.csv)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    missing = []
    for name in EXPORTED:
        path = os.path.join(directory, f"{stem}_{name}.csv")
        if name == "samples":
            samples = tables.get("samples")
            if samples is None:
                missing.append("/samples")
                continue
            import h5py
            with h5py.File(args.file, "r") as f:
                dtype = f["samples/ports"].dtype
            n = write_csv(path, samples.chunks(list(dtype.names)), dtype)
        else:
            table = tables.get(name)
            if table is None:
                missing.append(f"/{name}")
                continue
            n = write_csv(path, [table], table.dtype, kinds=name in ("collectives", "flows"))
        print(f"{path} ({n:,} rows)")
    if missing:
        print(f"stepsim-post: note: {args.file}: no {', '.join(missing)}; not exported",
              file=sys.stderr)
    if meta.get("partial"):
        print(f"stepsim-post: note: {args.file}: PARTIAL result (complete = 0): the tables hold "
              f"what was done before the step stopped", file=sys.stderr)
    return 0
