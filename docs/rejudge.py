"""Judge the Mori & Ueda figure tables of one results folder with this checkout's checkers, and compare the verdicts
with another folder's ``claims.json`` (did successive halving move a verdict?).

    python docs/rejudge.py OLD_RESULTS NEW_RESULTS [CONFIG]

OLD_RESULTS' tables (``mori_ueda/figures/fig*.csv``, written by any earlier code) are re-judged by this code's
``depth_claims`` / ``lr_claims``, so a difference from NEW_RESULTS' verdicts comes from the tables (the rate choices and
the nets), not from the checkers.  Prints each row whose verdict differs, then the count.  Reads CSV and JSON only.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))

import pandas as pd  # noqa: E402

from depthlab import config as dlc  # noqa: E402
from depthlab import safeio  # noqa: E402
from depthlab.claims import Verdict  # noqa: E402
from depthlab.studies.mori_ueda.claims import depth_claims, lr_claims  # noqa: E402
from depthlab.studies.mori_ueda.specs import _variant  # noqa: E402


def main(argv: list[str]) -> None:
    if not 3 <= len(argv) <= 4:
        sys.exit("usage: python docs/rejudge.py OLD_RESULTS NEW_RESULTS [CONFIG]")
    old, new = Path(argv[1]), Path(argv[2])
    config = Path(argv[3]) if len(argv) > 3 else HERE.parent / "config" / "config.yaml"
    try:  # one line naming what is wrong, never a traceback
        figures = dlc.validate(dlc.read_yaml(config), memory=False)["studies"]["mori_ueda"]["figures"]
    except (dlc.ConfigError, OSError, KeyError) as e:
        sys.exit(f"CONFIG {config}: {e}")
    try:
        rows_new = safeio.read_json(new / "mori_ueda" / "claims.json")
    except (OSError, ValueError) as e:
        sys.exit(f"NEW {new}: no readable mori_ueda/claims.json ({e})")
    ours: dict[tuple, list[str]] = {}
    for r in rows_new if isinstance(rows_new, list) else []:
        try:
            key = (r["figure"], r["claim"], r["subject"], r["statement"])
            ours.setdefault(key, []).append(Verdict.from_dict(r).verdict)
        except (KeyError, TypeError, ValueError) as e:
            sys.exit(f"NEW {new}: a claims.json row without its keys ({type(e).__name__}: {e})")
    n = moved = 0
    for name in sorted(figures):
        table = old / "mori_ueda" / "figures" / f"{name}.csv"
        if not table.is_file():
            continue
        t = pd.read_csv(table)
        errs = [c for c in t.columns if "error" in c or "nmse" in c]
        if errs and t[errs].isna().all().all():  # a table whose errors are all NaN judges nothing: not "0 moved"
            sys.exit(f"OLD {table}: every error in the table is NaN: nothing to re-judge")
        rows = lr_claims(name, t) if name == "fig3" else depth_claims(name, _variant(figures[name]), t)
        for v in rows:
            n += 1
            theirs = ours.get((v.figure, v.claim, v.subject, v.statement))
            if theirs is None:
                print(f"no such row in {new}: {name} {v.claim} {v.subject} ({v.statement[:60]})")
            elif v.verdict not in theirs:
                moved += 1
                print(
                    f"moved: {name} {v.claim} {v.subject} ({v.statement[:60]}): {old.name} {v.verdict}, "
                    f"{new.name} {', '.join(theirs)}; {v.reason or ''}"[:400]
                )
    print(f"{n} rows re-judged, {moved} with another verdict")


if __name__ == "__main__":
    main(sys.argv)
