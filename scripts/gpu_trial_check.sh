#!/usr/bin/env bash
# The trial loop on one CUDA GPU (issue 36): sweep -> calibrate -> plan, then held-out runs.
#
#   1. `gpuplan profile MODEL --sweep`: the designed sweep (gpuplan.profile.sweep: base, short
#      sequences, fewer tokens, recompute, LoRA adapters) within SWEEP_BUDGET seconds;
#   2. `gpuplan calibrate` on the sweep's files (op-class factors, calibrate/classes.py);
#   3. held-out trials (amp, selective recompute, another width) that the calibration never saw;
#   4. `gpuplan plan` with the calibration for the held-out shape, as a user would;
#   5. a Markdown table: measured vs gpuplan before and after calibration, for every run.
#
# Needs torch with CUDA and transformers (and peft for the LoRA run) in the current Python; about
# 5 minutes on an H100 / H200 (each run builds the model with random weights and times 5 steps
# after 2 warm-up steps). Output: $OUT/gpu-trial-check.md when the device tool's $OUT is set,
# else docs/gpu-trial-check.md; the runs in $OUT/runs (or ./gpu-trial-runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
RUNS="${OUT:+$OUT/runs}"
RUNS="${RUNS:-$PWD/gpu-trial-runs}"
MD="${OUT_MD:-${OUT:+$OUT/gpu-trial-check.md}}"
MD="${MD:-$PWD/docs/gpu-trial-check.md}"
MODEL="${MODEL:-llama-3.2-1b}"
SWEEP_BUDGET="${SWEEP_BUDGET:-180}"
STEPS=(--device cuda --steps 5 --warmup 2)
SHAPE=(--seq-len 2048 --micro-batch 4)
if [ "${DRY:-0}" = 1 ]; then  # the plumbing on a CPU: a tiny model, short runs, no GPU needed
  MODEL="${MODEL_DRY:-pythia-70m}"; STEPS=(--device cpu --steps 1 --warmup 1); SHAPE=(--seq-len 512 --micro-batch 4)
fi
mkdir -p "$RUNS/sweep" "$RUNS/held-out"

python - <<'EOF'
import os
import sys
try:
    import torch, transformers  # noqa: F401
except ImportError:
    sys.exit("needs torch (CUDA build) and transformers: pip install -e '.[profile]'")
if not torch.cuda.is_available() and os.environ.get("DRY") != "1":
    sys.exit(f"torch {torch.__version__} sees no CUDA GPU (DRY=1 runs the plumbing on the CPU)")
device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU (dry run)"
print(f"torch {torch.__version__}, transformers {transformers.__version__}, {device}")
EOF

echo "== sweep"
timeout 600 python -m gpuplan profile "$MODEL" "${STEPS[@]}" "${SHAPE[@]}" --sweep \
  --sweep-budget "$SWEEP_BUDGET" --out "$RUNS/sweep"
echo "== calibrate"
python -m gpuplan calibrate "$RUNS"/sweep/sweep-*.json --out "$RUNS/calibration.json"

held() {  # name, then trial flags; each run capped at 3 minutes
  local name="$1"; shift
  echo "== held out: $name"
  timeout 180 python -m gpuplan profile "$MODEL" "${STEPS[@]}" --out "$RUNS/held-out/$name.json" "$@" || true
}
if [ "${DRY:-0}" = 1 ]; then
  held amp-mb2-s256 --seq-len 256 --micro-batch 2 --precision fp32-autocast
else
  held amp-mb2-s2048 --seq-len 2048 --micro-batch 2 --precision fp32-autocast
  held selective-mb2-s2048 --seq-len 2048 --micro-batch 2 --recompute selective
  held bf16-mb1-s4096 --seq-len 4096 --micro-batch 1
  held lora8-mb8-s1024 --seq-len 1024 --micro-batch 8 --finetune lora --lora-rank 8
fi

echo "== plan with the calibration"
python -m gpuplan plan "$MODEL" --gpu "${PLAN_GPU:-h200}" --gpus 1 --tp 1 --pp 1 --cp 1 --zero 0 --framework hf \
  --recipe bf16 --seq-len 4096 --micro-batch 1 --global-batch 1 --tokens 1B --calibration "$RUNS/calibration.json" \
  | head -20

python - "$RUNS" "$MD" <<'EOF'
import sys
from pathlib import Path

from gpuplan.calibrate import load_calibration, load_measurement
from gpuplan.calibrate import predict as P
from gpuplan.calibrate.classes import predicted_with

runs, md = Path(sys.argv[1]), Path(sys.argv[2])
cal = load_calibration(runs / "calibration.json")
factors = {n: cal.factor(n) for n in ("compute_time", "attention_time", "memory_time", "host_time")}
rows, errors = [], {"before": [], "after": []}
for group in ("sweep", "held-out"):
    for f in sorted((runs / group).glob("*.json")):
        m = load_measurement(str(f))
        case = P.case_of(m)
        if case.step.eager_ops is None:  # a CPU dry run: the fused model on the CPU stand-in, no class split
            before = after = P.step_parts(case, world_size=m.world_size).total
        else:
            parts = P.eager_parts(case, world_size=m.world_size)
            split = {"compute_time": parts.gemm, "attention_time": parts.attention, "memory_time": parts.memory,
                     "host_time": parts.host, "comm": parts.comm}
            before, after = parts.total, predicted_with(split, factors)
        if group == "held-out":
            errors["before"].append(before / m.step_time_s - 1)
            errors["after"].append(after / m.step_time_s - 1)
        rows.append(f"| {group} | {f.stem} | {m.step_time_s:.4f} | {before:.4f} ({before / m.step_time_s - 1:+.1%}) "
                    f"| {after:.4f} ({after / m.step_time_s - 1:+.1%}) |")
summary = "\n".join(f"- held out, {k} calibration: mean |error| {sum(map(abs, v)) / len(v):.1%}, "
                    f"max {max(map(abs, v)):.1%} over {len(v)} runs" for k, v in errors.items() if v)
factor_lines = "\n".join(f"- {n}: {f.value:.3f} ({f.status}; {f.note})" for n, f in factors.items())
md.write_text("# Trial loop on one GPU (scripts/gpu_trial_check.sh)\n\n"
              f"Calibration from the sweep ({', '.join(cal.reference.gpus)}; "
              f"{cal.reference.environment}):\n\n{factor_lines}\n\n{summary}\n\n"
              "| runs | run | measured s | gpuplan s (before) | calibrated s (after) |\n|---|---|---|---|---|\n"
              + "\n".join(rows) + "\n")
print(md.read_text())
EOF
