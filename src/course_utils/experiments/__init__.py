"""The chapters' experiments: runs, splits, configurations and evaluation tables.

One module per chapter (``chNN_*.py``), called by the chapter and by its claims
test. Experiments import the model modules of :mod:`course_utils` and earlier
chapters' experiments; model modules never import experiments.
"""
