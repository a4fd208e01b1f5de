"""The run: :func:`~nasmlcn.search.run_search` here or with workers (``search``); claim
a trial, run it, tell the observers (``runner``), with the observer protocol
(``observer``), what a run reports (``outcome``), the samplers (``samplers``) and how
a worker waits (``waits``)."""
