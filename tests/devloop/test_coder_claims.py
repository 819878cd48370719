"""A coder's reported files against what its commit changed."""

from __future__ import annotations

from graphlemon.stages.coder import CoderTurn, unmet_claims


def test_a_claim_is_met_by_the_file_or_by_a_file_under_the_claimed_folder():
    changed = ["src/game/board.py", "tests/test_board.py"]
    assert unmet_claims(["./src/game/board.py", "src/game", "src/game/", "", "."], changed) == []
    assert unmet_claims(["src/game/score.py", "src/gam", "src/game/board.py/x", "src/game/score.py"], changed) == [
        "src/gam", "src/game/board.py/x", "src/game/score.py",
    ]  # fmt: skip
    assert unmet_claims(["a.py"], []) == ["a.py"]


def test_only_an_unmet_claim_adds_a_note_for_the_next_attempt():
    met = CoderTurn(attempt=1, commit="c0ffee", files_changed=["a.py"], summary="s")
    assert met.claims_note() == ""
    unmet = CoderTurn(attempt=1, commit=None, files_changed=[], summary="s", claimed_unchanged=["a.py", "b <i>.py"])
    assert unmet.claims_note().startswith("Your previous answer reported changing a.py, b <i>.py, but its commit")
    assert CoderTurn.model_validate({"attempt": 1, "commit": None, "files_changed": ["x"], "summary": "s"})  # older records
