"""Reads `stepsim bench nccl` output on stdin the way nccl-tests' parsers read all_reduce_perf's
(skip '#' lines; a row is 13 whitespace-separated fields: size count type redop root, then time
algbw busbw #wrong out-of-place and in-place; '# Out of bounds values : N OK|FAILED' and
'# Avg bus bandwidth : X' close the table) and checks the options' expectations.
Exit 0 when every check holds; otherwise prints what failed and exits 1."""

import argparse
import re
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int)
    p.add_argument("--sizes")
    p.add_argument("--count", type=int)
    p.add_argument("--type")
    p.add_argument("--redop")
    p.add_argument("--root", type=int)
    p.add_argument("--wrong", default="0")
    a = p.parse_args()
    rows, oob, avg, header = [], None, None, None
    for line in sys.stdin.read().splitlines():
        if line.startswith("#"):
            if re.match(r"^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong"
                        r"\s+time\s+algbw\s+busbw\s+#wrong$", line):
                header = line
            m = re.match(r"^# Out of bounds values : (\d+) (OK|FAILED)$", line)
            if m:
                oob = (int(m.group(1)), m.group(2))
            m = re.match(r"^# Avg bus bandwidth    : ([0-9.eE+-]+)", line)
            if m:
                avg = float(m.group(1))
            continue
        f = line.split()
        if len(f) != 13:
            return fail(f"not a 13-field row: {line!r}")
        rows.append(f)
    if header is None:
        return fail("no nccl-tests column header")
    if oob != (0, "OK") or avg is None:
        return fail(f"closing lines: out of bounds {oob}, avg {avg}")
    if not rows or (a.rows is not None and len(rows) != a.rows):
        return fail(f"{len(rows)} rows")
    busbw = []
    for f in rows:
        if f[5:8] != f[9:12]:
            return fail(f"in-place {f[9:12]} differs from out-of-place {f[5:8]}")
        if f[8] != a.wrong or f[12] != a.wrong:
            return fail(f"#wrong {f[8]}, {f[12]} (want {a.wrong})")
        time, algbw, bus = (float(x) for x in f[5:8])
        size = int(f[0])
        if time <= 0 or abs(algbw - size / time / 1e3) > 0.01 + 0.002 * algbw:
            return fail(f"algbw {algbw} is not size / time ({size} B / {time} us)")
        busbw += [bus, bus]
    if abs(avg - sum(busbw) / len(busbw)) > 0.01 + 1e-3 * avg:
        return fail(f"Avg bus bandwidth {avg} is not the mean of the busbw columns")
    if a.sizes and [int(f[0]) for f in rows] != [int(x) for x in a.sizes.split(",")]:
        return fail(f"sizes {[f[0] for f in rows]}, want {a.sizes}")
    want = {1: a.count, 2: a.type, 3: a.redop, 4: a.root}
    for col, v in want.items():
        if v is not None and any(f[col] != str(v) for f in rows):
            return fail(f"column {col + 1}: {[f[col] for f in rows]}, want {v}")
    return 0


def fail(msg):
    print(f"nccl_tests_parse: {msg}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
