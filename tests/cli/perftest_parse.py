"""Reads `stepsim bench perftest` output on stdin the way perftest parsers read ib_write_bw's
and ib_write_lat's: the line after the ' #bytes' header holds the numbers (bandwidth: #bytes
#iterations BW-peak BW-average MsgRate; latency: #bytes #iterations t_min t_max t_typical t_avg
t_stdev 99% 99.9%), the header's brackets give the units. Checks the options' expectations;
exit 0 when every check holds, else prints what failed and exits 1."""

import argparse
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["bw", "lat"], required=True)
    p.add_argument("--bytes", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--unit")
    a = p.parse_args()
    lines = sys.stdin.read().splitlines()
    head = [i for i, l in enumerate(lines) if l.startswith(" #bytes")]
    if len(head) != 1 or head[0] + 1 >= len(lines):
        return fail(f"{len(head)} header lines")
    h, f = lines[head[0]], lines[head[0] + 1].split()
    if not lines[head[0] - 1].startswith("-----") or not lines[head[0] + 2].startswith("-----"):
        return fail("the table is not between perftest's rules")
    want_cols = 5 if a.kind == "bw" else 9
    if len(f) != want_cols:
        return fail(f"{len(f)} fields in {lines[head[0] + 1]!r}, want {want_cols}")
    size, iters = int(f[0]), int(f[1])
    v = [float(x) for x in f[2:]]
    if a.bytes is not None and size != a.bytes:
        return fail(f"#bytes {size}, want {a.bytes}")
    if a.iters is not None and iters != a.iters:
        return fail(f"#iterations {iters}, want {a.iters}")
    if a.kind == "bw":
        unit = "Gb/sec" if "BW peak[Gb/sec]" in h else "MB/sec" if "BW peak[MB/sec]" in h else None
        if unit is None or "BW average[" + unit + "]" not in h or "MsgRate[Mpps]" not in h:
            return fail(f"bandwidth header {h!r}")
        if a.unit and unit != a.unit:
            return fail(f"unit {unit}, want {a.unit}")
        peak, avg, mpps = v
        per_s = avg * (1e9 / 8 if unit == "Gb/sec" else 1048576)
        if not (peak >= avg * 0.999 and avg > 0 and abs(per_s / size / 1e6 - mpps) < 1e-3 * mpps + 1e-6):
            return fail(f"peak {peak}, average {avg}, MsgRate {mpps} disagree")
    else:
        for name in ("t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
                     "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"):
            if name not in h:
                return fail(f"no {name} in {h!r}")
        t_min, t_max, typical, avg, stdev, p99, p999 = v
        if not (0 < t_min <= typical <= p99 <= p999 <= t_max and t_min <= avg <= t_max
                and stdev >= 0):
            return fail(f"latencies out of order: {v}")
    return 0


def fail(msg):
    print(f"perftest_parse: {msg}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
