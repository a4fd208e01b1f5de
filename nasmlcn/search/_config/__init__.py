"""A search's description: :class:`~nasmlcn.search.SearchConfig` (``config``), its
fields' defaults, help and ranges (``setting``), study recipes and their sweeps
(``recipe``)."""
