#!/usr/bin/env bash
# The launch recipes.
#  - scripts/launch/mpijob.yaml validates against the MPI Operator's MPIJob CRD (v2beta1, strict
#    fields; launch_mpijob.py) and has what it needs to start: workers running sshd, a launcher
#    that waits for them, -np = replicas x slots, GPUs, RDMA, host network, IPC_LOCK, /dev/shm,
#    a ReadWriteMany results claim; mpijob-entry.sh's launcher waits for every host over SSH.
#  - scripts/launch/slurm.sbatch asks for the GPUs (#SBATCH), passes bash -n and, under a
#    stand-in srun, launches one task per GPU with PMIx, checks that each task opens its GPU
#    (fake /sys and /dev trees) and takes the spec table by name or mounts its file in the image.
# Budget: < 10 s.
source "$(dirname "$0")/lib.sh"
L=$CB_SOURCE_DIR/scripts/launch

bash -n "$L/slurm.sbatch" || fail "slurm.sbatch: bash -n"
ok "slurm.sbatch passes bash -n"

# The MPIJob against the operator's CRD schema (jsonschema, strict fields), and its fields.
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import yaml, jsonschema' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "no python3 with yaml and jsonschema (python3-yaml, python3-jsonschema: scripts/setup.sh --test)"
"$PY" "$CB_SOURCE_DIR/tests/integration/launch_mpijob.py" "$L/mpijob.yaml" "$L/mpijob-results.yaml" \
  "$CB_FIXTURES/k8s/mpijob-crd-v2beta1.yaml" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "mpijob.yaml"; }
cat "$TMP/out"
PASSES=$((PASSES + $(grep -c '^ok: ' "$TMP/out")))

# The pods' entry point: the launcher waits until every host of the hostfile answers over SSH
# (a stand-in ssh: w0 at once, w1 from its third try), then runs its command; a host that never
# answers ends it with exit 3, naming it; the worker role needs sshd (the image test runs it).
E=$L/mpijob-entry.sh
bash -n "$E" || fail "mpijob-entry.sh: bash -n"
mkdir -p "$TMP/sshbin"
cat >"$TMP/sshbin/ssh" <<'SH'
#!/usr/bin/env bash
for a in "$@"; do case $a in w0|w1|w2) h=$a ;; esac; done
echo "$*" >>"$SSH_LOG"
case $h in
  w0) exit 0 ;;
  w1) n=$(grep -c ' w1 ' "$SSH_LOG"); [ "$n" -ge 3 ] ;;
  *) exit 255 ;;
esac
SH
chmod +x "$TMP/sshbin/ssh"
printf 'w0 slots=8\nw1 slots=8\n' >"$TMP/hostfile"
expect_rc 0 env PATH="$TMP/sshbin:$PATH" SSH_LOG="$TMP/ssh.log" OMPI_MCA_orte_default_hostfile="$TMP/hostfile" \
  bash "$E" launcher sh -c 'echo ran: $0 $OMPI_MCA_plm_rsh_args' mpirun
expect_out "^mpijob-entry: waiting for 2 host\(s\) of $TMP/hostfile"
expect_out "^ran: mpirun$"
[ "$(grep -c ' w1 ' "$TMP/ssh.log")" = 3 ] && grep -q -- "-o BatchMode=yes" "$TMP/ssh.log" ||
  fail "ssh tries: $(cat "$TMP/ssh.log")"
printf 'w0 slots=8\nw2 slots=8\n' >"$TMP/hostfile"
expect_rc 3 env PATH="$TMP/sshbin:$PATH" SSH_LOG="$TMP/ssh.log" OMPI_MCA_orte_default_hostfile="$TMP/hostfile" \
  CB_WAIT_WORKERS_S=1 CB_SSH_PORT=2299 bash "$E" launcher true
expect_out "1 of 2 host\(s\) did not answer over SSH within 1 s: w2$"
grep -q -- "-p 2299 w2 true" "$TMP/ssh.log" || fail "CB_SSH_PORT not given to ssh: $(tail -1 "$TMP/ssh.log")"
expect_rc 2 bash "$E" launcher
expect_rc 2 env OMPI_MCA_orte_default_hostfile="$TMP/none" bash "$E" launcher true
expect_out "no hostfile $TMP/none"
ok "mpijob-entry.sh launcher: waits for every host over SSH, then runs mpirun; a silent host is exit 3 by name; CB_SSH_PORT"

