# The workbook's user interface. `make` alone lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
VLLM_VENV ?= .venv-vllm
STAMP   := $(VENV)/.unlearnkit-installed
CONDA   := $(shell command -v mamba 2>/dev/null || command -v conda 2>/dev/null)
PROFILE ?= default
NB      ?= 01
# A training seed other than the profile's own (make notebooks SEED=3), and the seeds of make seeds.
SEED    ?=
SEEDS   ?= 0 1
SEED_SET := $(if $(SEED),--set seed=$(SEED))
# The runner reaches no model or dataset hub unless asked: make notebooks PROFILE=paper ONLINE=1 passes --online.
ONLINE  ?=
SEED_SET += $(if $(ONLINE),--online)
LAB_ARGS ?=
# Tests never reach the model or data hub; offline runs fail fast instead of hanging.
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# The same bits on every x86-64 machine with AVX2: PyTorch, MKL, oneDNN and NumPy take their AVX2 paths
# (lib/unlearnkit/machine.py says why; it prints nothing on other machines). A variable you set wins, and
# UNLEARNKIT_NATIVE_ISA=1 leaves every library its own choice.
$(foreach kv,$(shell python3 lib/unlearnkit/machine.py 2>/dev/null),$(eval export $(subst =, ?= ,$(kv))))

.PHONY: help setup setup-vllm all notebooks notebook eval seeds freeze smoke paper-dry test-paper-dry report figures readme lab test test-fast lint clean benchmarks profile \
        strip-notebooks sync-params

help: ## list the targets
	@echo "Machine-unlearning workbook. Quickstart: 'make all' runs everything, 'make test' tests it."
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-16s %s\n", $$1, $$2}'
	@echo "Variables: PROFILE=smoke|default|tofu-local|paper|paper-dry|paper-llama|paper-llama-dry (default: default), NB=00..10 (make notebook),"
	@echo "           SEED=s (a training seed other than the profile's), SEEDS=\"0 1 2\" or 0-5 (make seeds)"

setup: $(STAMP) ## build the environment (conda/mamba from environment.yml if present, else .venv + pip)

# What setup installs, said before the long quiet step: the pins of requirements.txt (counted from the file, so the
# line stays true) and how long a fresh environment took on a 2-core machine (docs/speed.md: 3.6 min, 213 s).
SETUP_PINS = $(shell grep -cE '^[A-Za-z]' requirements.txt)
SETUP_SAYS = a fresh $(VENV) takes about 3-4 minutes on 2 cores (pip prints nothing meanwhile); an existing one, only what changed
# When setup began: make expands a recipe's lines together, before it runs the first, so the last line's $(SETUP_T0)
# is the time before the first line ran.
SETUP_T0 = $(shell date +%s)

$(STAMP): requirements.txt environment.yml pyproject.toml
ifneq ($(CONDA),)
	@echo "setup: $(notdir $(CONDA)) builds $(VENV) from environment.yml: python 3.11 from conda-forge, then with pip the $(SETUP_PINS) pinned packages of requirements.txt (torch CPU wheel, transformers, datasets, jupyterlab, papermill, ...) and the workbook in editable mode; $(SETUP_SAYS)"
	@if [ -x $(PY) ]; then $(CONDA) env update -p $(VENV) -f environment.yml; \
	 else $(CONDA) env create -p $(VENV) -f environment.yml; fi
else
	@echo "setup: installing the $(SETUP_PINS) pinned packages of requirements.txt into $(VENV) (torch CPU wheel, transformers, datasets, peft, scikit-learn, pandas, matplotlib, jupyterlab, papermill, pytest, ruff, ...), then the workbook in editable mode; $(SETUP_SAYS)"
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt 2> >(grep -v "is ignored: it is neither" >&2)
	$(PY) -m pip install -q --no-deps -e . 2> >(grep -v "is ignored: it is neither" >&2)
endif
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (unlearnkit)" > /dev/null
	@touch $@
	@echo "setup: done in $$(( $$(date +%s) - $(SETUP_T0) )) s; the kernel \"Python 3 (unlearnkit)\" is installed in $(VENV)"

