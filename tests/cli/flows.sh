#!/usr/bin/env bash
# `stepsim run`'s /flows (issue 14): the same table at 1, 2 and 4 ranks and 1 and 2 threads; the
# printed row count is the file's; every row's times are ordered and inside the step's timeline;
# output.flows none and sampled keep what they say.
set -uo pipefail
stepsim=$1; mpiexec=$2; src=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
tiny=$src/workloads/tiny.yaml
py=/usr/bin/python3

# ROWS FILE: the /flows row count of an HDF5 file.
rows() { "$py" -c 'import h5py,sys; print(len(h5py.File(sys.argv[1], "r")["flows"]))' "$1"; }

# The /flows table of the point's file (-o r{R}-t{T}.h5); 4 ranks x 2 threads left out.
summary() { h5dump -d /flows "r$ranks-t$threads.h5" | tail -n +3; }
run_matrix summary -x 4x2 -- run "$tiny" --quiet --fidelity cell -o "r{R}-t{T}.h5"
n=$(rows r1-t1.h5)
check "flows line names the file's $n rows" 'grep -qE "^flows +$n rows \(all\)$" <<<"$out"'
check "some rows" '[[ $n -gt 0 ]]'

# Every row: start <= first byte <= end, from its collective's start on (the unit test FlowRows
# bounds the end by its collective's packet run); the new columns are there; schema version 2.
check "rows ordered, from their collective on" '"$py" - r1-t1.h5 <<"PY"
import h5py, sys
f = h5py.File(sys.argv[1], "r")
assert int(f["meta"].attrs["schema_version"]) == 3
fl, co = f["flows"][()], f["collectives"][()]
for c in ("src_gpu", "dst_gpu", "group", "kind", "start_ps", "first_byte_ps", "end_ps"):
    assert c in fl.dtype.names, c
assert (fl["start_ps"] <= fl["first_byte_ps"]).all() and (fl["first_byte_ps"] <= fl["end_ps"]).all()
assert (fl["start_ps"] >= co["start_s"][fl["collective"]] * 1e12 - 1).all()
assert (fl["group"] == co["group"][fl["collective"]]).all() and (fl["kind"] == co["kind"][fl["collective"]]).all()
assert int(f["flows"].attrs["sample"]) == 1 and int(f["flows"].attrs["rows_total"]) == len(fl)
PY'

total=$(rows r1-t1.h5)
out=$("$stepsim" run "$tiny" --quiet --fidelity cell --set output.flows=none -o none.h5 2>&1)
check "output.flows=none: no rows, the count said" '[[ $(rows none.h5) -eq 0 ]] && grep -qE "^flows +none \(output.flows none; $total rows\)$" <<<"$out"'
out=$("$stepsim" run "$tiny" --quiet --fidelity cell --set output.flows=sampled \
      --set output.flows_sample=2 -o sampled.h5 2>&1)
n=$(rows sampled.h5)
check "output.flows=sampled: 1 in 2 collectives, fewer rows, the count said" \
  '[[ $n -lt $total ]] && grep -qE "^flows +$n rows \(sampled 1 in 2 collectives, of $total\)$" <<<"$out"'
check "sampled rows are whole collectives of the full table" '"$py" - r1-t1.h5 sampled.h5 <<"PY"
import h5py, sys
a, b = (h5py.File(p, "r")["flows"] for p in sys.argv[1:3])
assert int(b.attrs["sample"]) == 2
kept = set(b["collective"][()].tolist())
full = a[()]
assert (full[[c in kept for c in full["collective"]]] == b[()]).all()
PY'
expect_error "output.flows: 'some' is not allowed (allowed: auto, all, sampled, none)" \
  run "$tiny" --no-output --set output.flows=some
finish
