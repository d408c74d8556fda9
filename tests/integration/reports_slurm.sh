#!/usr/bin/env bash
# scripts/launch/slurm.sbatch end to end under a real one-node Slurm: munged, slurmctld and slurmd
# from Debian (slurmctld, slurmd, slurm-client, munge), started from a throwaway configuration in
# the test's temp dir (own ports, state, spool, logs, munge key and socket; proctrack/linuxproc,
# task/none, no accounting), then `sbatch --wait` of the recipe, which runs
# `srun --mpi=pmix --ntasks-per-node=2 --gpus-per-node=8 clusterbench run --suite ci` (two MPI
# ranks wired by PMIx).
# The node has 8 GPUs (gres.conf, over empty stand-in device files), so the recipe's #SBATCH
# --gpus-per-node=8 is granted (scontrol shows it) and its GPU check step runs (no NVIDIA GPU on
# this PCI bus: nothing to open). Checks the run directory, the report and the job's exit code;
# tears everything down.
# Fails when Slurm is missing (scripts/setup.sh --test unpacks it into .deps/slurm), and
# quotes the daemon's own log line when one cannot start. Budget: < 90 s (about 15 s here).
source "$(dirname "$0")/lib.sh"
# Debian's Slurm and munge, unpacked into the checkout by scripts/setup.sh --test (not installed:
# its binaries look for plugins and slurmstepd under /usr, so they are pointed here).
SLURM_ROOT=$CB_SOURCE_DIR/.deps/slurm
SLURM_LIB=$SLURM_ROOT/usr/lib/$(gcc -print-multiarch)
export PATH=$SLURM_ROOT/usr/bin:$SLURM_ROOT/usr/sbin:$PATH
export LD_LIBRARY_PATH=$SLURM_LIB:$SLURM_LIB/slurm-wlm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for b in munged mungekey slurmctld slurmd slurmstepd sbatch srun sinfo scontrol; do
  [ -x "$SLURM_ROOT/usr/bin/$b" ] || [ -x "$SLURM_ROOT/usr/sbin/$b" ] ||
    fail "$b not found in $SLURM_ROOT (scripts/setup.sh --test unpacks Slurm and munge there)"
done

S=$TMP/slurm
mkdir -p "$S"/{munge,state,spool,log,submit,results}
chmod 700 "$S/munge"
export SLURM_CONF=$S/slurm.conf
unset SLURM_JOB_ID SLURM_JOBID SLURM_NODELIST SLURM_NTASKS SLURM_PROCID

