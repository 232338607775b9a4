# The two commands of the README:
#   make book   build the book into _build/html (sets everything up first)
#   make test   run every test, including the strict book build
# Other targets: pdf (the book as one PDF, _build/pdf/book.pdf), install (set
# everything up, build nothing), lab (JupyterLab on
# the course, with the course kernel), exercises (masters → student notebooks +
# autograder zips), grade, benchmarks, fp-paths (the claims under other floating-point
# paths), doctor, lint, clean.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MATHJAX_VERSION := 3.2.2
MATHJAX := book/_static/mathjax/tex-chtml.js
STRICT := -W -n --keep-going
BOOK_FLAGS := --builder html $(STRICT)
PDF := _build/pdf/book.pdf
PYTEST_FLAGS ?=
# `make test` runs the quick tests and the built site's on this many pytest-xdist workers,
# then the other slow ones (the grader with its time limits, the chapters' claims, some of
# which time themselves: each wants the cores to itself) one at a time. One of the two
# selecting nothing (PYTEST_FLAGS=-k …) is not a failure; both selecting nothing is.
TEST_WORKERS ?= 2


.PHONY: book pdf install lab test exercises check-exercises grade benchmarks fp-paths doctor lint clean prereqs

prereqs:
	@$(PYTHON) scripts/check_prereqs.py

$(STAMP): requirements.txt pyproject.toml scripts/check_prereqs.py
	@$(PYTHON) scripts/check_prereqs.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (NLP 강의)"
	touch $(STAMP)

# MathJax 3 is vendored from the npm package at build time (never committed,
# never loaded from a CDN), so the site renders equations offline.
$(MATHJAX):
	rm -rf build/mathjax && mkdir -p build/mathjax book/_static
	cd build/mathjax && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null
	tar -xzf build/mathjax/mathjax-$(MATHJAX_VERSION).tgz -C build/mathjax
	rm -rf book/_static/mathjax && cp -r build/mathjax/package/es5 book/_static/mathjax
	cp build/mathjax/package/LICENSE book/_static/mathjax/LICENSE

# Everything a student needs to run the notebooks, without executing the chapters.
install: $(STAMP)

# JupyterLab from the course's environment, opened on the exercise notebooks;
# its kernel "Python 3 (NLP 강의)" is the .venv's (installed by $(STAMP)).
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) $(if $(filter 0,$(shell id -u)),--allow-root,) notebooks/

book: $(STAMP) $(MATHJAX)
	@if [ -n "$$CI" ]; then rm -rf _build/.jupyter_cache; fi
	TQDM_DISABLE=1 $(BIN)/jupyter-book build . $(BOOK_FLAGS)

# The whole book as one PDF (_build/pdf/book.pdf): the single-page build, numbered and
# executed as the site (it reads the chapters' outputs from the jupyter cache that
# `make book` fills, or executes them itself), printed by headless Chromium with its
# equations typeset. `make test` makes it after the book.
pdf: $(STAMP) $(MATHJAX)
	TQDM_DISABLE=1 $(BIN)/jupyter-book build . --builder singlehtml $(STRICT)
	$(BIN)/python -m course_tools.pdf _build/singlehtml $(PDF)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts book/_ext
	$(BIN)/ruff format --check src tests benchmarks scripts book/_ext
	$(BIN)/mypy

test: book lint check-exercises
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then \
		$(MAKE) --no-print-directory pdf; \
	else echo "note: Chromium is not installed: make pdf and its test are skipped"; fi
	@status=0; empty=0; \
	$(BIN)/python -m pytest -m "not slow or book" -n $(TEST_WORKERS) --cov=course_utils --cov-report= \
		--durations=25 $(PYTEST_FLAGS) || { code=$$?; [ $$code -eq 5 ] && empty=$$((empty + 1)) || status=$$code; }; \
	$(BIN)/python -m pytest -m "slow and not book" --cov=course_utils --cov-append --cov-report=term-missing \
		--durations=25 $(PYTEST_FLAGS) || { code=$$?; [ $$code -eq 5 ] && empty=$$((empty + 1)) || status=$$code; }; \
	if [ $$empty -eq 2 ]; then echo "no test was selected"; exit 5; fi; \
	exit $$status

# Masters (exercises/*.md, with solutions and hidden tests) → committed
# student notebooks (notebooks/) and autograder zips (dist/, never committed).
exercises: $(STAMP)
	$(BIN)/python -m course_tools.exercises build

check-exercises: $(STAMP)
	$(BIN)/python -m course_tools.exercises check

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || (echo "usage: make grade SUBMISSIONS=folder CHAPTER=ch02_tokenization [OUT=grades.csv]"; exit 2)
	$(BIN)/python -m course_utils grade $(SUBMISSIONS) --chapter $(CHAPTER) --out $(or $(OUT),grades.csv)

benchmarks: $(STAMP)
	@for b in $(wildcard benchmarks/*.py); do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Every chapter again under another floating-point path of this CPU (torch's and MKL's
# AVX2 code, as a CPU without AVX-512 runs; PATHS=avx2,sse2 adds MKL's SSE2 branch),
# each path with its own training cache: lists the claims that would not hold on a CPU
# that adds in another order. Not part of `make test` (about 12 min a path); run it when
# a chapter's claims change.
fp-paths: $(STAMP)
	$(BIN)/python scripts/claims_on_other_fp_paths.py --paths $(or $(PATHS),avx2) $(CHAPTERS)

doctor: $(STAMP)
	$(BIN)/python -m course_utils doctor

clean:
	rm -rf _build dist build book/_static/mathjax
