#!/usr/bin/env bash
# A one-node Slurm on this machine, for trying jobs/ and for the CLI tests: Debian 12's munge,
# slurmctld and slurmd (scripts/setup.sh installs them) started directly, without systemd, as
# root. Everything it creates (munge key and socket, slurm.conf, state, spool, logs, pid files)
# lives under one private directory, on its own ports, so a system Slurm is left alone.
#   scripts/slurm-local.sh start    bring it up (prints the `export SLURM_CONF=...` clients need)
#   scripts/slurm-local.sh status   is it up? (exit 0 yes, 1 no)
#   scripts/slurm-local.sh stop     cancel its jobs, stop the daemons it started (pid files)
#   eval "$(scripts/slurm-local.sh env)"   sets SLURM_CONF for sbatch, srun, squeue, scancel
# Environment: STEPSIM_SLURM_DIR (default /var/tmp/stepsim-slurm), STEPSIM_SLURM_PORT
# (slurmctld's port, slurmd takes the next one; default 16817).
# Exit codes: 0 done; 1 it cannot start here (the reason is on stderr: not root, packages
# missing, a daemon failed; its log is named); 2 bad usage.
set -Eeuo pipefail

dir=${STEPSIM_SLURM_DIR:-/var/tmp/stepsim-slurm}
port=${STEPSIM_SLURM_PORT:-16817}
usage() {
  echo "slurm-local: $*" >&2
  echo "usage: scripts/slurm-local.sh start|stop|status|env" >&2
  exit 2
}
[[ $# -le 1 ]] || usage "one command, not '$*'"
[[ $port =~ ^[0-9]{1,5}$ && $port -ge 1024 && $port -le 65534 ]] ||
  usage "STEPSIM_SLURM_PORT '$port' is not a port 1024..65534 (slurmd takes the next one)"
[[ $dir == /* ]] || usage "STEPSIM_SLURM_DIR '$dir' is not an absolute path"
# A command that fails under set -e says so (never an exit 1 without a word).
trap 'echo "slurm-local: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
conf=$dir/slurm.conf
sock=$dir/munge/munge.socket
say() { echo "slurm-local: $*" >&2; }
fail() {
  say "$*"
  exit 1
}
# give_up MESSAGE: a daemon did not come up; stop those that did, then fail.
give_up() {
  say "$*"
  stop_daemons
  exit 1
}

# pid_of NAME: the pid in NAME's pid file if that process is alive and is NAME, else nothing.
pid_of() {
  local pid
  pid=$(cat "$dir/$1.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$1" ]] && echo "$pid"
  return 0
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s; fails after SECONDS.
wait_for() {
  local tries=$(($1 * 5))
  shift
  for ((i = 0; i < tries; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

node_ready() {
  [[ $(SLURM_CONF=$conf sinfo -h -N -o %T 2>/dev/null) =~ ^(idle|mixed|allocated) ]]
}

write_conf() {
  local node mpi=none
  # This host as slurmd sees it: name, CPUs, sockets, cores, threads, memory.
  node=$(slurmd -C | head -n 1)
  [[ $node == NodeName=* ]] || fail "slurmd -C did not describe this host: $node"
  # Debian's slurm-wlm-basic-plugins ships mpi/pmix, which Debian's Open MPI needs under srun.
  if ls /usr/lib/*/slurm-wlm/mpi_pmix.so >/dev/null 2>&1; then mpi=pmix; fi
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: a one-node Slurm on this host, state under $dir.
ClusterName=stepsim-local
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
MpiDefault=$mpi
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
# Job steps' temporary files, the PMIx plugin's directories among them (spmix_appdir_UID_JOB.STEP:
# a fresh state restarts job ids, so they must not outlive this directory).
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Finished jobs in a text file, read by sacct -c (no slurmdbd here).
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MailProg=/bin/true
# Finished jobs stay visible to scontrol (state, exit code) for 10 minutes.
MinJobAge=600
KillWait=30
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [[ $(id -u) -eq 0 ]] || fail "needs root (slurmd runs jobs as their users); run it as root"
  local prog
  for prog in munged slurmctld slurmd sinfo sbatch; do
    command -v "$prog" >/dev/null ||
      fail "$prog not found: run scripts/setup.sh (installs munge slurmctld slurmd slurm-client)"
  done
  if status >/dev/null 2>&1; then
    say "already running (state in $dir)"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  stop_daemons  # leftovers of a half-started instance
  rm -rf "$dir/tmp"
  mkdir -p "$dir"/{munge,ctld,slurmd,log,tmp}
  chmod 0700 "$dir/ctld" "$dir/slurmd"
  chmod 1777 "$dir/tmp"
  chmod 0755 "$dir" "$dir/munge"  # job users reach the munge socket
  if [[ ! -s $dir/munge/munge.key ]]; then
    (umask 077 && dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none)
  fi
  write_conf

  munged --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" ||
    give_up "munged did not start; see $dir/log/munged.log"
  wait_for 10 bash -c "munge -n -S '$sock' | unmunge -S '$sock'" ||
    give_up "munge does not answer on $sock; see $dir/log/munged.log"

  slurmctld -f "$conf" -i || give_up "slurmctld did not start; see $dir/log/slurmctld.log"
  wait_for 20 env SLURM_CONF="$conf" scontrol ping ||
    give_up "slurmctld does not answer on port $port; see $dir/log/slurmctld.log"
  slurmd -f "$conf" -N "$(hostname -s)" ||
    give_up "slurmd did not start; see $dir/log/slurmd.log"
  wait_for 30 node_ready || give_up "the node did not come up; see $dir/log/slurmd.log"
  say "up: node $(hostname -s), $(SLURM_CONF=$conf sinfo -h -o %c) CPUs, MpiDefault=$(sed -n 's/^MpiDefault=//p' "$conf"), state in $dir"
  echo "export SLURM_CONF=$conf"
}

status() {
  local name pid up=0
  for name in munged slurmctld slurmd; do
    pid=$(pid_of "$name")
    if [[ -n $pid ]]; then echo "$name running (pid $pid)"; else echo "$name not running"; up=1; fi
  done
  if [[ $up -eq 0 ]]; then
    SLURM_CONF=$conf sinfo -N -o '%N %T %c %m' || up=1
  fi
  return $up
}

# The slurmstepd processes of this Slurm (they log into its slurmd.log) and everything they
# started (job scripts, tasks): stop's last resort for what scancel did not end.
our_steps() {
  local p stepds=() all=() ppid
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
    [[ -n $(find "$p/fd" -maxdepth 1 -lname "$dir/log/slurmd.log" 2>/dev/null) ]] &&
      stepds+=("${p#/proc/}")
  done
  [[ ${#stepds[@]} -gt 0 ]] || return 0
  all=("${stepds[@]}")
  # Descendants: any process whose parent is already in the list (repeat until stable).
  local grew=1
  while [[ $grew -eq 1 ]]; do
    grew=0
    for p in /proc/[0-9]*; do
      ppid=$(awk '{print $4}' "$p/stat" 2>/dev/null) || continue
      [[ " ${all[*]} " == *" $ppid "* && " ${all[*]} " != *" ${p#/proc/} "* ]] || continue
      all+=("${p#/proc/}")
      grew=1
    done
  done
  echo "${all[@]}"
}

# kill_wait PID...: SIGTERM, then SIGKILL after 10 s.
kill_wait() {
  [[ $# -gt 0 ]] || return 0
  kill "$@" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    local alive=0 p
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && return 0
    sleep 0.2
  done
  kill -KILL "$@" 2>/dev/null || true
}

stop_daemons() {
  local name pid
  for name in slurmd slurmctld munged; do
    pid=$(pid_of "$name")
    [[ -n $pid ]] && kill_wait "$pid"
    rm -f "$dir/$name.pid"
  done
  return 0
}

stop() {
  local jobs steps
  if [[ -n $(pid_of slurmctld) ]]; then
    jobs=$(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null || true)
    if [[ -n $jobs ]]; then
      say "cancelling jobs: ${jobs//$'\n'/ }"
      # shellcheck disable=SC2086
      SLURM_CONF=$conf scancel $jobs 2>/dev/null || true
      wait_for 40 bash -c "[[ -z \$(SLURM_CONF='$conf' squeue -h -o %A) ]]" || true
    fi
  fi
  # shellcheck disable=SC2046
  kill_wait $(our_steps)
  stop_daemons
  steps=$(our_steps)
  [[ -z $steps ]] || fail "job processes still running: $steps"
  say "stopped (state kept in $dir)"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status || exit 1 ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) usage "unknown command '${1:-}'" ;;
esac
