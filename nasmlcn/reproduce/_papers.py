"""The seed papers a reproduction recipe may cite (``paper = "thesis"``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """A seed paper: its key in recipes, a short name and the full reference."""

    key: str
    short: str
    reference: str


PAPERS: dict[str, Paper] = {
    p.key: p
    for p in (
        Paper(
            "thesis",
            "MLCN thesis",
            "V. M. do Rosario, Accelerating capsule networks with lanes, PhD thesis,"
            " University of Campinas, 2021",
        ),
        Paper(
            "nascaps",
            "NASCaps",
            "A. Marchisio et al., NASCaps: A Framework for Neural Architecture Search to"
            " Optimize the Accuracy and Hardware Efficiency of Convolutional Capsule"
            " Networks, ICCAD 2020",
        ),
        Paper(
            "fastrcaps",
            "FasTrCaps",
            "A. Marchisio et al., FasTrCaps: An Integrated Framework for Fast yet Accurate"
            " Training of Capsule Networks, IJCNN 2020",
        ),
        Paper(
            "mlcn-jpdc",
            "MLCN (JPDC)",
            "V. M. do Rosario et al., Efficiency and scalability of Multi-Lane Capsule"
            " Networks (MLCN), Journal of Parallel and Distributed Computing, 2021",
        ),
    )
}
