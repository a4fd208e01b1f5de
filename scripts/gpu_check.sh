#!/usr/bin/env bash
# The standing GPU checks (docs/hardware.md, "Measuring on a GPU") in one or two
# calls of the device tool, run from the repository root on the GPU machine, after
# scripts/gpu_prepare.sh packed .whl/ and .gpudata/ here. Run --part speed first (at
# most 8 minutes): training images/s and FLOP rate eager and CUDA-graphed with a profile
# per model, and the 16-trial main job with 1 (split per phase), 2, 4 and 8 workers per GPU:
#
#   bash scripts/gpu_check.sh --part speed --pack   # run this first on a GPU
#   bash scripts/gpu_check.sh --part 1     # tests, throughput, fused lanes (+ compile)
#   bash scripts/gpu_check.sh --part 2     # whole-model cost, calibrate, search, streams
#   bash scripts/gpu_check.sh --quick      # every step, smaller, in one call
#   bash scripts/gpu_check.sh --part reproduce --recipes "thesis-table4.1:full"
#                                          # the gpu tests, then `nasmlcn reproduce` runs
#   bash scripts/gpu_check.sh --part accuracy --seeds "0 1"   # Table 4.1's accuracy (9 min)
#
# The device tool's call names carry [".whl", ".gpudata"] (both are git-excluded).
# Options: --part speed|1|2|reproduce|accuracy|all (default all; all is 1 and 2),
# --recipes "NAME:SCALE ..." (--part reproduce; default thesis-table4.1:full), --quick,
# --device DEV (default cuda:0; cpu for a dry run of the script itself), --budget
# SECONDS (default 560, 480 with --part speed, 530 with --part accuracy: a call may run
# 600; a step that would end past it gets less time, or is skipped), --pack (at the
# end, everything but summary.txt in $OUT/gpu-check-partN.tar.gz: the device tool
# brings back 8 files at most). --part accuracy: --seeds "0 1 2" (one step a seed,
# seed after seed), --rows (nasmlcn/reproduce/engines/thesis_table.py's; default
# capsnet,mlcn2-8x4,mlcn2-8x4-text), --results-from FILE (the results.json an earlier call brought back: its finished
# runs are not trained again, so the seeds of one table can span several calls),
# --variants "augment=shift;lr_policy=exponential" (a recipe study: the rows trained
# under each variant's thesis_table.py --train overrides, one step a variant, without
# CapsNet, against the runs without overrides; --seeds then a run such as "0 1 2";
# e.g. --rows mlcn2-8x4-text: 20 epochs take about 16 s on an H200).
#
# Every step runs under `timeout`, writes $OUT/<step>.json (stdout; its stderr to
# <step>.log) or $OUT/<step>.txt, and never stops the script: its exit code and
# seconds go to $OUT/summary.txt (124: timed out; "skip": no time left). Each command
# stays on one line: tests/test_gpu_scripts.py checks the flags it passes against
# the benchmark's or command's --help.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

PART=all
QUICK=0
PACK=0
DEVICE=cuda:0
BUDGET=
RECIPES=thesis-table4.1:full
ACC_SEEDS="0 1 2"
ACC_ROWS=capsnet,mlcn2-8x4,mlcn2-8x4-text
ACC_VARIANTS=
RESULTS_FROM=
while (($#)); do
  case $1 in
    --part) PART=${2:?--part needs speed, 1, 2, reproduce or all}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --device) DEVICE=${2:?--device needs a device}; shift 2 ;;
    --budget) BUDGET=${2:?--budget needs seconds}; shift 2 ;;
    --pack) PACK=1; shift ;;
    --recipes) RECIPES=${2:?--recipes needs "NAME:SCALE ..."}; shift 2 ;;
    --seeds) ACC_SEEDS=${2:?--seeds needs "0 1 2"}; shift 2 ;;
    --rows) ACC_ROWS=${2:?--rows needs thesis_table.py rows}; shift 2 ;;
    --variants) ACC_VARIANTS=${2:?--variants needs "KEY=VALUE ...;KEY=VALUE ..."}; shift 2 ;;
    --results-from) RESULTS_FROM=${2:?--results-from needs a results.json}; shift 2 ;;
    -h | --help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $PART in speed | 1 | 2 | reproduce | accuracy | all) ;; *) echo "gpu_check.sh: --part speed, 1, 2, reproduce, accuracy or all, not $PART" >&2; exit 2 ;; esac
