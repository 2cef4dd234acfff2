#!/usr/bin/env bash
# `cmake --install BUILD --prefix P`, P then moved elsewhere: P/bin/stepsim runs
# P/share/stepsim/workloads/tiny.yaml (its topology relative to the scenario) with the build
# tree's digest, `bench perftest` finds its default topology among the installed data files,
# `--set topology=FILE` takes FILE from the current directory when it exists there (else from the
# scenario's directory), a shipped scenario or topology is found by its name from any directory
# (and a missing one is reported with where it was looked for), and P/bin/stepsim-post reads
# the output. As root the source and build
# trees are hidden from the binary (an empty tmpfs over them in a private mount namespace).
set -uo pipefail
build=$1; src=$2
source "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

out=$(cmake --install "$build" --prefix "$work/staged" 2>&1); rc=$?
check "cmake --install" '[[ $rc -eq 0 ]]'
mv "$work/staged" "$work/prefix"  # a relocated prefix: nothing may point back to where it was
p=$work/prefix
check "installed: bin/stepsim, bin/stepsim-post, share/stepsim/{topologies,workloads,params,postproc}" \
  '[[ -x $p/bin/stepsim && -x $p/bin/stepsim-post && -f $p/share/stepsim/topologies/toy-2server.yaml && -f $p/share/stepsim/workloads/tiny.yaml && -f $p/share/stepsim/params/hpcc.yaml && -f $p/share/stepsim/postproc/stepsim_post/__main__.py && ! -e $p/share/stepsim/postproc/stepsim_post/__pycache__ ]]'
ref=$("$build/apps/stepsim" run "$src/workloads/tiny.yaml" --quiet --no-output | grep '^digest ')
ref16=$("$build/apps/stepsim" run "$src/workloads/tiny.yaml" --quiet --no-output \
  --set topology=../topologies/toy-2server-1.6t.yaml | grep '^digest ')
cp "$src/topologies/toy-2server-1.6t.yaml" "$work/my-topology.yaml"

# The checks, run with the trees hidden when we can; each prints "ok NAME" or "FAIL NAME: why".
# shellcheck disable=SC2016
checks='
cd "$work" || exit 1
fail() { echo "FAIL $1"; }
if [[ $hidden == 1 ]]; then
  [[ -e $src/workloads || -e $build/apps ]] && fail "the source tree is still visible"
fi
r=$("$p/bin/stepsim" run "$p/share/stepsim/workloads/tiny.yaml" --quiet -o tiny.h5 2>&1)
[[ $? -eq 0 && $(grep "^digest " <<<"$r") == "$ref" ]] && echo "ok installed tiny.yaml: build tree digest" || fail "installed tiny.yaml: $r"
r=$("$p/bin/stepsim" run "$p/share/stepsim/workloads/tiny.yaml" --quiet --no-output --set topology=my-topology.yaml 2>&1)
[[ $? -eq 0 && $(grep "^digest " <<<"$r") == "$ref16" ]] && echo "ok --set topology=FILE from the current directory" || fail "--set topology=my-topology.yaml: $r"
r=$("$p/bin/stepsim" run "$p/share/stepsim/workloads/tiny.yaml" --quiet --no-output --set topology=../topologies/toy-2server-1.6t.yaml 2>&1)
[[ $? -eq 0 && $(grep "^digest " <<<"$r") == "$ref16" ]] && echo "ok --set topology=PATH relative to the scenario" || fail "--set topology=../topologies/...: $r"
r=$("$p/bin/stepsim" run "$p/share/stepsim/workloads/tiny.yaml" --quiet --no-output --set topology=nowhere.yaml 2>&1)
[[ $? -eq 2 && $r == *"share/stepsim/workloads/nowhere.yaml"* ]] && echo "ok --set topology=missing: user error naming the path" || fail "--set topology=nowhere.yaml: $r"
r=$("$p/bin/stepsim" run tiny.yaml --quiet --no-output 2>&1)
[[ $? -eq 0 && $(grep "^digest " <<<"$r") == "$ref" ]] && echo "ok run tiny.yaml by name: the installed workloads/" || fail "run tiny.yaml by name: $r"
r=$("$p/bin/stepsim" check toy-2server.yaml 2>&1)
[[ $? -eq 0 && $r == *toy-2server* ]] && echo "ok check toy-2server.yaml by name: the installed topologies/" || fail "check toy-2server.yaml by name: $r"
r=$("$p/bin/stepsim" run tiny.yaml --quiet --no-output --set topology=toy-2server-1.6t.yaml 2>&1)
[[ $? -eq 0 && $(grep "^digest " <<<"$r") == "$ref16" ]] && echo "ok --set topology=NAME: the installed topologies/" || fail "--set topology=toy-2server-1.6t.yaml: $r"
r=$("$p/bin/stepsim" run nowhere.yaml --quiet --no-output 2>&1)
[[ $? -eq 2 && $r == *"nowhere.yaml"*"looked in the current directory, $p/share/stepsim and $p/share/stepsim/workloads"* ]] && echo "ok run nowhere.yaml: says where it looked" || fail "run nowhere.yaml: $r"
r=$("$p/bin/stepsim" bench perftest write_lat -s 256 -n 20 2>&1)
[[ $? -eq 0 && $r == *digest* ]] && echo "ok bench perftest: default topology from the installed data files" || fail "bench perftest: $r"
r=$("$p/bin/stepsim-post" report tiny.h5 2>&1)
[[ $? -eq 0 && $r == *tiny-gpt* ]] && echo "ok stepsim-post report from bin/" || fail "stepsim-post report: $r"
r=$(STEPSIM_PYTHON=/nonexistent/python3 "$p/bin/stepsim-post" report tiny.h5 2>&1)
[[ $? -eq 2 && $r == *"/nonexistent/python3 is not executable"* ]] && echo "ok stepsim-post runs STEPSIM_PYTHON" || fail "STEPSIM_PYTHON=/nonexistent/python3: $r"
read -r py <"$p/share/stepsim/postproc/stepsim-post.python"
[[ -x $py ]] && "$py" -c "import h5py, numpy, matplotlib" && echo "ok stepsim-post.python: the configured Python, with h5py" || fail "stepsim-post.python: $py"
'
hidden=0
# A build tree inside the source tree is hidden with it; one elsewhere gets its own tmpfs.
if [[ $(id -u) -eq 0 ]] && unshare -m true 2>/dev/null; then
  hidden=1
  results=$(work=$work p=$p src=$src build=$build ref=$ref ref16=$ref16 hidden=1 \
    unshare -m bash -c "mount -t tmpfs none '$src' || exit 1
      [[ -d '$build' ]] && mount -t tmpfs none '$build'
      $checks" 2>&1)
else
  echo "note: not root, so the source tree stays visible to the installed binary"
  results=$(work=$work p=$p src=$src build=$build ref=$ref ref16=$ref16 hidden=0 bash -c "$checks" 2>&1)
fi
echo "$results"
check "source tree hidden (root: $hidden)" '[[ $hidden == 0 ]] || ! grep -q "still visible" <<<"$results"'
check "12 checks ran" '[[ $(grep -c "^ok " <<<"$results") -eq 12 ]]'
check "no failure" '! grep -q "^FAIL" <<<"$results"'
finish
