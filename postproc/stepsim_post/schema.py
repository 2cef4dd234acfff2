"""The step file's schema (docs/hdf5-schema.md): what every file has, and the reader that
checks it (/meta, the tables, the /samples time series)."""

import math

from .errors import UserError
from .files import STEP_OBJECTS, damaged, open_h5


# Schema versions this tool reads. Version 2 adds flow times and GPUs to /flows, the /nodes and
# /ports name tables and the /samples time series; the plots that need them refuse version 1.
# Version 3 adds a job column to /ops, /collectives and /flows and the /jobs table (jobs:).
SCHEMA_VERSIONS = (1, 2, 3)
GROUPS = ["tp", "cp", "ep", "pp", "dp"]
GROUP_COLORS = {0: "#7f7f7f", 1: "#2ca02c", 2: "#ff7f0e", 3: "#9467bd", 4: "#1f77b4"}
KINDS = ["allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall",
         "alltoallv", "sendrecv", "send"]
OP_KINDS = ["forward", "backward", "optimizer", "comm", "wait"]
TIERS = ["server", "leaf", "spine", "core"]


def finished(colls):
    """The /collectives rows that ran to their end: an interrupted whole step keeps a row for
    every collective of its plan (ids are row numbers), -1 for the times it did not reach."""
    return (colls["start_s"] >= 0) & (colls["end_s"] >= colls["start_s"])


# What every step file has (docs/hdf5-schema.md): /meta attributes and each table's columns.
META_REQUIRED = ["schema_version", "model", "topology", "gpu", "gpus", "fidelity", "complete",
                 "step_s", "mfu", "compute_s", "bubble_s", "optimizer_s"]
TABLES = {
    "ops": ["stage", "kind", "group", "start_s", "end_s"],
    "collectives": ["stage", "group", "kind", "gpus", "bytes", "start_s", "end_s", "busbw_gbs"],
    "flows": ["collective", "repeats", "bytes", "packets", "retransmitted", "ecn_marked"],
    "links": ["port", "node", "tier", "bytes", "ecn_marks", "drops", "busy_s", "paused_s"],
}
# Schema version 2: /flows' further columns (times in ps, -1 unknown), the name tables (read
# when present; the plots that need them say so when absent) and the time series.
FLOWS_V2 = ["src_nic", "dst_nic", "src_gpu", "dst_gpu", "group", "kind", "messages",
            "start_ps", "first_byte_ps", "end_ps"]
TABLES_V2 = {
    "nodes": ["node", "name", "tier"],
    "ports": ["port", "node", "index", "peer", "rate_gbps"],
}
SAMPLE_COLUMNS = ["bin", "port", "bytes", "queue_max_bytes", "paused_ps", "ecn_marks",
                  "pause_sent", "drops"]
NO_PEER = 0xFFFFFFFF
# Rows of /samples/ports read at a time (the time series of a large run does not fit in memory).
SAMPLE_CHUNK = 1 << 20




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
        if any(name in f for name in STEP_OBJECTS):
            raise UserError(f"{path}: incomplete: no /meta (its run stopped before it wrote "
                            f"the step's summary: a killed rank, or still writing)")
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
            raise damaged(path, f"/meta attribute '{k}'", e)
        meta[k] = _attr_text(path, k, v)
    # A partial step's MFU may be absent (or NaN): no figure of the whole step.
    if "mfu" not in meta and "complete" in meta and _is_zero(meta["complete"]):
        meta["mfu"] = math.nan
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
    if version not in SCHEMA_VERSIONS:
        raise UserError(f"{path}: schema version {version}, this tool reads "
                        f"{' and '.join(str(v) for v in SCHEMA_VERSIONS)}")
    meta["schema_version"] = version
    _check_figures(path, meta)
    return meta


def _is_zero(value):
    try:
        return float(value) == 0
    except (TypeError, ValueError):
        return False


