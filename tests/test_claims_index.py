"""The claims index begins with one line per paper claim, counting its rows' verdicts (extensions apart)."""

from __future__ import annotations

from depthlab.claims import Verdict, render_index


def _v(claim, statement, holds, scope="paper", applicable=True):
    return Verdict(
        claim,
        statement,
        "fig1",
        "s",
        holds,
        "e",
        reason="" if holds is not None else "why",
        applicable=applicable,
        scope=scope,
    ).as_dict()


def test_the_index_has_a_per_claim_table_that_counts_the_four_states():
    rows = [
        _v("A4", "depth beats AdaGrad", True),
        _v("A4", "depth beats AdaDelta", False),
        _v("A4", "x", None),
        _v("A3", "rate", True),
        _v("A3", "rate", True),
        _v("A3", "rate", None, applicable=False),
        _v("A4", "beyond", True, scope="extension"),
    ]
    text = render_index([("acceleration", "Acceleration", rows)])
    lines = text.splitlines()
    i = lines.index("| claim | study | what it says | holds | does not hold | inconclusive | not applicable |")
    table = lines[i + 2 : i + 4]
    assert table == [
        "| A3 | acceleration | rate | 2 | 0 | 0 | 1 |",
        "| A4 | acceleration | depth beats AdaGrad; depth beats AdaDelta; x | 1 | 1 | 1 | 0 |",
    ]
    assert i < text.index("| study | claim | figure |")  # before the row-by-row table


def test_a_smoke_index_says_its_numbers_are_not_findings_and_the_smoke_config_asks_for_it():
    from pathlib import Path

    import depthlab.config as dlc
    from depthlab.claims import SMOKE_BANNER

    rows = [_v("A3", "rate", True)]
    assert SMOKE_BANNER in render_index([("acceleration", "Acceleration", rows)], smoke=True)
    assert SMOKE_BANNER not in render_index([("acceleration", "Acceleration", rows)])
    root = Path(__file__).resolve().parents[1]
    assert dlc.load(root / "config" / "smoke.yaml")["smoke"] is True
    assert dlc.load(root / "config" / "config.yaml")["smoke"] is False


def test_the_smoke_runs_index_opens_with_the_banner_and_the_per_claim_table(smoke_run):
    from depthlab.claims import SMOKE_BANNER

    text = (smoke_run.results / "claims.md").read_text()
    assert SMOKE_BANNER in text and "| claim | study | what it says |" in text
