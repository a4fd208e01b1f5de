"""From a configuration to an open study: everything checked up front (``setup``),
study recipes and their sweeps (``recipe``), the study created or loaded and its
identity checked, warm start included (``open_study``, ``warm``), a progress
callback as an observer (``progress``), and what a library call checks and quiets
before a run (``guards``)."""