if [[ -n $RESULTS_FROM && ! -f $RESULTS_FROM ]]; then
  echo "gpu_check.sh: --results-from $RESULTS_FROM is no file" >&2; exit 2
fi
# --part speed fits 8 minutes, setup and environment included (their limits shrink too)
SETUP_LIMIT=120 ENV_LIMIT=60
[[ $PART == speed || $PART == accuracy ]] && SETUP_LIMIT=60 ENV_LIMIT=40
if [[ -z $BUDGET ]]; then
  BUDGET=560
  [[ $PART == speed ]] && BUDGET=480
  [[ $PART == accuracy ]] && BUDGET=530
fi

PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
SUMMARY=$OUT/summary.txt
START=$SECONDS
printf '%-26s %5s %8s\n' step rc seconds >"$SUMMARY"

say() { printf '\033[1m[gpu-check %4ds]\033[0m %s\n' "$((SECONDS - START))" "$*"; }

# step NAME KIND LIMIT CMD...: runs CMD under `timeout` for at most LIMIT seconds (less
# when the budget is nearly spent). KIND json: stdout -> NAME.json, stderr -> NAME.log;
# KIND txt: both -> NAME.txt. Appends "NAME rc seconds" to the summary.
step() {
  local name=$1 kind=$2 limit=$3 left rc started
  shift 3
  left=$((BUDGET - (SECONDS - START) - 5))
  ((limit > left)) && limit=$left
  if ((limit < 15)); then
    say "$name: skipped (budget of ${BUDGET}s spent)"
    printf '%-26s %5s %8s\n' "$name" skip 0 >>"$SUMMARY"
    return 0
  fi
  say "$name (at most ${limit}s): $*"
  # a function of this script runs in a child bash (`timeout` runs programs only)
  declare -F "$1" >/dev/null && set -- bash -c '"$@"' bash "$@"
  started=$SECONDS
  if [[ $kind == json ]]; then
    timeout -k 10 "$limit" "$@" >"$OUT/$name.json" 2>"$OUT/$name.log"
    rc=$?
    tail -n 5 "$OUT/$name.log"
  else
    timeout -k 10 "$limit" "$@" >"$OUT/$name.txt" 2>&1
    rc=$?
    tail -n 15 "$OUT/$name.txt"
  fi
  printf '%-26s %5s %8s\n' "$name" "$rc" "$((SECONDS - started))" >>"$SUMMARY"
  say "$name: exit $rc in $((SECONDS - started))s"
  return 0
}

