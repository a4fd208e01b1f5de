"""The search-quality benchmark (``benchmarks/search_quality.py``), in parts: its
settings, the cache of trained results, the searches, the figures, the plot and the
report."""