# Not part of setup: vllm brings its own CUDA torch (several GB) and needs Linux with a GPU.
setup-vllm: ## a separate .venv-vllm for sampler: vllm, on a CUDA machine (GBs); runs notebooks as .venv-vllm/bin/python -m unlearnkit.runner 05 --profile P
	@test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q -r requirements-vllm.txt
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps -e .
	$(VLLM_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (unlearnkit, vLLM)" > /dev/null

all: setup notebooks readme report ## set up, run every notebook on the default profile (figures, findings), build the report

notebooks: setup ## run every notebook in order on PROFILE (its own training seed, or SEED=s)
	$(PY) -m unlearnkit.runner all --profile $(PROFILE) $(SEED_SET)

notebook: setup ## run one notebook: make notebook NB=01 PROFILE=smoke
	$(PY) -m unlearnkit.runner $(NB) --profile $(PROFILE) $(SEED_SET)

# make eval MODEL=path/to/model DATA=path/to/tofu REFERENCE=path/to/retain [TEMPLATE=phi] [SUITE=tofu,attacks]
#   [LIMIT=N] [BATCH_SIZE=N] [DEVICE=cpu|cuda|cuda:N] [LOG_SAMPLES=1] [OUTPUT_PATH=dir]: lm-eval's flags
MODEL     ?=
DATA      ?=
REFERENCE ?=
TEMPLATE  ?=
SUITE     ?= all
LIMIT     ?=
BATCH_SIZE ?=
DEVICE    ?=
LOG_SAMPLES ?=
OUTPUT_PATH ?=
eval: setup ## every metric on a model of your own: make eval MODEL=folder|hub-name DATA=tofu-folder REFERENCE=retain-model (TEMPLATE=, SUITE=)
	@test -n "$(MODEL)" || { echo "make eval needs MODEL=<a model folder, a run of the store or a Hub name>" >&2; exit 2; }
	$(PY) -m unlearnkit.runner eval --model "$(MODEL)" --profile $(PROFILE) --suite "$(SUITE)" $(SEED_SET) \
	  $(if $(DATA),--data "$(DATA)") $(if $(REFERENCE),--reference "$(REFERENCE)") $(if $(TEMPLATE),--template "$(TEMPLATE)") \
	  $(if $(LIMIT),--limit "$(LIMIT)") $(if $(BATCH_SIZE),--batch-size "$(BATCH_SIZE)") $(if $(DEVICE),--device "$(DEVICE)") \
	  $(if $(LOG_SAMPLES),--log-samples) $(if $(OUTPUT_PATH),--output-path "$(OUTPUT_PATH)")

seeds: setup ## several training seeds side by side, then notebook 10 over them: make seeds SEEDS="0 1 2" (resumable)
	$(PY) -m unlearnkit.runner seeds $(SEEDS) --profile $(PROFILE) $(if $(ONLINE),--online)

freeze: setup ## freeze the claims registry once, after the exploratory seeds 0-5 ran: docs/claims.frozen.json (never rewritten)
	$(PY) -m unlearnkit.runner freeze 0-5

smoke: setup ## the whole workbook on the smoke profile (seconds per notebook)
	$(PY) -m unlearnkit.runner all --profile smoke

paper-dry: setup ## the paper profile's code path on CPU: stand-in models, every notebook, then 01, 02, 05 with LoRA
	$(PY) -m unlearnkit.runner all --profile paper-dry
	for nb in 01 02 05; do $(PY) -m unlearnkit.runner $$nb --profile paper-dry-lora || exit 1; done

report: setup ## build report/PROFILE/index.html (offline HTML of the executed notebooks; 10, the findings, is the front page)
	$(PY) -m unlearnkit.report build --profile $(PROFILE) $(if $(SEED),--seed $(SEED))

figures: setup ## redraw every figure of PROFILE (and SEED) from its stored results, without training or sampling
	$(PY) -m unlearnkit.runner figures --profile $(PROFILE) $(SEED_SET)

readme: setup ## rewrite README's results section from docs/findings.json (notebook 10 writes it on default)
	$(PY) -m unlearnkit.report readme

lab: setup ## open JupyterLab at notebooks/ (rooted at the repository, so links to docs/ work) with the workbook's kernel; LAB_ARGS="--no-browser --allow-root" in a container
	$(PY) -m jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks $(LAB_ARGS)

# One test process per core; a test file stays in one process (its module fixtures, e.g. the smoke run, run once).
TEST_JOBS ?= $(shell nproc)
test: setup ## set up, then run the test suite on every core (the whole paper dry run is left out: make test-paper-dry)
	$(PY) -m pytest -q -m "not paper_dry" -n $(TEST_JOBS) --dist loadfile --durations=25

test-paper-dry: setup ## the paper_dry test: every notebook on paper-dry and 01, 02, 05 with LoRA, into a temporary folder
	$(PY) -m pytest -q -m paper_dry

test-fast: setup ## unit tests only, no training or notebook runs
	$(PY) -m pytest -q -m "not slow and not paper_dry" -n $(TEST_JOBS) --dist loadfile

lint: setup ## ruff on library, tests, benchmarks and notebooks; notebooks committed clean, parameters in sync
	$(PY) -m ruff check lib tests benchmarks notebooks
	$(PY) -m unlearnkit.runner check-clean

benchmarks: setup ## print the speed figures (training loop vs bare loop, ...)
	@for b in benchmarks/*.py; do case $$b in *workbook_profile.py|*format_pretraining_probe.py|*seed_spread.py|*ou_guard.py) continue;; esac; \
	  echo "== $$b"; $(PY) $$b || exit 1; done

profile: setup ## where PROFILE's last run spent its time: seconds per notebook and station, CPU use (runs/PROFILE/seed-S/profile.json)
	$(PY) benchmarks/workbook_profile.py --profile $(PROFILE) $(if $(SEED),--seed $(SEED))

strip-notebooks: setup ## remove outputs from the source notebooks
	$(PY) -m unlearnkit.runner strip

sync-params: setup ## rewrite every notebook's parameters cell from notebooks/params/default.yaml
	$(PY) -m unlearnkit.runner sync-params

clean: ## remove run outputs, reports and generated data (keeps the environment)
	rm -rf runs report data/synthetic-* data/.synthetic-* data/stand-ins .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