# Setup: the wheels into a private site folder, the data unpacked -----------------
setup() {
  local site=$WORK/site
  mkdir -p "$site"
  shopt -s nullglob
  local wheels=(.whl/*.whl)
  shopt -u nullglob
  if ((${#wheels[@]} == 0)); then
    echo "no wheels in .whl/: run scripts/gpu_prepare.sh here first and carry .whl"
  elif ! "$PY" -m pip install -q --no-index --no-deps --target "$site" "${wheels[@]}"; then
    echo "pip could not install the wheels; unpacking them instead"
    for wheel in "${wheels[@]}"; do "$PY" -m zipfile -e "$wheel" "$site" || return 1; done
  fi
  # unpacked outside .gpudata/, which must stay small enough to carry
  local raw=$WORK/data/FashionMNIST/raw
  mkdir -p "$raw"
  for gz in .gpudata/FashionMNIST/raw/*.gz; do
    [[ -f $gz ]] || { echo "no Fashion-MNIST in .gpudata/: run scripts/gpu_prepare.sh and carry .gpudata"; return 1; }
    gunzip -c "$gz" >"$raw/$(basename "${gz%.gz}")" || return 1
  done
  ls -l "$raw" 2>&1
  return 0
}
export -f setup
export WORK PY
step setup txt "$SETUP_LIMIT" setup
export PYTHONPATH=$WORK/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 COLUMNS=160
export NASMLCN_DATA_DIR=$WORK/data NASMLCN_DEBIAN_FASHION_MNIST=$ROOT/.gpudata/FashionMNIST/raw
export NASMLCN_CALIBRATION=$OUT/calibration.json

environment() {
  date -u
  nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  echo "cores: $(nproc --all) (usable: $(nproc))"
  git rev-parse HEAD 2>/dev/null || echo "(no git here)"
  "$PY" - <<'EOF'
import platform
import torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda,
      "cudnn", torch.backends.cudnn.version(), "tf32 matmul", torch.backends.cuda.matmul.allow_tf32)
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"cuda:{i}", p.name, f"{p.total_memory / 2**30:.1f} GiB", f"{p.multi_processor_count} SMs",
          f"capability {p.major}.{p.minor}")
import nasmlcn, optuna
print("nasmlcn", nasmlcn.__version__, "optuna", optuna.__version__)
EOF
  "$PY" -m nasmlcn data prepare fashion-mnist 2>&1
  "$PY" -m pip list 2>/dev/null || echo "(no pip)"
}
export -f environment
step environment txt "$ENV_LIMIT" environment

# The figures: small with --quick, those the standing checks ask for otherwise
DEFAULT_48='20*mlcn1:2x1,20*mlcn2:2x4,8*mlcn1:2x2'  # a 48-lane model of the default space
DEFAULT_58='26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4'  # the 58-lane default-space model of docs/hardware.md
if ((QUICK)); then
  TP_ROUNDS=1 TP_SECONDS=1 FUSED_REPEATS=3 WHOLE_MODELS=20 WHOLE_STEPS=2
  CAL_LANES=20 CAL_ROUNDS=1 TRIALS=1 EPOCHS=1 TRAIN_LIMIT=2000 VAL_LIMIT=1000 SEARCH_TIMEOUT=60
  ACC_EPOCHS=1 CAPS_EPOCHS=1 ACC_LIMIT=60 TABLE_ARGS="--epochs 1 --train-limit 2000"
  SPEED_ROUNDS=1 SPEED_SECONDS=0.5 SPEED_PROFILE_STEPS=2 SPEED_TRIALS=4 SPEED_TIMEOUT=30
else
  TP_ROUNDS=3 TP_SECONDS=2 FUSED_REPEATS=10 WHOLE_MODELS=20 WHOLE_STEPS=3
  CAL_LANES=24 CAL_ROUNDS=2 TRIALS=3 EPOCHS=3 TRAIN_LIMIT=54000 VAL_LIMIT=6000 SEARCH_TIMEOUT=100
  ACC_EPOCHS=10 CAPS_EPOCHS=2 ACC_LIMIT=150 TABLE_ARGS="--epochs 20"
  SPEED_ROUNDS=3 SPEED_SECONDS=0.75 SPEED_PROFILE_STEPS=3 SPEED_TRIALS=16 SPEED_TIMEOUT=45
fi
GPU_TESTS=$(grep -rl --include='test_*.py' 'mark.gpu' tests | sort | tr '\n' ' ')
# default-suite tests whose path changes where CUDA is present
CUDA_TESTS="tests/models/test_fused.py tests/parallel tests/measure tests/costs/test_whole.py tests/costs/test_calibrated.py tests/training/test_memory.py tests/cli/test_calibrate.py tests/cli/test_bad_input.py tests/search/test_runner.py"

speed_part() {
  # at most 8 minutes with setup (60) and environment (40): 120 + 60 + 3 x 60 + 15 = 375.
  # Issue 49's figures, in its order of priority. Left out for time: the gpu tests
  # (--part 1 and --part reproduce run them) and batch 500 (the goals are at batch 100).
  # (1) training images/s and FLOP rate (images/s x forward GFLOP per image), eager and
  # CUDA-graphed, at batch 100, ratios to CapsNet: CapsNet, 8*mlcn2:4x1, 8*mlcn2-ref:4x1,
  # 32*mlcn2:2x1 and three default-space models (the 58-lane one, seeds 1 and 3), a profile
  # of each (kernels per step, GPU busy, Adam's share): 32 s of timed steps (7 models x 2
  # paths x 3 rounds x 0.75 s), the rest builds, warm-ups, captures and profiles
  step gpu_speed json 120 "$PY" benchmarks/gpu_speed.py --device "$DEVICE" --batch 100 --rounds "$SPEED_ROUNDS" --seconds "$SPEED_SECONDS" --profile-steps "$SPEED_PROFILE_STEPS" --profile-dir "$OUT/profiles" --json
  # (host ops per step, benchmarks/step_ops.py, are counted on the CPU, the same on any
  # machine: CI's tests guard them, so no GPU time goes to them)
  # (2) the main job (a seeded default-space search of 16 one-epoch trials on 10,000
  # images) with 1 worker, in benchmarks/trial_time.py: each trial's seconds split per
  # phase (the time outside training), its study kept for the summary; then with 2, 4
  # and 8 workers on the GPU. --timeout (SPEED_TIMEOUT, 45 s: 1 worker took 37.6 s on an
  # H100, docs/hardware.md) ends each in time to leave its database whole (a job cut
  # short still gives its finished trials' rate); the step's 15 s more hold the
  # processes' start-up and end
  step speed-w1 json 60 "$PY" benchmarks/trial_time.py --runs 1 --trials "$SPEED_TRIALS" --train-limit 10000 --val-limit 2000 --seed 0 --run-on "$DEVICE" --timeout "$SPEED_TIMEOUT" --storage "sqlite:///$OUT/speed-w1.db" --artifacts "$WORK/speed-w1" --keep-weights best:1 --json
  if [[ $DEVICE == cuda* ]]; then
    step speed-w2 json 60 "$PY" -m nasmlcn search --devices 8xK80 --mem 12GB --epochs 1 --train-limit 10000 --val-limit 2000 --no-prune --trials "$SPEED_TRIALS" --seed 0 --run-on "$DEVICE" --workers-per-gpu 2 --timeout "$SPEED_TIMEOUT" --storage "sqlite:///$OUT/speed-w2.db" --artifacts "$WORK/speed-w2" --keep-weights best:1 --json -q
    step speed-w4 json 60 "$PY" -m nasmlcn search --devices 8xK80 --mem 12GB --epochs 1 --train-limit 10000 --val-limit 2000 --no-prune --trials "$SPEED_TRIALS" --seed 0 --run-on "$DEVICE" --workers-per-gpu 4 --timeout "$SPEED_TIMEOUT" --storage "sqlite:///$OUT/speed-w4.db" --artifacts "$WORK/speed-w4" --keep-weights best:1 --json -q
    step speed-w8 json 60 "$PY" -m nasmlcn search --devices 8xK80 --mem 12GB --epochs 1 --train-limit 10000 --val-limit 2000 --no-prune --trials "$SPEED_TRIALS" --seed 0 --run-on "$DEVICE" --workers-per-gpu 8 --timeout "$SPEED_TIMEOUT" --storage "sqlite:///$OUT/speed-w8.db" --artifacts "$WORK/speed-w8" --keep-weights best:1 --json -q
  fi
  # wall seconds, trials per hour and median in-trial images/s of each job (the first 4
  # trials and all), then the four side by side: the packing, decided by measurement
  step speed-summary txt 15 "$PY" benchmarks/speed_summary.py --first 4 "$OUT/speed-w1.db" "$OUT/speed-w2.db" "$OUT/speed-w4.db" "$OUT/speed-w8.db"
}

part1() {
  # (1) the gpu tests (the default suite's CUDA paths come last: the least value)
  # shellcheck disable=SC2086
  step pytest_gpu txt 180 "$PY" -m pytest -m gpu -q -rA -p no:cacheprovider $GPU_TESTS
  # (2) CapsNet against MLCN 2xw4, 8xw4, 32xw2, images/s and ratio
  step train_throughput json 150 "$PY" benchmarks/train_throughput.py --device "$DEVICE" --rounds "$TP_ROUNDS" --seconds "$TP_SECONDS" --models "2*mlcn2:4x1;8*mlcn2:4x1;32*mlcn2:2x1;8*mlcn1:4x1" --json
  # (7) fused vs per-lane, eager; then the fused model under torch.compile
  step fused_lanes json 150 "$PY" benchmarks/fused_lanes.py --device "$DEVICE" --repeats "$FUSED_REPEATS" --model "$DEFAULT_48" --model "32*mlcn2:2x1" --model "48*mlcn2:2x1" --model "64*mlcn2:1x1" --model "4*mlcn2:4x1" --model "36*mlcn2:2x2" --model "4*mlcn2:6x2" --json
  # (3) accuracy and seconds per epoch on the full training set: thesis Table 4.1 (8*mlcn2:4x1
  # 92.63 % after 20 epochs, 92 s per epoch on a P100) and CapsNet (91.30 %, 220 s per epoch)
  step accuracy_mlcn2_8x4 json "$ACC_LIMIT" "$PY" -m nasmlcn train --lanes "8*mlcn2:4x1" --epochs "$ACC_EPOCHS" --run-on "$DEVICE" --train-limit "$TRAIN_LIMIT" --out "$WORK/acc-mlcn" --json
  step accuracy_capsnet json "$ACC_LIMIT" "$PY" -m nasmlcn train --model capsnet --epochs "$CAPS_EPOCHS" --run-on "$DEVICE" --train-limit "$TRAIN_LIMIT" --out "$WORK/acc-capsnet" --json
  # one model a step: a compilation that overruns its box loses that model only
  step fused_lanes_compile_32 json 180 "$PY" benchmarks/fused_lanes.py --device "$DEVICE" --repeats "$FUSED_REPEATS" --compile --compile-mode default --model "32*mlcn2:2x1" --json
  step fused_lanes_compile_48 json 180 "$PY" benchmarks/fused_lanes.py --device "$DEVICE" --repeats "$FUSED_REPEATS" --compile --compile-mode default --model "$DEFAULT_48" --json
  if ((!QUICK)); then
    # shellcheck disable=SC2086
    step pytest_cuda_paths txt 180 "$PY" -m pytest -q -p no:cacheprovider -n 8 --continue-on-collection-errors $CUDA_TESTS
  fi
}

part2() {
  # (0) the stacks' later conv layers as grouped convolutions (the default) or as an
  # unfold and one batched matrix product (bmm, 3-9x slower on a 2-core CPU), on the
  # 58-lane model and 8*mlcn2-ref:4x1, alternating in each round: bmm's images/s and
  # kernels against grouped's, to choose between them. Apart from --part speed (whose
  # 8 minutes it would overrun), first here: 2 models x 2 layer paths x 2 paths x 2 rounds x 0.5 s
  step gpu_layer_paths json 60 "$PY" benchmarks/gpu_speed.py --device "$DEVICE" --batch 100 --rounds 2 --seconds 0.5 --profile-steps 2 --model "$DEFAULT_58" --model "8*mlcn2-ref:4x1" --layer-path both --json
  # (4) calibrate on the GPU: Pearson r of predicted vs measured step time and memory
  step calibrate json 120 "$PY" -m nasmlcn calibrate --run-on "$DEVICE" --lanes "$CAL_LANES" --rounds "$CAL_ROUNDS" --out "$OUT/calibration.json" --replace --json -q
  # (5) a real search, default space, on the GPU
  step search json "$((SEARCH_TIMEOUT + 60))" "$PY" -m nasmlcn search --run-on "$DEVICE" --trials "$TRIALS" --epochs "$EPOCHS" --train-limit "$TRAIN_LIMIT" --val-limit "$VAL_LIMIT" --timeout "$SEARCH_TIMEOUT" --storage "sqlite:///$OUT/search.db" --artifacts "$WORK/artifacts" --keep-weights best:1 --json -q
  if [[ $DEVICE == cuda* ]]; then
    # (6) lanes on streams vs one after another, on one GPU
    step scaling_cuda json 90 "$PY" -m nasmlcn.reproduce.engines.scaling --cuda --no-cpu --rounds 3 --seconds 3 --json
  fi
  # (9) the whole-model cost model on 20 random whole models (after calibrate: its file)
  step whole_model_cost json 150 "$PY" benchmarks/whole_model_cost.py --device "$DEVICE" --models "$WHOLE_MODELS" --steps "$WHOLE_STEPS" --json
  if [[ $DEVICE == cuda* ]]; then
    # (7) CUDA graphs: torch.compile's reduce-overhead mode
    step fused_lanes_cudagraphs json 180 "$PY" benchmarks/fused_lanes.py --device "$DEVICE" --repeats "$FUSED_REPEATS" --compile --compile-mode reduce-overhead --model "32*mlcn2:2x1" --json
  fi
}

reproduce_part() {
  # CUDA paths first (cheap), then each paper result on the GPU (the engines train on
  # cuda by default); the run folders come back under $OUT/reproduce
  # shellcheck disable=SC2086
  step pytest_gpu txt 90 "$PY" -m pytest -m gpu -q -rA -p no:cacheprovider $GPU_TESTS
  local item
  for item in $RECIPES; do
    step "reproduce_${item//[^A-Za-z0-9]/_}" json 600 "$PY" -m nasmlcn reproduce "${item%%:*}" --scale "${item#*:}" --out "$OUT/reproduce" --json
  done
}

accuracy_part() {
  # at most 9 minutes with setup (60) and environment (40). Thesis Table 4.1's rows
  # (nasmlcn/reproduce/engines/thesis_table.py: CapsNet, Mlcn2 8x4 in the reference code's lanes and in
  # the text's, by default) for 20 epochs on the whole training split, CUDA-graphed, the test accuracy
  # at the best-validation epoch; one step a seed, seed after seed, so a call that runs
  # out of time leaves whole seeds. The results file comes back in $OUT/accuracy:
  # give it to the next call with --results-from and only the missing runs train;
  # `python -m nasmlcn.reproduce.engines.thesis_table --rows ... --seeds 3 --results FILE` prints the
  # table from it here, training nothing.
  local results=$OUT/accuracy/results.json seed
  mkdir -p "$OUT/accuracy"
  if [[ -n $RESULTS_FROM ]]; then cp "$RESULTS_FROM" "$results"; fi
  if [[ -n $ACC_VARIANTS ]]; then
    accuracy_variants "$results"
    return
  fi
  for seed in $ACC_SEEDS; do
    # shellcheck disable=SC2086
    step "accuracy_seed$seed" json 430 "$PY" -m nasmlcn.reproduce.engines.thesis_table --device "$DEVICE" --rows "$ACC_ROWS" $TABLE_ARGS --seed "$seed" --seeds 1 --results "$results" --json
  done
}

accuracy_variants() {
  # --variants: one step a variant (variant after variant; one process for its seeds,
  # not one a seed: a process's start-up is a seed's training time here), into the
  # same results file, which keeps each run as it finishes (a step cut short loses only
  # the run in progress). The runs of --results-from without overrides are the
  # baseline: each step's JSON sets its variant against it, paired by seed
  local results=$1 variant index=0
  local -a variants seeds
  IFS=';' read -ra variants <<<"$ACC_VARIANTS"
  read -ra seeds <<<"$ACC_SEEDS"
  for variant in "${variants[@]}"; do
    index=$((index + 1))
    # shellcheck disable=SC2086
    step "accuracy_v$index" json 240 "$PY" -m nasmlcn.reproduce.engines.thesis_table --device "$DEVICE" --rows "$ACC_ROWS" $TABLE_ARGS --seed "${seeds[0]}" --seeds "${#seeds[@]}" --no-capsnet --train "$variant" --results "$results" --json
  done
}

case $PART in
  speed) speed_part ;;
  1) part1 ;;
  reproduce) reproduce_part ;;
  accuracy) accuracy_part ;;
  2) part2 ;;
  all) part1; part2 ;;
esac

rm -rf "$WORK"
if ((PACK)); then
  # the device tool brings back 8 files at most, 16 MiB each: everything but weights and
  # checkpoints in one archive, the summary beside it
  tar -C "$OUT" -czf "$ROOT/gpu-check-part$PART.tar.gz" --exclude=summary.txt --exclude='*.pt' --exclude='*.pth' . &&
    find "$OUT" -mindepth 1 ! -name summary.txt -delete && mv "$ROOT/gpu-check-part$PART.tar.gz" "$OUT/"
fi
say "done: $OUT"
cat "$SUMMARY"
