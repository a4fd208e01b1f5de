"""After the search: what a study sums up to (``summary``: its answer, counts, correlations), training the chosen trials
again (``retrain_plan``, ``retrain``), and a trial's files for ``best --export``
(``export``)."""
