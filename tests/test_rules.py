"""The exercises' rules: declared in the masters, hidden from the sandbox, read from the answers.

The grading tests (test_grading.py) check the whole path with real submissions;
these check each layer on its own: parsing the masters, which rules can be hidden
(and the refusal of those that cannot), the read of the cells (what it flags and,
as important, what it leaves alone), the import blocker, and the rules test that
``grader.check`` runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import jupytext
import pytest
from conftest import ROOT

from course_tools import exercises, rules

MASTERS = exercises.masters(ROOT)
FORBID = ["torch", "course_utils", "nltk", "numpy.linalg.svd"]


def _used(cells: list[str], names=("f",), forbid=FORBID) -> set[tuple[str, str]]:
    found = rules.violations(list(enumerate(cells, 1)), "q1", forbid, list(names))
    return {(v.used, v.rule) for v in found}


# --------------------------------------------------------------------------
# the masters
# --------------------------------------------------------------------------
@pytest.mark.parametrize("master", MASTERS, ids=[m.stem for m in MASTERS])
def test_every_question_of_every_master_declares_its_rules(master):
    _, forbid = rules.parse_master_rules(jupytext.read(master))
    assert forbid, "no questions found"
    for question, names in forbid.items():
        assert {"torch", "course_utils"} <= set(names), question
        assert all(all(p.isidentifier() for p in n.split(".")) for n in names)


@pytest.mark.parametrize("master", MASTERS, ids=[m.stem for m in MASTERS])
def test_no_solution_breaks_its_own_rules(master):
    """The read flags nothing in any master's solution: no false alarm for an honest answer."""
    notebook = jupytext.read(master)
    _, forbid = rules.parse_master_rules(notebook)
    cells = [
        (i, c.source) for i, c in enumerate(notebook.cells, 1)
        if c.cell_type == "code" and not c.source.lstrip().startswith('""" # BEGIN TEST CONFIG')
    ]  # fmt: skip
    for question, names in forbid.items():
        roots = sorted({n for _, s in cells for n in rules.test_parameters(s) if n})
        assert rules.violations(cells, question, names, roots) == [], question


def test_bad_rules_in_a_master_are_named():
    def master(rules_yaml: str) -> dict:
        cell = {"cell_type": "raw", "source": f"# BEGIN QUESTION\nname: q1\n{rules_yaml}"}
        return {"cells": [cell]}

    with pytest.raises(ValueError, match="question q1: rules must be a mapping"):
        rules.parse_master_rules(master("rules: torch\n"))
    with pytest.raises(ValueError, match="forbid must be a list"):
        rules.parse_master_rules(master("rules:\n  forbid: torch\n"))
    with pytest.raises(ValueError, match="dotted name"):
        rules.parse_master_rules(master("rules:\n  forbid: ['torch nn']\n"))
    with pytest.raises(ValueError, match="one key, forbid"):
        rules.parse_master_rules(master("rules:\n  allow: [numpy]\n"))
    _, forbid = rules.parse_master_rules(master("rules:\n  forbid: [numpy.linalg.svd]\n"))
    assert forbid == {"q1": ["numpy.linalg.svd"]}


def test_otter_never_sees_the_rules_block():
    config = "name: ch\nrules:\n  forbid: [torch,\n    nltk]\ninit_cell: true\n"
    assert exercises._without_rules(config) == "name: ch\ninit_cell: true\n"


