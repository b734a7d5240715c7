#!/usr/bin/env bash
# One device check of issue #61 on a CUDA machine (an NVIDIA H200 of this workplace's device tool), in at most
# GPU_CHECK_BUDGET seconds (default 530: under 9 minutes), run from the repository root:
#
#   bash benchmarks/gpu_check.sh        # with .gpu-wheels/ carried beside the working tree; logs in $OUT
#
# The machine has its own CUDA torch and no package registry. What the tests import and it lacks, or holds at
# another version than requirements.txt pins, travels as pure-Python wheels in .gpu-wheels/ (ignored by git; fetched
# with the device README's `pip download` line, python 3.12): transformers 5.23.0 and peft 0.21.2 (the pins; the
# machine has transformers 5.17), rouge-score 0.1.2 (built here from its sdist with `pip wheel --no-deps`), nltk and
# defusedxml (rouge-score's needs). They are installed into /tmp/site, ahead of the machine's own packages; torch,
# accelerate, tokenizers and the rest are the machine's. papermill and nbformat stay behind: no notebook runs here.
#
# In order, each step with its own time limit inside the budget, none stopping the next:
#   1. versions.txt     python, torch and its CUDA, the card, and every package the tests import, with versions
#   2. pytest-gpu.log   python3 -m pytest -m gpu: the CUDA smoke (train, unlearn, sample, score, LoRA)
#   3. gpu_scale.log    benchmarks/gpu_scale.py --json gpu_scale.json: the Phi-1.5-sized stand-in (targets printed)
#   4. pytest-files.log the device-agnostic test files, on every core (xdist), with pytest-files.xml (JUnit)
#   5. summary.txt      each step's exit status and seconds
# Seven files in $OUT (the device tool brings back at most eight). Exit status: 0 when every step passed.
#
# Overrides, for a dry run of the script's shape on a CPU (tests skip there): PYTHON (default python3),
# GPU_CHECK_BUDGET, GPU_SCALE_ARGS (e.g. --small), GPU_CHECK_FILES (the test files of step 4), GPU_CHECK_WORKERS,
# GPU_CHECK_WHEELS (the wheels' folder).
set -u
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-530}
PY=${PYTHON:-python3}
if [ -z "${OUT:-}" ]; then echo "gpu_check.sh: set OUT to the folder for the logs" >&2; exit 2; fi
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TQDM_DISABLE=1 \
    TOKENIZERS_PARALLELISM=false MPLBACKEND=Agg
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
FAILED=0

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME LIMIT LOG COMMAND...: run COMMAND for at most LIMIT seconds (never past the budget, less a reserve for
# the steps after it), its output into LOG, and note its status and time in the summary.
step() {
    local name=$1 limit=$2 log=$3
    shift 3
    local most=$(($(left) - 5))
    ((limit > most)) && limit=$most
    if ((limit < 10)); then
        echo "$name: not run (budget spent)" | tee -a "$SUMMARY"
        FAILED=1
        return
    fi
    local t0 rc
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" >"$log" 2>&1
    rc=$?
    ((rc != 0)) && FAILED=1
    local note=""
    ((rc == 124 || rc == 137)) && note=" (stopped at its limit of ${limit} s)"
    echo "$name: exit $rc in $(($(date +%s) - t0)) s$note" | tee -a "$SUMMARY"
    tail -n 3 "$log"
}

WHEELS=${GPU_CHECK_WHEELS:-.gpu-wheels}
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$WHEELS"/*.whl >"$OUT/versions.txt" 2>&1 || { echo "wheels: install failed" | tee -a "$SUMMARY"; FAILED=1; }
    export PYTHONPATH=/tmp/site:$PWD/lib
else
    echo "no wheels in $WHEELS/: the machine's own packages" >"$OUT/versions.txt"
    export PYTHONPATH=$PWD/lib
fi

"$PY" - >>"$OUT/versions.txt" 2>&1 <<'EOF'
import importlib, platform, sys
print("python", platform.python_version(), sys.executable)
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("card", p.name, f"{p.total_memory / 2**30:.1f} GiB", "capability", f"{p.major}.{p.minor}")
for name in ("transformers", "peft", "accelerate", "tokenizers", "safetensors", "huggingface_hub", "numpy", "scipy",
             "sklearn", "pandas", "rouge_score", "nltk", "sacrebleu", "datasets", "pytest", "xdist", "vllm"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"), getattr(module, "__file__", ""))
    except Exception as error:
        print(name, "MISSING", type(error).__name__, str(error).splitlines()[0] if str(error) else "")
EOF
head -n 4 "$OUT/versions.txt"
grep -E "^(transformers|peft|accelerate|rouge_score|nltk|datasets) " "$OUT/versions.txt"

PYTEST=("$PY" -m pytest -p no:cacheprovider -q -ra)
# a test's own limit where pytest-timeout is installed (it is on the H200 image); the step's limit bounds it anyway
per_test() { "$PY" -c "import pytest_timeout" 2>/dev/null && echo "--timeout $1"; }
# shellcheck disable=SC2046  # per_test's words
step "pytest -m gpu" 100 "$OUT/pytest-gpu.log" "${PYTEST[@]}" -m gpu tests/test_gpu.py $(per_test 80)

# shellcheck disable=SC2086  # GPU_SCALE_ARGS is a list of words
step "gpu_scale" 280 "$OUT/gpu_scale.log" "$PY" benchmarks/gpu_scale.py --json "$OUT/gpu_scale.json" \
    ${GPU_SCALE_ARGS:-}

FILES=${GPU_CHECK_FILES:-"tests/test_device_agnostic.py tests/test_training.py tests/test_unlearning.py \
tests/test_generation.py tests/test_sampling.py tests/test_sampler_seam.py tests/test_lora.py tests/test_models.py \
tests/test_metrics.py tests/test_batching.py"}
# shellcheck disable=SC2086,SC2046  # FILES is a list of paths, per_test's words
step "pytest files" 600 "$OUT/pytest-files.log" "${PYTEST[@]}" -n "${GPU_CHECK_WORKERS:-8}" $(per_test 150) \
    --maxfail 40 -m "not paper_dry" --junitxml "$OUT/pytest-files.xml" $FILES

echo "total: $(($(date +%s) - START)) s of a budget of $BUDGET s" | tee -a "$SUMMARY"
exit $FAILED
