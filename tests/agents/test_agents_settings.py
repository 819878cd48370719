"""Settings from the environment, the price table, the budget arithmetic, pickling of the typed errors."""

from __future__ import annotations

import pickle

import pytest

from graphlemon.agents import AgentSettings
from graphlemon.agents.budget import budget_status, estimate_tokens, preflight
from graphlemon.agents.pricing import FALLBACK, cost_usd, price_for
from graphlemon.agents.settings import DEFAULT_MODELS
from graphlemon.errors import BudgetExceeded, ClassifierBlocked, GraphLemonError, QuotaExceeded
from graphlemon.models import BudgetConfig, UsageRecord


def test_settings_from_env():
    env = {
        "GRAPHLEMON_EXECUTOR": "anthropic",
        "GRAPHLEMON_MODEL_BUG_TRIAGER": "claude-opus-4-1",
        "GRAPHLEMON_MAX_TURNS": "7",
        "ANTHROPIC_API_KEY": "sk-ant-env-key-123456",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "GRAPHLEMON_RETRY_BASE_DELAY_S": "0.01",
    }
    s = AgentSettings.from_env(env)
    assert (s.backend, s.max_turns, s.base_url, s.retry_base_delay_s) == ("anthropic", 7, "http://127.0.0.1:9", 0.01)
    assert s.model_for("bug-triager") == "claude-opus-4-1" and s.model_for("tester") == "claude-sonnet-5-5"
    assert "sk-ant-env" not in repr(s) and s.api_key.get_secret_value() == "sk-ant-env-key-123456"
    one = AgentSettings.from_env({"GRAPHLEMON_MODEL": "claude-haiku-4-5"})
    assert {one.model_for(r) for r in ("planner", "coder", "validator")} == {"claude-haiku-4-5"}
    assert AgentSettings.from_env({}, backend="claude_code").backend == "claude_code"
    with pytest.raises(GraphLemonError, match="max_turns"):
        AgentSettings.from_env({"GRAPHLEMON_MAX_TURNS": "many"})
    with pytest.raises(GraphLemonError, match="backend"):
        AgentSettings.from_env({"GRAPHLEMON_EXECUTOR": "gpt"})


def test_one_price_table():
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("claude-opus-4-1-20250805").output == 75.0 and price_for("claude-opus-4-5").output == 25.0
    assert price_for("some-future-model") == FALLBACK
    assert cost_usd("claude-sonnet-4-5", input_tokens=1_000_000, output_tokens=1_000_000) == 18.0
    assert cost_usd("claude-sonnet-4-5", cache_write_tokens=1_000_000, cache_read_tokens=1_000_000) == 3.75 + 0.3
    assert cost_usd("scripted", input_tokens=10**9) == 0.0
    # the current lineup (the defaults): Opus 5.5 reads its cache at $0.20, not 0.1x its $4 input
    assert price_for("claude-opus-5-5") == (4.0, 20.0, 0.2) and price_for("claude-opus-5-20260724").input == 5.0
    assert cost_usd("claude-opus-5-5", cache_write_tokens=1_000_000, cache_read_tokens=1_000_000) == 5.0 + 0.2
    assert cost_usd("claude-sonnet-5-5", input_tokens=1_000_000, output_tokens=1_000_000) == 12.0
    assert all(price_for(model) != FALLBACK for model in DEFAULT_MODELS.values())


def test_budget_fold_and_preflight(project):
    ledger = project.ledger
    assert (
        budget_status(ledger, "t") is None
        and preflight(ledger, "t", model="m", input_tokens=10**9, max_output_tokens=100) == 100
    )
    ledger.append(BudgetConfig(task_id="t", limit_type="token_count", limit_value=100))
    ledger.append(BudgetConfig(task_id="t", limit_type="token_count", limit_value=1000))  # the latest wins
    for n in (100, 200):
        ledger.append(
            UsageRecord(
                call_id=f"c{n}",
                task_id="t",
                role="coder",
                model="claude-sonnet-4-5",
                executor="anthropic",
                input_tokens=n,
                output_tokens=50,
            )
        )
    ledger.append(
        UsageRecord(call_id="other", task_id="u", role="coder", model="m", executor="anthropic", input_tokens=10**6)
    )
    status = budget_status(ledger, "t")
    assert (status.used_tokens, status.remaining) == (400, 600)
    assert preflight(ledger, "t", model="claude-sonnet-4-5", input_tokens=500, max_output_tokens=8192) == 100
    with pytest.raises(BudgetExceeded):
        preflight(ledger, "t", model="claude-sonnet-4-5", input_tokens=590, max_output_tokens=8192)
    assert estimate_tokens("abc" * 300) >= 300 and estimate_tokens("贪吃蛇" * 100) >= 300


def test_typed_errors_pickle_with_their_fields():
    from datetime import UTC, datetime

    errors = [
        QuotaExceeded("weekly", datetime(2026, 8, 1, tzinfo=UTC)),
        BudgetExceeded("over", task_id="t", used=5),
        ClassifierBlocked("blocked", consecutive=3, total=3),
    ]
    for err in errors:
        copy = pickle.loads(pickle.dumps(err))
        assert type(copy) is type(err) and copy.code == err.code and copy.context == err.context
    assert pickle.loads(pickle.dumps(errors[0])).resets_at == datetime(2026, 8, 1, tzinfo=UTC)
    assert errors[0].to_dict()["limit_type"] == "weekly"


def test_turn_limits_are_per_role_and_one_variable_sets_them_all():
    default = AgentSettings.from_env({})
    assert default.max_turns_for("coder") == 50 and default.max_turns_for("bug-triager") == 25
    tuned = AgentSettings.from_env({"GRAPHLEMON_MAX_TURNS_CODER": "12"})
    assert tuned.max_turns_for("coder") == 12 and tuned.max_turns_for("tester") == 40
    one = AgentSettings.from_env({"GRAPHLEMON_MAX_TURNS": "7"})
    assert {one.max_turns_for(r) for r in ("planner", "coder", "validator")} == {7}
    with pytest.raises(GraphLemonError, match="turn limits must be 1..500"):
        AgentSettings.from_env({"GRAPHLEMON_MAX_TURNS_TESTER": "0"})
