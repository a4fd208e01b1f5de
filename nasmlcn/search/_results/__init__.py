"""After the search: reading results back (``results``), training the chosen trials
again (``retrain_plan``, ``retrain``), and a trial's files for ``best --export``
(``export``)."""
