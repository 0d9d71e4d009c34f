"""What would decide a row is chosen by its problem kinds, never by the words of its reason: a verdict carries
``problems`` (depthlab.claims.PROBLEM_KINDS), claims.json keeps them, and every study's ``to_decide`` dispatches on
them.  Rewording every reason of the smoke run moves no suggestion."""

import dataclasses
import json

import pytest

from depthlab import decide
from depthlab.claims import Test as ClaimTest, Verdict, all_of, exceeds, flagged, judge, unconverged
from depthlab.problems import PROBLEM_KINDS, Problem, join_problems
from depthlab.core.stats import Estimate
from depthlab.studies import get_study
from depthlab.study import ClaimsJob

# every phrase a suggestion was once chosen by (an injected reason must add none of them back)
OLD_PHRASES = (
    "inside the error bars; no error bar; did not converge; sits at the edge of its grid; fewer than two depths; "
    "scale; smaller flow rate; did not train; underfit; nothing learned; one trajectory per net; budget; "
    "max_iterations; edge of the rate grid, lower end, upper end"
)


def _reworded(reason: str) -> list[str]:
    return ["x", OLD_PHRASES, " ".join(reversed(reason.split())) or "x", reason.upper()]


def test_a_problem_keeps_its_kinds_through_joins_and_concatenation():
    a, b = Problem("inside the error bars: ...", "error_bars"), Problem("2 of 6 nets did not converge", "not_converged")
    assert isinstance(a, str) and a == "inside the error bars: ..." and a.kinds == ("error_bars",)
    assert (a + "; tail").kinds == ("error_bars",) and ("head; " + b).kinds == ("not_converged",)
    j = join_problems([a, "", "plain text", b])
    assert str(j) == f"{a}; plain text; {b}" and j.kinds == ("error_bars", "not_converged")
    with pytest.raises(ValueError, match="not one of"):
        Problem("text", "a kind nobody knows")


def test_judge_writes_the_kinds_of_every_problem_into_the_row():
    t = exceeds(Estimate(0.3, 0.2), 0.25, what="the gap")  # z = 0.25: inside the error bars
    assert t.holds is None and t.problem.kinds == ("error_bars",)
    v = judge("1", "s", "fig1", "x", t, "ev", [Problem("the rate sits at its grid's upper edge", "grid_high")])
    assert v.verdict == "inconclusive" and v.problems == ["error_bars", "grid_high"]
    assert Verdict.from_dict(json.loads(json.dumps(v.as_dict()))).problems == v.problems  # claims.json keeps them
    # a test that could not be applied, with a reason of no kind of its own: untestable
    assert judge("1", "s", "f", "x", None, "ev", why_none="no curve").problems == ["untestable"]
    # a decided row carries no problems; a bare failing part leaves the row inconclusive with no_error_bar
    assert judge("1", "s", "f", "x", True, "ev").problems == []
    bare = exceeds(Estimate(0.1, float("nan")), 0.2)
    assert judge("1", "s", "f", "x", all_of(bare), "ev").problems == ["no_error_bar"]
    with pytest.raises(ValueError, match="not one of"):
        Verdict("1", "s", "f", "x", None, "ev", reason="r", problems=["bogus"])


def test_the_shared_problem_builders_say_their_kinds():
    import pandas as pd

    t = pd.DataFrame({"converged": [True, False], "lr_flagged": [False, True], "lr_edge": ["", "lower"], "n": [1, 2]})
    assert unconverged(t, lambda r: f"n {r.n}").kinds == ("not_converged",)
    assert flagged(t, lambda r: f"n {r.n}").kinds == ("grid_low",)
    t.loc[1, "lr_edge"] = "upper"
    assert flagged(t, lambda r: f"n {r.n}").kinds == ("grid_high",)
    assert set(PROBLEM_KINDS) >= {"error_bars", "not_converged", "grid_low", "grid_high", "few_depths", "one_run"}


def test_rewording_every_reason_of_the_smoke_run_moves_no_suggestion(smoke_run):
    """Every inconclusive row of the smoke run: its suggestion recomputed from the row as claims.json keeps it, then
    with its reason reworded four ways (a placeholder, every phrase a suggestion was once chosen by, its words
    reversed, upper case): the same text and changes every time, and the same as the claims stage wrote."""
    n, kinds = 0, set()
    for path in sorted(smoke_run.results.glob("*/claims.json")):
        study = get_study(path.parent.name)
        spec = study.spec(smoke_run.config, "claims", ClaimsJob())
        rows = [Verdict.from_dict(r) for r in json.loads(path.read_text())]
        inc = [v for v in rows if v.kind == "claim" and v.verdict == "inconclusive"]
        for v in inc:
            assert v.problems, (path.parent.name, v.claim, v.reason)  # every inconclusive row says what kind
            kinds |= set(v.problems)
            want = {k: v.to_decide[k] for k in ("text", "changes")}
            for reason in [v.reason, *_reworded(v.reason)]:
                w = dataclasses.replace(v, reason=reason, to_decide=None)
                decide.annotate(study, spec, [w])
                assert {k: w.to_decide[k] for k in ("text", "changes")} == want, (path.parent.name, v.claim, reason)
            n += 1
    assert n >= 10 and len(kinds) >= 3, (n, kinds)


def test_a_kind_changes_the_suggestion_where_the_words_do_not():
    """The same row with and without a kind: the kind, not the reason, brings the suggestion (a check that could fail)."""
    study = get_study("fractals")
    import depthlab.config as dlc

    spec = study.spec(dlc.load("config/config.yaml"), "claims", ClaimsJob())
    plain = Verdict("M1", "s", "fig4", "x", None, "ev", reason="inside the error bars: did not converge", z=1.0)
    kinded = dataclasses.replace(plain, problems=["error_bars"])
    decide.annotate(study, spec, [plain, kinded])
    assert (
        plain.to_decide["changes"] == [] and kinded.to_decide["changes"][0]["key"] == "studies.fractals.training.seeds"
    )
    assert isinstance(ClaimTest(None, 0.0, 1.0, 0.0, None, Problem("p", "scale")).problem, Problem)
