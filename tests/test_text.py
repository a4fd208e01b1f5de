"""The words of messages: a count and its noun agree (\"1 epoch\", not \"1 epochs\")."""

from __future__ import annotations

from nasmlcn._text import counted
from nasmlcn.search import describe_counts
from nasmlcn.search._results.retrain_plan import refit_protocol


def test_a_count_and_its_noun_agree() -> None:
    assert counted(1, "epoch") == "1 epoch"
    assert counted(3, "epoch") == "3 epochs"
    assert counted(0, "trial") == "0 trials"
    assert counted(2, "query", "queries") == "2 queries"
    assert counted(12_000, "image") == "12,000 images"
    assert refit_protocol(1).startswith("refit on training + validation for 1 epoch (")


def test_the_summary_says_repeats_in_words() -> None:
    one = describe_counts({"results": 8, "complete": 8, "pruned": 0, "repeats": 1})
    assert one.startswith("7 models: 7 complete, 0 pruned; ")
    assert "; 1 more proposal was a repeat of a model already trained or pruned (" in one
    two = describe_counts(
        {"results": 8, "complete": 6, "pruned": 2, "repeats": 2, "pruned_repeats": 1}
    )
    assert two.startswith("6 models: 5 complete, 1 pruned; ")
    assert "; 2 more proposals were repeats of models already trained or pruned (" in two
    counted = describe_counts({"results": 8, "complete": 8, "pruned": 0, "repeats": 1}, True)
    assert counted.startswith("8 results: 8 complete, 0 pruned; 1 result was a repeat")
