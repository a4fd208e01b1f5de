"""After the search: what a study sums up to (``summary``: its answer, counts,
correlations) and a trial's files for ``best --export`` (``export``). Training the
chosen trials again is :mod:`nasmlcn.search._retrain`."""
