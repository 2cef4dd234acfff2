#!/usr/bin/env bash
# jobs/ on a real one-node Slurm (scripts/slurm-local.sh, private state and ports, stopped at
# the end even on failure): `sbatch jobs/step.sbatch workloads/tiny.yaml` gives mpirun's digest;
# scancel mid-step leaves an HDF5 file with /meta complete = 0; jobs/submit_sweep.sh --tiny
# completes every variant and writes the comparison; srun without PMIx fails with exit 4 (stepsim
# did not run), not a code of stepsim's; a failing variant ends with exit 2 and the
# comparison still runs (names it missing, exits 1) instead of waiting forever. Skipped (exit 77,
# one line) only where Slurm cannot start: not root, or its Debian packages not installed.
set -uo pipefail
stepsim=$1; mpiexec=$2; src=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: Slurm tests need root (slurmd runs the jobs); run ctest as root"; exit 77
fi
for prog in munged slurmctld slurmd sbatch; do
  if ! command -v "$prog" >/dev/null; then
    echo "SKIP: no $prog: scripts/setup.sh installs munge slurmctld slurmd slurm-client"; exit 77
  fi
done

work=$(mktemp -d)
# A fixed state directory: a run killed before its cleanup (a ctest timeout) is stopped by the next.
port=${STEPSIM_SLURM_TEST_PORT:-16827}
export STEPSIM_SLURM_DIR=${TMPDIR:-/tmp}/stepsim-slurm-test-$port STEPSIM_SLURM_PORT=$port
export SLURM_CONF=$STEPSIM_SLURM_DIR/slurm.conf STEPSIM=$stepsim LOGS=$work
slurm_local=$src/scripts/slurm-local.sh
cleanup() {
  "$slurm_local" stop >/dev/null 2>&1 || "$slurm_local" stop
  if [[ $failed -eq 0 ]]; then
    rm -rf "$STEPSIM_SLURM_DIR" "$work"
  else
    echo "kept: Slurm's logs in $STEPSIM_SLURM_DIR/log, the jobs' logs and results in $work"
  fi
}
"$slurm_local" stop >/dev/null 2>&1
rm -rf "$STEPSIM_SLURM_DIR"
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! "$slurm_local" start >/dev/null; then
  failed=1; echo "FAIL: scripts/slurm-local.sh start"; tail -n 20 "$STEPSIM_SLURM_DIR"/log/*.log
  exit 1
fi
pids=$(cat "$STEPSIM_SLURM_DIR"/{munged,slurmctld,slurmd}.pid)
cd "$src" || exit 1  # jobs are submitted from the source tree

# job_field ID FIELD: FIELD=value of job ID from scontrol (one line per array task).
job_field() { scontrol -o show job "$1" 2>/dev/null | grep -o "\b$2=[^ ]*" | cut -d= -f2; }
# wait_job ID SECONDS: until the job (every task of an array) has ended; fails on timeout.
wait_job() {
  local states
  for ((i = 0; i < $2 * 2; i++)); do
    states=$(job_field "$1" JobState)
    if [[ -n $states ]] && ! grep -qvE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL)$' <<<"$states"; then
      return 0
    fi
    sleep 0.5
  done
  echo "job $1 still not ended after $2 s: $(echo $states)"
  return 1
}
digest_of() { grep -E '^digest ' "$1" | tr -s ' '; }
# ended_as ID STATE CODE: the job's state and exit code ("2:0": exit 2, no signal).
ended_as() { [[ $(job_field "$1" JobState) == "$2" && $(job_field "$1" ExitCode) == "$3" ]]; }
# sweep_ids OUTPUT: "ARRAY COMPARE" from jobs/submit_sweep.sh's last line.
sweep_ids() { sed -nE 's/^sweep: array job ([0-9]+) .* comparison job ([0-9]+); logs in .*$/\1 \2/p' <<<"$1"; }

# 1. One step of workloads/tiny.yaml on 2 ranks (srun --mpi=pmix): the digest of mpirun's run.
ref=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run workloads/tiny.yaml --quiet --no-output |
  grep -E '^digest ' | tr -s ' ')
step=$(OUT=$work/tiny.h5 sbatch --parsable -o "$work/step-%j.log" jobs/step.sbatch workloads/tiny.yaml)
# 2. A long packet-level step (GPT-3 175B), cancelled once it is running.
long=$(OUT=$work/long.h5 sbatch --parsable -o "$work/long-%j.log" jobs/step.sbatch \
  workloads/gpt3-175b.yaml)
# 2b. srun without PMIx: Open MPI cannot start, and the job says so (exit 4, not stepsim's 1).
nopmix=$(SLURM_MPI_TYPE=none OUT=$work/nopmix.h5 sbatch --parsable -o "$work/nopmix-%j.log" \
  jobs/step.sbatch workloads/tiny.yaml)
# 3. The tiny sweep, and 4. a sweep whose second variant is a bad option.
sweep=$(RESULTS=$work/sweep LOGS=$work/logs jobs/submit_sweep.sh --tiny --comment=stepsim-test -n 2)
printf 'baseline\nbroken fabric.lb=nonsense\n' >"$work/bad.txt"
bad=$(SCENARIO=workloads/tiny.yaml VARIANTS=$work/bad.txt RESULTS=$work/bad jobs/submit_sweep.sh)

wait_job "$step" 120
out=$(cat "$work/step-$step.log")
check "sbatch step.sbatch tiny: COMPLETED, exit 0:0" \
  'ended_as "$step" COMPLETED 0:0'
check "sbatch step.sbatch tiny: srun --mpi=pmix on 2 ranks" \
  'grep -q "2 rank(s) x 1 thread(s) on 1 node(s), srun --mpi=pmix" <<<"$out"'
check "sbatch step.sbatch tiny: digest '$(digest_of "$work/step-$step.log")' = mpirun's '$ref'" \
  '[[ -n $ref && $(digest_of "$work/step-$step.log") == "$ref" ]]'
check "sbatch step.sbatch tiny: HDF5 complete = 1" \
  '[[ $(h5dump -a /meta/complete "$work/tiny.h5" | grep -c "(0): 1") -eq 1 ]]'

# Cancel the long step a few seconds into the simulation (its stepsim processes have run 3 s).
for ((i = 0; i < 240; i++)); do
  [[ $(job_field "$long" JobState) == RUNNING ]] && grep -q "srun --mpi" "$work/long-$long.log" 2>/dev/null && break
  sleep 0.5
done
sleep 5
scancel "$long"
wait_job "$long" 60
out=$(cat "$work/long-$long.log")
check "scancel: job CANCELLED" '[[ $(job_field "$long" JobState) == CANCELLED ]]'
check "scancel: the step says INTERRUPTED" 'grep -q "^# status: INTERRUPTED" <<<"$out"'
check "scancel: the job's last line says signal 15, file written" \
  '[[ $(tail -n 1 <<<"$out") == "step.sbatch: stopped by signal 15; $work/long.h5 says complete = 0" ]]'
check "scancel: HDF5 written with /meta complete = 0" \
  '[[ $(h5dump -a /meta/complete "$work/long.h5" | grep -c "(0): 0") -eq 1 ]]'

wait_job "$nopmix" 60
out=$(cat "$work/nopmix-$nopmix.log")
check "srun --mpi=none: job FAILED with exit 4:0" \
  'ended_as "$nopmix" FAILED 4:0'
check "srun --mpi=none: the log says stepsim did not run" \
  'grep -q "^step.sbatch: stepsim did not run (exit .* srun or MPI could not start it" <<<"$out"'

read -r array compare <<<"$(sweep_ids "$sweep")"
wait_job "$compare" 180
out=$(cat "$work/sweep/compare.md" 2>/dev/null)
check "tiny sweep: 4 array tasks COMPLETED" \
  '[[ $(job_field "$array" JobState | grep -c "^COMPLETED$") -eq 4 ]]'
check "tiny sweep: comparison COMPLETED, exit 0:0" \
  'ended_as "$compare" COMPLETED 0:0'
check "tiny sweep: compare.md has every variant, nothing missing" \
  '[[ $(grep -cE "^## (1.6t|spray|hpcc)$" <<<"$out") -eq 3 ]] && ! grep -q missing <<<"$out"'
check "tiny sweep: --comment reaches the comparison job, -n 2 only the array" \
  '[[ $(job_field "$compare" Comment) == stepsim-test && $(job_field "$compare" NumTasks) == 1 && $(job_field "${array}_0" NumTasks) == 2 ]]'
check "tiny sweep: the logs in LOGS" \
  '[[ -s $work/logs/stepsim-sweep-${array}_0.log && -s $work/logs/stepsim-compare-$compare.log ]]'
check "sacct -c (the local Slurm's job completion log): the step COMPLETED 0:0" \
  '[[ $(sacct -c -n -j "$step" -o JobID,State,ExitCode | awk "\$1 == $step {print \$2, \$3}") == "COMPLETED 0:0" ]]'
check "tiny sweep: every variant's HDF5 complete" \
  '(for n in baseline 1.6t spray hpcc; do h5dump -a /meta/complete "$work/sweep/$n.h5" | grep -q "(0): 1" || exit 1; done)'

read -r array compare <<<"$(sweep_ids "$bad")"
wait_job "$compare" 120
out=$(cat "$work/bad/compare.md" 2>/dev/null)
check "failed variant: its task FAILED with exit 2:0 (bad option)" \
  'ended_as "${array}_1" FAILED 2:0'
check "failed variant: the comparison still ran, exit 1:0" \
  'ended_as "$compare" FAILED 1:0'
check "failed variant: compare.md names it missing" 'grep -q "^missing: .*/broken.h5$" <<<"$out"'

# Nothing of this Slurm keeps running: its daemons and every process of its jobs.
"$slurm_local" stop >/dev/null
check "stop: daemons gone" 'for p in $pids; do [[ ! -e /proc/$p ]] || exit 1; done'
# A job's processes carry its SLURM_JOB_ID and this Slurm's SLURM_CONF; slurmstepd holds a file of
# the state directory open.
leftovers() {
  local p env
  for p in /proc/[0-9]*; do
    env=$(tr '\0' '\n' 2>/dev/null <"$p/environ") || continue
    if grep -qxF "SLURM_CONF=$SLURM_CONF" <<<"$env" && grep -q '^SLURM_JOB_ID=' <<<"$env"; then
      echo "${p#/proc/} $(cat "$p/comm")"
    elif ls -l "$p/fd" 2>/dev/null | grep -qF -- "-> $STEPSIM_SLURM_DIR/"; then
      echo "${p#/proc/} $(cat "$p/comm")"
    fi
  done
}
left=$(leftovers)
check "stop: no job process left: ${left:-none}" '[[ -z $left ]]'
finish
