"""Debian's chromium through Playwright, shared by the browser tests: the executable, one browser, and a page that
saves its screenshots under the test's tmp dir and tests/.screenshots/ (and fails the test if the page threw)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

SHOTS = Path(__file__).resolve().parent / ".screenshots"


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Debian's chromium is not installed: `make fixtures` installs it (apt-get install chromium)")


def launched_chromium() -> Iterator:
    """`yield from launched_chromium()` in a fixture: one headless browser, closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


def shooting_page(browser, request, tmp_path: Path, viewport=(1300, 900)) -> Iterator:
    """`yield from shooting_page(...)` in a fixture: a page with `page.shot(name)`; a page error fails the test."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))

    def shot(name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        for folder in (tmp_path, SHOTS):
            pg.screenshot(path=str(folder / f"{request.node.name}-{name}.png"), full_page=True)

    pg.shot = shot  # type: ignore[attr-defined]
    yield pg
    context.close()
    assert not errors, f"the page threw: {errors}"


def console_page(browser, request, tmp_path: Path, server, viewport=(1300, 900)) -> Iterator:
    """`yield from console_page(...)`: a shooting page that opened the URL `graphlemon console` prints, so this
    browser holds the console's token (an HttpOnly cookie) and may act, not only read."""
    for pg in shooting_page(browser, request, tmp_path, viewport):
        pg.goto(f"{server.url}/?token={server.settings.token}")
        pg.wait_for_selector("body[data-ready]", state="attached")
        yield pg
