"""The types the search's parts share (the floor under every other but the
configuration's): a checked setup (``setup``), what an evaluator takes and gives and
its protocol (``evaluation``), an objective and what counts as learning
(``objective``), the pruner's protocol (``pruner``), the observer protocol
(``observer``) and what a run reports (``outcome``)."""