def _check_figures(path, meta):
    """The step's summary figures hold what they can hold, or the file is damaged (a bit
    flip, a torn write): complete is 0 or 1; times are finite and not negative; a complete
    step's MFU is a fraction of the peak. meta["partial"]: complete = 0."""
    complete = float(meta["complete"])
    if complete not in (0.0, 1.0):
        raise UserError(f"{path}: damaged: /meta complete = {meta['complete']!r} (0 or 1)")
    for k in ("step_s", "compute_s", "bubble_s", "optimizer_s"):
        v = float(meta[k])
        if not math.isfinite(v) or v < 0:
            raise UserError(f"{path}: damaged: /meta {k} = {v!r} (a time in seconds)")
    meta["partial"] = complete == 0.0
    status = meta.get("status")
    if status is not None and (str(status) == "complete") != (complete == 1.0):
        raise UserError(f"{path}: damaged: /meta status = {status!r} but complete = "
                        f"{meta['complete']!r}")
    mfu = float(meta["mfu"])
    if not meta["partial"] and not (math.isfinite(mfu) and 0 <= mfu <= 1):
        raise UserError(f"{path}: damaged: /meta mfu = {mfu!r} in a complete step (a "
                        f"fraction of the peak, 0 to 1)")


def _read_table(path, f, name, columns):
    """The table /name (a structured dataset) with at least `columns`."""
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
    missing = [c for c in columns if c not in names]
    if missing:
        raise UserError(f"{path}: /{name} lacks column(s) {', '.join(missing)}")
    return data


