"""Claude plan usage-limit messages -> limit type and reset time (wording from real Claude Code reports)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphlemon.agents.usage_limit_signals import from_rate_limit_event, merge_quota, parse_usage_limit

NOW = datetime(2026, 7, 20, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, limit_type, resets_at",
    [
        (
            "You've hit your session limit · resets 12:50am (America/Los_Angeles)",
            "session",
            datetime(2026, 7, 21, 7, 50, tzinfo=UTC),
        ),
        (
            "You’ve hit your session limit · resets 4:10pm (America/Sao_Paulo)",
            "session",
            datetime(2026, 7, 20, 19, 10, tzinfo=UTC),
        ),
        ("You've hit your weekly limit · resets Jul 31, 2am (UTC)", "weekly", datetime(2026, 7, 31, 2, 0, tzinfo=UTC)),
        (
            "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)",
            "weekly",
            datetime(2026, 7, 26, 23, 0, tzinfo=UTC),
        ),
        ("You've hit your weekly limit · resets Jan 3, 9am (UTC)", "weekly", datetime(2027, 1, 3, 9, 0, tzinfo=UTC)),
        ("You've hit your limit · resets 11pm (America/Anchorage)", "session", datetime(2026, 7, 21, 7, 0, tzinfo=UTC)),
        (
            "You've hit your Opus limit · resets 3pm (Europe/Berlin)\n/upgrade to increase your usage limit.",
            "opus",
            datetime(2026, 7, 20, 13, 0, tzinfo=UTC),
        ),
        ("Opus weekly limit reached ∙ resets Oct 31, 9am", "opus", datetime(2026, 10, 31, 9, 0, tzinfo=UTC)),
        (
            "5-hour limit reached · resets 2am (America/Toronto) · /upgrade to Max 20x",
            "session",
            datetime(2026, 7, 21, 6, 0, tzinfo=UTC),
        ),
        ("Claude AI usage limit reached|1760004000", "session", datetime(2025, 10, 9, 10, 0, tzinfo=UTC)),
        ("You've hit your session limit", "session", None),
        ("You've hit your session limit · resets whenever (Mars/Olympus)", "session", None),
    ],
)
def test_limit_messages(text, limit_type, resets_at):
    hit = parse_usage_limit(text, NOW)
    assert hit is not None and hit.limit_type == limit_type and hit.resets_at == resets_at
    err = hit.error()
    assert err.limit_type == limit_type and err.resets_at == resets_at


@pytest.mark.parametrize(
    "text",
    ["", "all tests passed", "Approaching Opus usage limit", "the rate limit reached the server", "API Error: 500"],
)
def test_other_text_is_not_a_limit(text):
    assert parse_usage_limit(text, NOW) is None


def test_rate_limit_events_and_merging():
    rejected = {
        "type": "rate_limit_event",
        "rate_limit_info": {"status": "rejected", "rateLimitType": "seven_day_opus", "resetsAt": 1_900_000_000},
    }
    hit = from_rate_limit_event(rejected)
    assert hit.limit_type == "opus" and hit.resets_at == datetime.fromtimestamp(1_900_000_000, UTC)
    assert (
        from_rate_limit_event({"rate_limit_info": {"status": "allowed_warning", "rateLimitType": "seven_day"}}) is None
    )
    text = parse_usage_limit("You've hit your Opus limit · resets 3pm (UTC)", NOW)
    merged = merge_quota(hit, text)
    assert merged.resets_at == hit.resets_at and merged.message.startswith("You've hit")
    assert merge_quota(None, text) is text and merge_quota(None, None) is None
