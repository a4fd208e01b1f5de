"""A search's description: :class:`~nasmlcn.search.SearchConfig` (``config``), its
fields' defaults, help and ranges (``setting``), and the run's limits (``limits``)."""