def test_rules_round_trip_and_what_is_hidden_or_refused():
    found = rules.Rules(
        "ch",
        {
            "q1": ["torch", "numpy.linalg.svd", "numpy", "nltk"],
            "q2": ["torch", "torch.nn", "numpy"],
        },
        {"q1": ["f"], "q2": ["g"]},
        ["abc"],
    )
    assert found.hidden() == ["torch"]  # numpy stays: the runner needs it
    # numpy (the runner's), a callable inside it, and nltk (one question only) cannot be hidden.
    assert found.unenforceable() == ["nltk", "numpy", "numpy.linalg.svd"]
    with pytest.raises(ValueError, match="cannot hide") as refused:
        found.check_enforceable("ch.md")
    assert "nltk (not every question forbids it); numpy (the sandbox's runner imports it)" in str(
        refused.value
    )
    rules.Rules("ch", {"q1": ["torch", "nltk"], "q2": ["nltk", "torch"]}).check_enforceable("ch")
    # Hidden in every question, but with nothing to mount empty, or needed by Python itself.
    for name, why in [
        ("scipy.linalg.svd", "not a module with a file or folder of its own"),
        ("nltk.word_tokenize", "not a module with a file or folder of its own"),
        ("collections", "a module of Python's standard library"),
        ("itertools", "a module of Python's standard library"),
    ]:
        with pytest.raises(ValueError, match=f"{name} \\({why}"):
            rules.Rules("ch", {"q1": [name], "q2": [name]}).check_enforceable("ch")
    rules.Rules("ch", {"q1": ["scipy.linalg"], "q2": ["scipy.linalg"]}).check_enforceable("ch")
    # A child under a hidden parent is hidden with it; a package this Python lacks, so does
    # the sandbox (it runs this Python).
    both = ["scipy", "scipy.linalg.svd", "no_such_package_here.f"]
    rules.Rules("ch", {"q1": both, "q2": both}).check_enforceable("ch")
    assert rules.Rules.from_json(found.to_json()) == found
    assert rules.Rules("ch", {}, {"q1": ["f"]}).hidden() == []
    with pytest.raises(ValueError, match="assignment"):
        rules.Rules.from_json("[]")


def test_a_master_with_a_rule_the_sandbox_cannot_hide_is_refused_before_anything_is_written(
    tmp_path,
):
    master = tmp_path / "ch99_rules.md"
    master.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "```{raw-cell}\n# ASSIGNMENT CONFIG\nname: ch99_rules\nrules:\n  forbid: [torch]\n```\n\n"
        "```{raw-cell}\n# BEGIN QUESTION\nname: q1\n```\n\n"
        "```{raw-cell}\n# BEGIN QUESTION\nname: q2\nrules:\n  forbid: [nltk]\n```\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    (out / "kept").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"nltk \(not every question forbids it\)"):
        exercises.assign(master, out)
    assert (out / "kept").is_dir()  # refused before the output folder was replaced


# --------------------------------------------------------------------------
# the read
# --------------------------------------------------------------------------
def test_an_honest_numpy_answer_is_left_alone():
    assert _used(["import numpy as np", "def f(x):\n    return np.tanh(x)"]) == set()
    # A forbidden import the answer does not use costs nothing (it fails in the sandbox).
    assert (
        _used(["import torch", "import numpy as np", "def f(x):\n    return np.tanh(x)"]) == set()
    )
    # Magics and shell commands a notebook commonly has. A shell command is never held
    # against the notebook: what it starts runs in the same sandbox, where a forbidden
    # package is not.
    common = (
        "%timeit 1 + 1\n!pip install numpy\n!pip install -q konlpy==0.6.0 > /dev/null\n"
        "!nvidia-smi\n!ls\n%pip install sacrebleu\n!java -version\n!wget -q https://x/y.txt\n"
        "!sudo apt-get -qq install -y fonts-nanum\n!rm -rf ~/.cache/matplotlib\n"
        "gpu = !!nvidia-smi\nfrom IPython.display import display, HTML\n"
        "%config InlineBackend.figure_format = 'retina'\n%load_ext autoreload\n"
        "%env CUDA_VISIBLE_DEVICES=0\n!awk '{print $1}' f.txt\nout = !wc -l {path}"
    )
    assert _used([common, "def f(x):\n    return x"]) == set()
    # Harmless standard modules and common notebook habits are not ways around the rules.
    habits = [
        "from types import SimpleNamespace\nimport threading, operator, gc\nx = operator.add\ngc.collect()",
        "import sys\nIN_COLAB = 'google.colab' in sys.modules",
        "%pdb off\n%matplotlib inline",
        "from operator import attrgetter\nrows = sorted([], key=attrgetter('count'))",
        "class Config:\n    eval = True",
        "class P:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n"
        "    def __repr__(self):\n        return self.__class__.__name__",
        "def g(tokens):\n    if not hasattr(tokens, '__len__'):\n        raise TypeError('x')",
        "from collections import namedtuple\nPair = namedtuple('Pair', 'a b')\n"
        "moved = [Pair(1, 2)][0]._replace(a=3)",
    ]
    assert _used([*habits, "def f(x):\n    return g(P(a=Config.eval))"]) == set()
    # The answer's own names that shadow a builtin are its own.
    assert (
        _used(["def getattr(a, b):\n    return a", "def f(x):\n    return getattr(x, x)"]) == set()
    )


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        # through a helper function, an alias of a submodule, and a local import
        (["import torch.nn.functional as F", "def g(x):\n    return F.relu(x)",
          "def f(x):\n    return g(x)"], ("torch.nn.functional.relu", "torch")),
        (["def f(x):\n    import torch\n    return torch.tanh(x)"], ("torch.tanh", "torch")),
        # a callable rule, by attribute, by alias and by from-import
        (["import numpy as np", "svd = np.linalg.svd", "def f(x):\n    return svd(x)"],
         ("numpy.linalg.svd", "numpy.linalg.svd")),
        (["from numpy.linalg import svd as s", "def f(x):\n    return s(x)"],
         ("numpy.linalg.svd", "numpy.linalg.svd")),
        (["import numpy as np", "def f(x):\n    return getattr(np.linalg, 'svd')(x)"],
         ("numpy.linalg.svd", "numpy.linalg.svd")),
        # through a class the answer builds on
        (["from course_utils.rnn import RNN", "class M(RNN):\n    pass", "def f(x):\n    return M()"],
         ("course_utils.rnn.RNN", "course_utils")),
        # the last definition of the answer counts, not an earlier draft
        (["def f(x):\n    return x", "import nltk\ndef f(x):\n    return nltk.edit_distance(x, x)"],
         ("nltk.edit_distance", "nltk")),
    ],
)  # fmt: skip
def test_the_read_follows_the_answer_to_what_it_uses(cells, expected):
    assert expected in _used(cells)


