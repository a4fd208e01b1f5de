"""The engines of ``nasmlcn reproduce``: one module per measured result, each a
command-line program (``python -m nasmlcn.reproduce.engines.thesis_table --help``)
that a recipe in ``studies/`` names by its module name (``engine = "thesis_table"``).

``common`` holds what they share with the benchmark scripts of the repository's
``benchmarks/`` folder (progress lines, medians, paired intervals, table formats,
the fast exit); ``_training_runs`` what the training engines share. Nothing here is
imported by ``nasmlcn.reproduce`` itself: an engine runs in a process of its own.
"""