# The directives: GPUs and tasks per node asked of Slurm (8 and 8), whole nodes.
for d in "--gpus-per-node=8" "--ntasks-per-node=8" "--exclusive"; do
  grep -qx -- "#SBATCH $d" "$L/slurm.sbatch" || fail "slurm.sbatch lacks #SBATCH $d"
done
ok "slurm.sbatch asks for --gpus-per-node=8, --ntasks-per-node=8, --exclusive"

# A stand-in srun: lists pmix for --mpi=list; runs `bash -c CHECK` once per task of a node (as
# srun would on each node, SLURM_LOCALID 0..T-1); else records its arguments.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/srun" <<'SH'
#!/usr/bin/env bash
if [ "$1" = "--mpi=list" ]; then printf 'MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n'; exit 0; fi
t=1 args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --ntasks-per-node=*) t=${args[i]#*=} ;;
    bash) rc=0
          for ((l = 0; l < t; l++)); do SLURM_LOCALID=$l bash -c "${args[i + 2]}" || rc=1; done
          printf '%s\n' "$@" >"$SRUN_LOG.check"; exit $rc ;;
  esac
done
printf '%s\n' "$@" >"$SRUN_LOG"
SH
chmod +x "$TMP/bin/srun"
touch "$TMP/cb" && chmod +x "$TMP/cb"
gpus=0
for d in /sys/bus/pci/devices/*; do
  [ -r "$d/vendor" ] && [ "$(cat "$d/vendor")" = "0x10de" ] && [[ "$(cat "$d/class")" == 0x030[02]* ]] && gpus=$((gpus + 1))
done
want=$((gpus > 0 ? gpus : 1))
sb() { expect_rc "$1" env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" SLURM_SUBMIT_DIR="$TMP" \
         CB_BIN="$TMP/cb" "${@:2}" bash "$L/slurm.sbatch"; }
# Without the job's variables (a plain `bash slurm.sbatch`): the GPUs on this PCI bus.
sb 0 SLURM_JOB_NUM_NODES=3
expect_out "clusterbench: 3 node\(s\) x $want task\(s\)"
py '
a = open(sys.argv[1]).read().split("\n")
want = int(sys.argv[2])
for f in ("--mpi=pmix", "--nodes=3", "--ntasks-per-node=%d" % want, "--ntasks=%d" % (3 * want),
          "--cpu-bind=none", "run", "--suite", "quick", "--results"):
    assert f in a, (f, a)
assert a[a.index("--results") + 1] == sys.argv[3] + "/results", a
' "$TMP/srun.args" "$want" "$TMP"
ok "slurm.sbatch: srun --mpi=pmix, $want task(s) per node on 3 nodes (no job variables: the PCI bus)"

# As sbatch runs it with the directives: SLURM_GPUS_PER_NODE and SLURM_NTASKS_PER_NODE.
sb 0 SLURM_JOB_NUM_NODES=2 SLURM_GPUS_PER_NODE=h100:8 SLURM_NTASKS_PER_NODE=8 CB_SPEC=h100-sxm-80g-8x
expect_out "clusterbench: 2 node\(s\) x 8 task\(s\), 8 GPU\(s\) per node asked of Slurm"
py '
a = open(sys.argv[1]).read().split("\n")
for f in ("--nodes=2", "--ntasks-per-node=8", "--ntasks=16", "--gpus-per-node=8"):
    assert f in a, (f, a)
assert a[a.index("--spec") + 1] == "h100-sxm-80g-8x", a
c = open(sys.argv[1] + ".check").read().split("\n")
assert "--gpus-per-node=8" in c and "--ntasks-per-node=8" in c, c
' "$TMP/srun.args"
ok "slurm.sbatch: the job's --gpus-per-node (h100:8) and --ntasks-per-node reach both srun steps; CB_SPEC by name"

# The GPU check on a fake node: 8 GPUs on the PCI bus; device files that open (regular files)
# or not (directories: open O_RDWR fails as a constrained device's would).
F=$TMP/node
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p "$F/sys/bus/pci/devices/0000:1$i:00.0" "$F/dev"
  echo 0x10de >"$F/sys/bus/pci/devices/0000:1$i:00.0/vendor"
  echo 0x030200 >"$F/sys/bus/pci/devices/0000:1$i:00.0/class"
  touch "$F/dev/nvidia$i"
done
touch "$F/dev/nvidiactl"
sb 0 SLURM_JOB_NUM_NODES=1 SLURM_GPUS_PER_NODE=8 SLURM_NTASKS_PER_NODE=8 CB_SYSFS_ROOT="$F" CB_DEV_ROOT="$F"
expect_out "gpu check: every task opens its GPU \(8 task\(s\)\)"
for i in 4 5 6 7; do rm "$F/dev/nvidia$i" && mkdir "$F/dev/nvidia$i"; done
sb 2 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS_PER_NODE=8 CB_SYSFS_ROOT="$F" CB_DEV_ROOT="$F"
expect_out "gpu-check: FAIL: .* task 4 opens 4 of the 8 NVIDIA GPUs on its PCI bus .* and needs 5"
expect_out "warning: 8 task\\(s\\) per node but 0 GPU\\(s\\) per node asked of Slurm, while .* has 8 on its PCI bus"
expect_out "not every task can open its GPU .*--gpus-per-node=N"
: >"$TMP/srun.args"
sb 2 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS_PER_NODE=8 CB_SYSFS_ROOT="$F" CB_DEV_ROOT="$F"
[ ! -s "$TMP/srun.args" ] || fail "the run started after a failed GPU check: $(cat "$TMP/srun.args")"
sb 0 SLURM_JOB_NUM_NODES=1 SLURM_GPUS_PER_NODE=8 SLURM_NTASKS_PER_NODE=8 CUDA_VISIBLE_DEVICES=3 CB_SYSFS_ROOT="$F" CB_DEV_ROOT="$F"
expect_out "gpu check: every task opens its GPU"
ok "slurm.sbatch: a task that cannot open its GPU stops the job before the run (exit 2, host and task named); one GPU per task (CUDA_VISIBLE_DEVICES) needs one"

sb 0 SLURM_JOB_NUM_NODES=2 CB_TASKS_PER_NODE=8 CB_SRUN_MPI=pmi2 SUITE=full
grep -qx -- "--ntasks=16" "$TMP/srun.args" && grep -qx -- "--mpi=pmi2" "$TMP/srun.args" \
  && grep -qx full "$TMP/srun.args" || fail "overrides not applied: $(cat "$TMP/srun.args")"
ok "slurm.sbatch: CB_TASKS_PER_NODE, CB_SRUN_MPI and SUITE overrides"
expect_rc 2 env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" CB_BIN="$TMP/missing" \
  bash "$L/slurm.sbatch"
expect_out "is not built"
sb 2 CB_SPEC=reports/specs/nonexistent.json
expect_out "CB_SPEC=reports/specs/nonexistent.json: no such file .*h100-sxm-80g-8x"
ok "slurm.sbatch: a missing binary or CB_SPEC file exits 2"
mkdir -p "$TMP/site"
cp "$SPECS/cpu-node.json" "$TMP/site/mine.json"
sb 0 SLURM_JOB_NUM_NODES=2 CB_BIN= CB_IMAGE=registry.example.com/clusterbench:0.1.0 \
  CB_SPEC="$TMP/site/mine.json"
py '
a = open(sys.argv[1]).read().split("\n")
t = sys.argv[2]
assert "--container-image=registry.example.com/clusterbench:0.1.0" in a, a
mounts = "--container-mounts=%s/results:%s/results,%s/site/mine.json:%s/site/mine.json:ro" % (t, t, t, t)
assert mounts in a, (mounts, a)
i = a.index("/usr/bin/clusterbench")
assert a[i + 1] == "run" and i > a.index("--container-image=registry.example.com/clusterbench:0.1.0"), a
assert a[a.index("--spec") + 1] == t + "/site/mine.json", a
c = open(sys.argv[1] + ".check").read().split("\n")
assert "--container-image=registry.example.com/clusterbench:0.1.0" in c and mounts in c, c
' "$TMP/srun.args" "$TMP"
ok "slurm.sbatch: CB_IMAGE runs /usr/bin/clusterbench (and the GPU check) in the image (pyxis), results and the CB_SPEC file mounted"
grep -q "image: registry.example.com/clusterbench:0.1.0" "$L/mpijob.yaml" &&
  grep -q '"/usr/bin/clusterbench"' "$L/mpijob.yaml" || fail "mpijob.yaml: not the project image"
ok "mpijob.yaml runs the project image's /usr/bin/clusterbench"
echo "PASS: $PASSES checks"