def test_an_earlier_draft_replaced_by_an_honest_answer_is_not_held_against_it():
    cells = ["import torch\ndef f(x):\n    return torch.tanh(x)", "def f(x):\n    return x"]
    assert _used(cells) == set()


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import numpy as np\ndef f(x):\n    return getattr(np.linalg, 'sv' + 'd')(x)",
         "getattr(…, 계산한 이름)"),
        ("import importlib\nm = importlib.import_module('to' + 'rch')", "importlib"),
        ("m = __import__('torch')", "__import__"),
        ("eval('1')", "eval"),
        ("import sys\nsys.modules['x'] = None", "sys.modules"),
        ("from sys import modules", "sys.modules"),
        ("import gc\ngc.get_objects()", "gc.get_objects"),
        ("import os\nos.sys.meta_path.pop(0)", "sys.meta_path"),
        ("import os\nm = os.sys.modules['builtins']", "sys.modules"),
        ("import pydoc\nf = pydoc.locate('scipy.special.factorial')", "pydoc"),
        ("import site\nsite.addsitedir('/tmp/x')", "site"),
        ("%%capture\nimport sys\nsys.path.append('/x')", "sys.path"),
        ("%time import sys; sys.meta_path.pop(0)", "sys.meta_path"),
        ("%timeit -n 1 -r 1 import sys; sys.modules.clear()", "sys.modules"),
        ("%%bash\npython -c 'import torch'", "%bash"),
        ("setattr(np, name, 1)", "setattr(…, 계산한 이름)"),
        ("import ctypes", "ctypes"),
        ("import pickle", "pickle"),
        ("import numpy as np\nnp._core", "numpy._core"),
        ("def f(x):\n    return f.__globals__", "__globals__"),
        ("def f(x):\n    return x.__class__.__mro__", "__mro__"),
        ("import os\nos.system('python -c 1')", "os.system"),
        ("ip = get_ipython()", "get_ipython()"),
        ("%run /tmp/a.py", "%run"),
        ("%%writefile /tmp/a.py\nimport torch", "%writefile"),
        ("getattr(object, '__subclasses__')", "getattr(…, '__subclasses__')"),
        ("import operator\nname = 'ta' + 'nh'\nf = operator.attrgetter(name)", "operator.attrgetter(…, 계산한 이름)"),
        ("from operator import methodcaller as m\nf = m(compute())", "operator.methodcaller(…, 계산한 이름)"),
        # Found by attackers' reviews (11-30):
        ("import functools, math\nF = functools.reduce(getattr, ['fact' + 'orial'], math)",
         "getattr (값으로 넘김)"),
        ("import functools, operator\ng = functools.reduce(operator.attrgetter, ['x'], 0)",
         "operator.attrgetter (값으로 넘김)"),
        ("from course_tools import rules\nrules.HiddenModules.find_spec = print", "course_tools"),
        ("import course_tools.rules as R", "course_tools.rules"),
        ("import IPython\nIPython.get_ipython().system('ls')", "IPython.get_ipython"),
        ("from IPython.utils.process import getoutput", "IPython.utils.process"),
        ("import os\nf = getattr(os, 'system')", "os.system"),
        ("import sys\nm = getattr(sys, 'modules')", "sys.modules"),
        ("import posix\nposix.system('ls')", "posix.system"),
        ("from os import *", "from os import *"),
        ("%automagic on", "%automagic"),
        ("%config InteractiveShell.automagic = True", "%config"),
        # Python IPython evaluates while it expands a shell command's or a magic's line:
        ("!true {vars(__import__('__main__')).update(f=1)}", "vars()"),
        ("out = !echo {eval('1')}", "eval"),
        ("%env X={__import__('os')}", "__import__"),
        ("%config InlineBackend.x = vars()", "vars()"),
        ("%alias_magic r run", "%alias_magic"),
        ("import operator, os\nf = operator.attrgetter('system')", "operator.attrgetter(…, 'system')"),
        ("import asyncio\np = asyncio.create_subprocess_exec", "asyncio.create_subprocess_exec"),
        ("import pexpect", "pexpect"),
        ("shell = get_ipython().system", "get_ipython()"),
        ("import os\nos.posix_spawnp('python3', ['python3'], {})", "os.posix_spawnp"),
        ("from os import execvpe", "os.execvpe"),
        ("from concurrent.futures import ProcessPoolExecutor", "concurrent.futures.ProcessPoolExecutor"),
    ],
)  # fmt: skip
def test_ways_around_the_rules_are_flagged(source, what):
    # At the top level of a cell, or inside the answer itself.
    cells = [source] if "def f" in source else [source, "def f(x):\n    return x"]
    assert (what, "escape") in _used(cells)