class Samples:
    """/samples (schema version 2): the sparse per-port time series, read in chunks of rows
    when a plot or the report needs it (a large run's series does not fit in memory)."""

    def __init__(self, path, interval_ps, rows):
        self.path, self.interval_ps, self.rows = path, interval_ps, rows
        self.interval_s = interval_ps * 1e-12
        self._per_port = None

    def chunks(self, fields):
        """Structured arrays of `fields`, SAMPLE_CHUNK rows at a time."""
        import h5py
        with h5py.File(self.path, "r") as f:
            ds = f["samples/ports"]
            for a in range(0, self.rows, SAMPLE_CHUNK):
                try:
                    yield ds.fields(fields)[a:min(self.rows, a + SAMPLE_CHUNK)]
                except (OSError, TypeError, ValueError) as e:
                    raise UserError(f"{self.path}: /samples/ports cannot be read ({e})")

    def per_port(self, fabric):
        """Per port id (arrays over fabric.port_count ids): bytes, largest bytes in one bin,
        largest queue, paused ps, pause frames sent, ECN marks, drops; and the bins covered."""
        import numpy as np
        if self._per_port is not None:
            return self._per_port
        n = fabric.port_count
        acc = {k: np.zeros(n) for k in ("bytes", "peak_bytes", "queue_max", "paused_ps",
                                         "pause_sent", "ecn_marks", "drops")}
        bins = 0
        for c in self.chunks(SAMPLE_COLUMNS):
            if not len(c):
                continue
            port = c["port"].astype(np.int64)
            fabric.check_ports(port, "/samples/ports")
            bins = max(bins, int(c["bin"].max()) + 1)
            for k, col in (("bytes", "bytes"), ("paused_ps", "paused_ps"),
                           ("pause_sent", "pause_sent"), ("ecn_marks", "ecn_marks"),
                           ("drops", "drops")):
                acc[k] += np.bincount(port, weights=c[col].astype(float), minlength=n)
            np.maximum.at(acc["peak_bytes"], port, c["bytes"].astype(float))
            np.maximum.at(acc["queue_max"], port, c["queue_max_bytes"].astype(float))
        acc["bins"] = bins
        self._per_port = acc
        return acc

    def matrix(self, fabric, ports, field, reduce, factor):
        """Rows `ports` (ids) x columns of `factor` bins: `field` summed or maximised."""
        import numpy as np
        bins = self.per_port(fabric)["bins"]
        cols = max(1, -(-bins // factor))
        row_of = np.full(fabric.port_count, -1, dtype=np.int64)
        row_of[np.asarray(ports, dtype=np.int64)] = np.arange(len(ports))
        out = np.zeros(len(ports) * cols)
        for c in self.chunks(["bin", "port", field]):
            row = row_of[c["port"].astype(np.int64)]
            keep = row >= 0
            idx = row[keep] * cols + c["bin"][keep].astype(np.int64) // factor
            v = c[field][keep].astype(float)
            if reduce == "sum":
                out += np.bincount(idx, weights=v, minlength=len(out))
            else:
                np.maximum.at(out, idx, v)
        return out.reshape(len(ports), cols)


def _read_samples(path, f):
    import h5py
    import numpy as np
    g = f["samples"]
    if not isinstance(g, h5py.Group):
        raise UserError(f"{path}: /samples is a dataset, not a group (docs/hdf5-schema.md)")
    if "interval_ps" not in g.attrs:
        raise UserError(f"{path}: /samples lacks attribute interval_ps (docs/hdf5-schema.md)")
    try:
        interval = np.asarray(g.attrs["interval_ps"]).reshape(-1)
        interval_ps = int(interval[0]) if interval.size == 1 and \
            np.issubdtype(interval.dtype, np.number) else None
    except (OSError, TypeError, ValueError):
        interval_ps = None
    if not interval_ps or interval_ps <= 0:
        raise UserError(f"{path}: /samples attribute interval_ps is not a positive number of "
                        f"picoseconds")
    if "ports" not in g:
        raise UserError(f"{path}: no /samples/ports table (docs/hdf5-schema.md)")
    ds = g["ports"]
    if not isinstance(ds, h5py.Dataset):
        raise UserError(f"{path}: /samples/ports is a group, not a table")
    names = ds.dtype.names or ()
    missing = [c for c in SAMPLE_COLUMNS if c not in names]
    if missing:
        raise UserError(f"{path}: /samples/ports lacks column(s) {', '.join(missing)}")
    return Samples(path, interval_ps, int(ds.shape[0]) if ds.shape else 0)


def _flows_sampling(f):
    """/flows attributes rows_total and sample (output.flows: 1 all, K one in K collectives,
    0 none) when the writer recorded them, else None."""
    import numpy as np
    attrs = f["flows"].attrs
    if "rows_total" not in attrs or "sample" not in attrs:
        return None
    try:
        return {k: int(np.asarray(attrs[k]).reshape(-1)[0]) for k in ("rows_total", "sample")}
    except (TypeError, ValueError, IndexError):
        return None


def load(path):
    """The file's /meta attributes and tables as numpy structured arrays. Schema version 2:
    also "nodes" and "ports" (None when absent) and "samples" (a Samples or None); version 1
    has none of them. meta["partial"]: the step stopped early (complete = 0), so its MFU and
    tokens/s are not figures of the step (the report prints n/a)."""
    f = open_h5(path)
    with f:
        try:
            return _load_open(path, f)
        except UserError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            raise damaged(path, "an object", e)


def _load_open(path, f):
    meta = _read_meta(path, f)
    v2 = meta["schema_version"] >= 2
    tables = {name: _read_table(path, f, name, cols + (FLOWS_V2 if v2 and name == "flows"
                                                         else []))
              for name, cols in TABLES.items()}
    for name, cols in TABLES_V2.items():
        tables[name] = _read_table(path, f, name, cols) if v2 and name in f else None
    tables["flows_sampling"] = _flows_sampling(f) if v2 else None
    tables["samples"] = _read_samples(path, f) if v2 and "samples" in f else None
    # Schema version 3: /jobs, a scenario with several jobs (jobs:) only.
    tables["jobs"] = _read_table(path, f, "jobs", []) if "jobs" in f else None
    tables["memory"] = _read_table(path, f, "memory", []) if "memory" in f else None
    # output.flows: 1 every flow row, K the flows of 1 in K collectives, 0 none.
    meta["flows_sample"] = (tables["flows_sampling"] or {}).get("sample", 1)
    return meta, tables
