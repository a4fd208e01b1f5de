"""The built-in search spaces (``*.toml``), installed as ``nasmlcn.search_spaces``.

Data only: :mod:`nasmlcn.search.spaces` reads these files through
``importlib.resources``; ``README.md`` here says how to copy and edit one.
"""