def test_a_magic_of_thousands_of_words_is_read_a_bounded_number_of_times_and_fails_closed(
    monkeypatch,
):
    """Trying every word of a ``%time`` line as the start of its code cost the square of the
    line: 8,000 words held a grading worker for minutes, outside the submission's clock."""
    import ast

    parses = []
    parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parses.append(1) or parse(*a, **k))
    long_line = "%time " + " ".join(["a"] * 8000)
    assert ("%time", "escape") in _used([long_line, "def f(x):\n    return x"])
    assert len(parses) <= rules.MAX_MAGIC_OPTION_WORDS + 10  # the cells, then one per attempt
    # Options before the code are still skipped, and the code behind them is read.
    options = "%timeit -n 1 -r 3 -o -q -p 3 -t -c import sys; sys.modules.clear()"
    assert ("sys.modules", "escape") in _used([options, "def f(x):\n    return x"])


def test_the_read_skips_cells_that_do_not_parse_and_questions_without_rules():
    assert _used(["def f(x):\n    return (", "def f(x):\n    return x"]) == set()
    assert _used(["import torch\ndef f(x):\n    return torch.tanh(x)"], forbid=[]) == set()


def test_the_notebooks_own_cells_are_trusted_and_an_edited_one_is_not():
    install = exercises.colab_install_cell(exercises.repository_url(ROOT))
    found = rules.Rules("ch", trusted=[rules.cell_digest(install)])
    assert found.provided_cells([(1, install + "\n  \n"), (2, "x = 1")]) == {1}
    assert found.provided_cells([(1, install + "\nimport ctypes")]) == set()


def test_the_messages_name_the_question_what_was_used_the_rule_and_the_place():
    v = rules.Violation("q3", "torch.nn.RNNCell", "torch", "셀 5, 2행")
    assert v.message() == (
        "규칙 위반(문제 3): 답이 쓸 수 없는 것을 씁니다 — `torch.nn.RNNCell` (셀 5, 2행); 규칙은 `torch`."
    )
    assert "규칙을 피해 가는 방법" in rules.Violation("q1", "gc", "escape").message()