# Teardown: only what this test started, by the pids its daemons wrote.
teardown() {
  cd /
  scancel --quiet --user="$(id -un)" 2>/dev/null
  local f pid
  for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/munged.pid"; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap teardown EXIT

# The daemons' own words when something does not start.
fail_with_log() {
  local line
  line=$(grep -hiE 'fatal|error' "$S"/log/*.log "$S/munge/munged.log" 2>/dev/null \
    | grep -viE 'state file|Trying backup|MailProg' | head -n 1)
  fail "$1: ${line:-$(tail -n 1 "$S"/log/*.log 2>/dev/null)}"
}

mungekey -c -k "$S/munge/munge.key" -b 1024 >/dev/null 2>&1 || fail_with_log "mungekey failed"
chmod 600 "$S/munge/munge.key"
munged -f --socket="$S/munge/munge.socket" --key-file="$S/munge/munge.key" \
  --log-file="$S/munge/munged.log" --pid-file="$S/munge/munged.pid" \
  --seed-file="$S/munge/munged.seed" >/dev/null 2>&1 || fail_with_log "munged did not start"

HOST=$(hostname -s)
CPUS=$(nproc)
PORT=$((20000 + ($$ % 4000) * 2))
while ss -ltn 2>/dev/null | grep -qE ":($PORT|$((PORT + 1)))\b"; do PORT=$((PORT + 2)); done
USER_NAME=$(id -un)
cat >"$SLURM_CONF" <<EOF
ClusterName=cbtest$$
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
PluginDir=$SLURM_LIB/slurm-wlm
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
GresTypes=gpu
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS Gres=gpu:8 State=UNKNOWN
PartitionName=cb Nodes=$HOST Default=YES MaxTime=UNLIMITED State=UP
EOF
# Eight GPUs for the recipe's #SBATCH --gpus-per-node=8: Slurm drops a GPU without a device file,
# so each gets an empty stand-in file (nothing opens them: task/none, and no GPU on the PCI bus).
mkdir -p "$S/dev" && touch "$S"/dev/nvidia{0..7}
echo "NodeName=$HOST Name=gpu File=$S/dev/nvidia[0-7]" >"$S/gres.conf"
slurmctld -i >/dev/null 2>&1 || fail_with_log "slurmctld did not start"
slurmd -N "$HOST" -d "$SLURM_ROOT/usr/sbin/slurmstepd" >/dev/null 2>&1 ||
  fail_with_log "slurmd did not start"
state=""
for _ in $(seq 100); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail_with_log "node $HOST is '${state:-unreachable}', not idle, after 20 s"
srun --mpi=list 2>&1 | grep -qw pmix || fail_with_log "srun offers no mpi/pmix"
ok "one-node Slurm up after ${SECONDS} s: $HOST idle, $CPUS CPUs, ports $PORT-$((PORT + 1)), mpi/pmix offered"

# The recipe as an operator submits it, with the ci suite cut to two cheap benchmarks: STREAM
# (node level, on the node's leader) and an MPI all_reduce over the two ranks.
cd "$S/submit" || fail "cd"
ARGS="--only compute.memory_bandwidth --only collectives.all_reduce"
ARGS+=" --set compute.memory_bandwidth.kernels=triad --set compute.memory_bandwidth.array_bytes=8M"
ARGS+=" --set collectives.all_reduce.backends=mpi --set collectives.all_reduce.maxbytes=4K"
ARGS+=" --prometheus $S/results/cb.prom"
# Two busy-polling ranks on a shared 2-core machine crawl: yield as mpirun --oversubscribe does.
t0=$SECONDS
# Its directives ask for 8 GPUs and 8 tasks per node; the command line gives 2 tasks (2 cores).
timeout 80 env OMPI_MCA_mpi_yield_when_idle=1 CB_BIN="$CB_BIN" SUITE=ci CB_RESULTS="$S/results" \
  CB_ARGS="$ARGS" sbatch --wait --time=5 --ntasks-per-node=2 --output="$S/job.out" \
  "$CB_SOURCE_DIR/scripts/launch/slurm.sbatch" >"$TMP/out" 2>&1
job_rc=$?
job_s=$((SECONDS - t0))
[ "$job_rc" -eq 124 ] && { cat "$S/job.out" "$S"/log/*.log >&2; fail "the job did not finish in 80 s"; }
grep -q "Submitted batch job" "$TMP/out" || { cat "$TMP/out" >&2; fail "sbatch did not submit"; }
[ -s "$S/job.out" ] || fail "no job output"
grep -q "clusterbench: 1 node(s) x 2 task(s), 8 GPU(s) per node asked of Slurm" "$S/job.out" ||
  { cat "$S/job.out" >&2; fail "tasks line"; }
grep -q -- "srun --mpi=pmix --nodes=1 --ntasks-per-node=2 --ntasks=2 --gpus-per-node=8 --cpu-bind=none" \
  "$S/job.out" || { cat "$S/job.out" >&2; fail "srun line"; }
grep -q "gpu check: 2 task(s) on nodes with no NVIDIA GPU on the PCI bus" "$S/job.out" ||
  { cat "$S/job.out" >&2; fail "GPU check line"; }
JOB=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$TMP/out")
scontrol show job "$JOB" >"$TMP/job" 2>&1 || { cat "$TMP/job" >&2; fail "scontrol show job $JOB"; }
grep -Eq "TresPerNode=(gres/|gres:)?gpu:8" "$TMP/job" && grep -q "OverSubscribe=NO" "$TMP/job" ||
  { cat "$TMP/job" >&2; fail "job $JOB: not the recipe's GPUs per node or not exclusive"; }
RUN=$(readlink -f "$S/results/latest")
[ -d "$RUN" ] || { cat "$S/job.out" >&2; fail "no results/latest"; }
py '
run_dir, job_rc, host = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = open(sys.argv[4]).read()
run = json.load(open(run_dir + "/run.json"))
recs = [json.loads(l) for l in open(run_dir + "/records.jsonl")]
# Two ranks in one MPI world: PMIx under srun wired them (without PMI each would be a world of 1).
assert run["world_size"] == 2 and run["hosts"] == [host], (run["world_size"], run["hosts"])
assert run["suite"] == "ci" and not run["aborted"] and run["finished_at"], run
assert run["exit_code"] == job_rc, (run["exit_code"], job_rc)
assert "exit %d (" % job_rc in out, out[-400:]
stream = [r for r in recs if r["benchmark"] == "compute.memory_bandwidth"]
assert len(stream) == 1 and stream[0]["status"] == "ok" and stream[0]["scope"]["host"] == host, stream
bw = next(m["value"] for m in stream[0]["metrics"] if m["name"] == "bandwidth")
assert 0.1 < bw < 2000, bw
ar = [r for r in recs if r["benchmark"] == "collectives.all_reduce" and r["status"] == "ok"]
assert ar and all(r["scope"]["kind"] == "cluster" for r in ar), recs
for r in ar:
    m = {x["name"]: x["value"] for x in r["metrics"]}
    # nccl-tests: busbw = algbw * 2(n-1)/n, n = 2 ranks.
    assert abs(m["busbw"] - m["algbw"]) <= 1e-9 * m["algbw"], m
rep = json.load(open(run_dir + "/report.json"))
assert rep["exit_code"] == job_rc and rep["hosts"] == [host], (rep["exit_code"], rep["hosts"])
md = open(run_dir + "/report.md").read()
assert "(exit %d:" % job_rc in md, md[:300]
prom = open(os.path.dirname(run_dir) + "/cb.prom").read()
assert "clusterbench_run_exit_code %d\n" % job_rc in prom, prom
assert "clusterbench_host_memory_bandwidth_bytes_per_second{host=\"%s\"" % host in prom, prom
' "$RUN" "$job_rc" "$HOST" "$S/job.out"
ok "sbatch --wait slurm.sbatch: the job holds gpu:8 per node (TresPerNode) and the whole node; srun --mpi=pmix, world of 2, STREAM + MPI all_reduce records, report and textfile; job exit $job_rc = run.json exit code; job ${job_s} s"
echo "PASS: $PASSES checks"
