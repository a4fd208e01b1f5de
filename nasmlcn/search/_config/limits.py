"""The limits of a run: when it stops asking, and when it gives a random proposal
a chance (the config quotes them in ``--trials``' help; the loop keeps them)."""

from __future__ import annotations

REPEATS_IN_A_ROW = 25
"""Proposals in a row that were all repeats, after which a run stops: the sampler has
nothing new to propose (a converged search, or a space with few models)."""

FALLBACK_AFTER = 2
"""Repeats in a row after which a run's next proposal comes from a random sampler
(seeded as the trial's own), not the study's: a GP or TPE sampler that proposed a
model already trained twice in a row is likely to do so again."""

FAILURES_IN_A_ROW = 10
"""A worker stops after this many trials in a row failed (failures do not count
toward the trial target, so a space where every candidate fails would never end)."""