# --------------------------------------------------------------------------
# hidden (in a fresh interpreter: the blocker changes sys.meta_path)
# --------------------------------------------------------------------------
def test_a_hidden_module_cannot_be_imported_and_says_which_rule(tmp_path):
    package = tmp_path / "hiddenlib"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "sub.py").write_text("VALUE = 2\n")
    code = textwrap.dedent(
        """
        import hiddenlib  # imported before: install_in_runner drops it from sys.modules
        from course_tools import rules
        rules.install_in_runner(["hiddenlib"])
        for name in ("hiddenlib", "hiddenlib.sub"):
            try:
                __import__(name)
                print("IMPORTED", name)
            except ModuleNotFoundError as error:
                print("hidden", error)
        import json  # what is not hidden still imports
        print("json", json.dumps(1))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT / 'src'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "IMPORTED" not in run.stdout and "json 1" in run.stdout
    message = "hidden 규칙: 이 연습 문제에서는 쓸 수 없어서 채점 환경에 없습니다 — `hiddenlib`"
    assert run.stdout.count(message) == 2


def test_hidden_names_map_to_the_files_the_sandbox_mounts_empty():
    found = dict((str(p), kind) for kind, p in rules.hidden_paths(["json", "course_utils.rnn"]))
    assert any(k == "dir" and p.endswith("/json") for p, k in found.items())
    assert any(k == "file" and p.endswith("course_utils/rnn.py") for p, k in found.items())
    assert rules.hidden_paths(["no_such_package_here"]) == []


def test_check_here_reads_the_kernels_history(tmp_path):
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(
            """
            from IPython.core.interactiveshell import InteractiveShell
            shell = InteractiveShell.instance()
            shell.run_cell("import numpy as np", store_history=True)
            shell.run_cell("def f(x):\\n    import json\\n    return json.dumps(x)", store_history=True)
            from course_tools.rules import check_here
            check_here("q1", ["numpy.linalg"], ["f"])
            print("honest ok")
            try:
                check_here("q1", ["json"], ["f"])
            except AssertionError as error:
                print("refused", error)
            # an answer cell that mentions grader.check in a comment is still read
            shell.run_cell('def g(x):  # grader.check("q2")\\n    import json\\n    return x',
                           store_history=True)
            try:
                check_here("q2", ["json"], ["g"])
            except AssertionError as error:
                print("refused too", error)
            """
        )],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "honest ok" in run.stdout
    assert "refused 규칙 위반(문제 1): 답이 쓸 수 없는 것을 씁니다" in run.stdout
    assert "`json.dumps` (셀 2, 3행)" in run.stdout
    assert "refused too 규칙 위반(문제 2)" in run.stdout


def test_the_student_notebook_shows_the_rules_and_checks_them(name="ch06_rnn"):
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    assert sources[3].startswith("**규칙**") and "`torch`" in sources[3]
    tests = notebook["metadata"]["otter"]["tests"]
    assert all("check_here(" in source for source in tests.values())


def test_a_local_name_is_not_the_notebooks_import_of_the_same_name():
    """A function's own variable named like a forbidden import elsewhere is its own (scopes)."""
    cells = [
        "from course_utils.transformer import attention",  # a scratch cell, graded elsewhere
        "import numpy as np\n"
        "def f(q, k):\n"
        "    attention = np.exp(q @ k.T)\n"
        "    return attention / attention.sum()\n",
        "def g(x):\n    return [attention for attention in x]\n",
        "h = lambda attention: attention + 1\n",
    ]
    assert _used(cells, names=("f", "g", "h")) == set()
    # ...but a local alias of a forbidden callable still counts.
    local = ["import numpy as np\ndef f(a):\n    svd = np.linalg.svd\n    return svd(a)"]
    assert ("numpy.linalg.svd", "numpy.linalg.svd") in _used(local)
    # ...and a global declared in the function is the notebook's.
    declared = ["from course_utils import rnn as attention",
                "def f(x):\n    global attention\n    return attention.RNN(x)"]  # fmt: skip
    assert ("course_utils.rnn.RNN", "course_utils") in _used(declared)


def test_a_way_around_inside_one_answer_counts_against_that_answer_only():
    cells = [
        "import numpy as np",
        "def other(x):\n    return getattr(x, 'a' + 'b')",
        "def f(x):\n    return np.tanh(x)",
    ]
    assert _used(cells) == set()
    assert ("getattr(…, 계산한 이름)", "escape") in _used(cells, names=("other",))
    # written at the top level, it counts against every question
    assert ("getattr(…, 계산한 이름)", "escape") in _used([*cells, "y = getattr(np, 'ta' + 'nh')"])


@pytest.mark.parametrize(
    "cells",
    [
        # a star import of a forbidden module
        ["from scipy.special import *", "def f(x):\n    return factorial(x)"],
        # a forbidden callable stored on a class, a dict, a list, or an allowed module
        ["import scipy.special as S\nclass Box:\n    pass", "Box.fact = S.factorial",
         "def f(x):\n    return Box.fact(x)"],
        ["import scipy.special as S\nd = {}\nd['f'] = S.factorial", "def f(x):\n    return d['f'](x)"],
        ["import scipy.special as S\nbag = []\nbag.append(S.factorial)", "def f(x):\n    return bag[0](x)"],
        ["import math\nimport scipy.special as S\nsetattr(math, 'fact', S.factorial)",
         "def f(x):\n    return math.fact(x)"],
        # a match capture
        ["import scipy.special as S\nmatch S.factorial:\n    case fact3:\n        pass",
         "def f(x):\n    return fact3(x)"],
        # the first iterable of a comprehension is the outer scope's
        ["from scipy.special import factorial as fact4",
         "def f(x):\n    return [fact4(x) for fact4 in (fact4,)][0]"],
        # the answer rebound later by a function's `global`
        ["from scipy.special import factorial\ndef impl(x):\n    return factorial(x)",
         "def f(x):\n    return -1", "def swap():\n    global f\n    f = impl\nswap()"],
        # an outside name changed from inside a function
        ["import scipy.special as S\nclass Box:\n    pass\ndef setup():\n    Box.fact = S.factorial\nsetup()",
         "def f(x):\n    return Box.fact(x)"],
        # code inside %%capture and %time
        ["%%capture\nfrom scipy.special import factorial as fact2", "def f(x):\n    return fact2(x)"],
        ["%time from scipy.special import factorial as fact2", "def f(x):\n    return fact2(x)"],
    ],
)  # fmt: skip
def test_what_a_student_reaches_indirectly_is_still_read(cells):
    """Forms a fresh-context attacker used to reach a forbidden name past the first read."""
    assert any(rule == "scipy" for _, rule in _used(cells, forbid=["scipy"])), _used(
        cells, forbid=["scipy"]
    )


def test_a_later_definition_replaces_an_earlier_forbidden_import():
    cells = ["from scipy.special import factorial", "def factorial(n):\n    return 1 if n < 2 else n * factorial(n - 1)",
             "def f(x):\n    return factorial(x)"]  # fmt: skip
    assert _used(cells, forbid=["scipy"]) == set()


def test_an_honest_scratch_cell_that_checks_against_a_library_does_not_cost_the_answer():
    cells = ["import numpy as np", "def f(x):\n    return np.tanh(x)",
             "import torch\nprint(np.allclose(f(1.0), torch.tanh(torch.tensor(1.0)).item()))"]  # fmt: skip
    assert _used(cells) == set()


def test_the_provided_cells_give_aliases_but_are_not_held_against_the_student():
    cells = ["import math\nimport sys\nif 'google.colab' in sys.modules: sys.path.append('x')",
             "def f(n):\n    return math.factorial(n)"]  # fmt: skip
    found = rules.violations(
        list(enumerate(cells, 1)), "q1", ["math.factorial"], ["f"], trusted=[1]
    )
    assert {(v.used, v.rule) for v in found} == {("math.factorial", "math.factorial")}


def test_deep_code_does_not_break_the_read():
    deep = "x = " + " + ".join(["1"] * 3000)
    assert _used([deep, "def f(x):\n    return x"]) == set()
