"""How a search runs: :func:`~nasmlcn.search.run_search` (``search``), here or with
workers; the loop that proposes, runs and tells every trial (``loop``); one trial, claim
to tell (``trial``, with what a run's trials share), a model already trained
(``repeats``), the pruner's view of the trial (``pruning``) and the study's replicate
(``replicate``); many worker processes on one study (``pool``, with Ctrl-C and SIGTERM
across them; ``shares``: each worker's GPUs and threads); and what a run tells its
caller and who listens (``observer``)."""
