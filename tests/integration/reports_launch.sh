#!/usr/bin/env bash
# The launch recipes: scripts/launch/mpijob.yaml is an MPIJob (kubeflow.org/v2beta1) with a
# Launcher and a Worker requesting nvidia.com/gpu, and -np = replicas x slotsPerWorker;
# scripts/launch/slurm.sbatch passes bash -n and, under a stand-in srun on PATH, launches one task
# per GPU (here: none on the PCI bus, so one per node) with PMIx. Budget: < 5 s.
source "$(dirname "$0")/lib.sh"
L=$CB_SOURCE_DIR/scripts/launch

bash -n "$L/slurm.sbatch" || fail "slurm.sbatch: bash -n"
ok "slurm.sbatch passes bash -n"

if python3 -c 'import yaml' 2>/dev/null; then
  py '
import yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
assert len(docs) == 1, len(docs)
j = docs[0]
assert j["apiVersion"] == "kubeflow.org/v2beta1" and j["kind"] == "MPIJob", j
s = j["spec"]
specs = s["mpiReplicaSpecs"]
assert set(specs) == {"Launcher", "Worker"}, specs.keys()
w = specs["Worker"]
wc = w["template"]["spec"]["containers"][0]
gpus = wc["resources"]["limits"]["nvidia.com/gpu"]
assert gpus == s["slotsPerWorker"] == 8, (gpus, s["slotsPerWorker"])
args = specs["Launcher"]["template"]["spec"]["containers"][0]["args"]
np_ = int(args[args.index("-np") + 1])
assert np_ == w["replicas"] * s["slotsPerWorker"] == 16, np_
assert "nvidia.com/gpu" not in str(specs["Launcher"])
' "$L/mpijob.yaml"
  ok "mpijob.yaml: MPIJob v2beta1, Launcher + Worker, nvidia.com/gpu = slotsPerWorker, -np 16"
else
  grep -q '^kind: MPIJob$' "$L/mpijob.yaml" && grep -q '^apiVersion: kubeflow.org/v2beta1$' "$L/mpijob.yaml" \
    && grep -q 'nvidia.com/gpu: 8' "$L/mpijob.yaml" || fail "mpijob.yaml fields"
  echo "note: python3-yaml not installed: checked mpijob.yaml by grep only"
fi

# A stand-in srun: lists pmix for --mpi=list, else records its arguments.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/srun" <<'SH'
#!/usr/bin/env bash
if [ "$1" = "--mpi=list" ]; then printf 'MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n'; exit 0; fi
printf '%s\n' "$@" >"$SRUN_LOG"
SH
chmod +x "$TMP/bin/srun"
touch "$TMP/cb" && chmod +x "$TMP/cb"
gpus=0
for d in /sys/bus/pci/devices/*; do
  [ -r "$d/vendor" ] && [ "$(cat "$d/vendor")" = "0x10de" ] && [[ "$(cat "$d/class")" == 0x030[02]* ]] && gpus=$((gpus + 1))
done
want=$((gpus > 0 ? gpus : 1))
expect_rc 0 env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" SLURM_JOB_NUM_NODES=3 \
  SLURM_SUBMIT_DIR="$TMP" CB_BIN="$TMP/cb" bash "$L/slurm.sbatch"
expect_out "clusterbench: 3 node\(s\) x $want task\(s\)"
py '
a = open(sys.argv[1]).read().split("\n")
want = int(sys.argv[2])
for f in ("--mpi=pmix", "--nodes=3", "--ntasks-per-node=%d" % want, "--ntasks=%d" % (3 * want),
          "--cpu-bind=none", "run", "--suite", "quick", "--results"):
    assert f in a, (f, a)
assert a[a.index("--results") + 1] == sys.argv[3] + "/results", a
' "$TMP/srun.args" "$want" "$TMP"
ok "slurm.sbatch: srun --mpi=pmix, $want task(s) per node on 3 nodes"
expect_rc 0 env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" SLURM_JOB_NUM_NODES=2 \
  SLURM_SUBMIT_DIR="$TMP" CB_BIN="$TMP/cb" CB_TASKS_PER_NODE=8 CB_SRUN_MPI=pmi2 SUITE=full \
  bash "$L/slurm.sbatch"
grep -qx -- "--ntasks=16" "$TMP/srun.args" && grep -qx -- "--mpi=pmi2" "$TMP/srun.args" \
  && grep -qx full "$TMP/srun.args" || fail "overrides not applied: $(cat "$TMP/srun.args")"
ok "slurm.sbatch: CB_TASKS_PER_NODE, CB_SRUN_MPI and SUITE overrides"
expect_rc 2 env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" CB_BIN="$TMP/missing" \
  bash "$L/slurm.sbatch"
expect_out "is not built"
ok "slurm.sbatch: a missing binary exits 2"
expect_rc 0 env PATH="$TMP/bin:$PATH" SRUN_LOG="$TMP/srun.args" SLURM_JOB_NUM_NODES=2 \
  SLURM_SUBMIT_DIR="$TMP" CB_BIN= CB_IMAGE=registry.example.com/clusterbench:0.1.0 bash "$L/slurm.sbatch"
py '
a = open(sys.argv[1]).read().split("\n")
assert "--container-image=registry.example.com/clusterbench:0.1.0" in a, a
assert "--container-mounts=%s/results:%s/results" % (sys.argv[2], sys.argv[2]) in a, a
i = a.index("/usr/bin/clusterbench")
assert a[i + 1] == "run" and i > a.index("--container-image=registry.example.com/clusterbench:0.1.0"), a
' "$TMP/srun.args" "$TMP"
ok "slurm.sbatch: CB_IMAGE runs /usr/bin/clusterbench in the image (pyxis), results mounted"
grep -q "image: registry.example.com/clusterbench:0.1.0" "$L/mpijob.yaml" &&
  grep -q '"/usr/bin/clusterbench"' "$L/mpijob.yaml" || fail "mpijob.yaml: not the project image"
ok "mpijob.yaml runs the project image's /usr/bin/clusterbench"
echo "PASS: $PASSES checks"
