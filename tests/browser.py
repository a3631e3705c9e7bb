"""Headless Chromium for the tests of the static site: open a page, read its console errors, evaluate JS.

Driven through Selenium and Debian's ``chromedriver`` (scripts/browser.sh installs both). The driver's
path is given to Selenium, so Selenium Manager never looks for (or downloads) a driver or a browser.
Selenium is imported only when a browser starts: this module is collected (for doctests) where it
is not installed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where Debian's packages put them; elsewhere, the first on PATH.
CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "chromedriver")

#: --no-sandbox: tests run as root in containers, where Chromium's sandbox cannot start.
#: --disable-dev-shm-usage: a container's small /dev/shm crashes renderers.
ARGUMENTS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")


def _which(candidates: tuple[str, ...]) -> str | None:
    return next((found for name in candidates if (found := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser can start here (what is missing, and how to get it), or None when one can."""
    lacking = [name for name, candidates in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER))
               if _which(candidates) is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        lacking.append("the Python package selenium (pip install -e '.[dev]')")
    if not lacking:
        return None
    return (f"missing {', '.join(lacking)}: scripts/browser.sh installs Debian's chromium and chromium-driver "
            "(as root)")


@dataclass(frozen=True)
class ConsoleEntry:
    """One message of the browser's console: its level (SEVERE, WARNING, INFO), source and text."""

    level: str
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.source}: {self.message}"


class Browser:
    """One headless Chromium; start it once per test module (a start costs about a second)."""

    def __init__(self, driver) -> None:
        self.driver = driver

    @classmethod
    def start(cls) -> "Browser":
        """Start Chromium through chromedriver, its console captured (raises when ``missing()``)."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        reason = missing()
        if reason:
            raise RuntimeError(reason)
        options = webdriver.ChromeOptions()
        options.binary_location = _which(CHROMIUM)
        for argument in ARGUMENTS:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=_which(CHROMEDRIVER))
        return cls(webdriver.Chrome(service=service, options=options))

    def quit(self) -> None:
        """Stop the browser and its driver."""
        self.driver.quit()

    def console(self) -> list[ConsoleEntry]:
        """The console messages since the last call (reading them empties the browser's buffer)."""
        return [ConsoleEntry(e["level"], e.get("source", ""), e["message"]) for e in self.driver.get_log("browser")]

    def errors(self) -> list[ConsoleEntry]:
        """The errors among ``console()``: uncaught exceptions, console.error, resources that failed to load."""
        return [entry for entry in self.console() if entry.level == "SEVERE"]

    def open(self, page: Path) -> list[ConsoleEntry]:
        """Load ``page`` (a file) and wait for its load event; the console errors it raised meanwhile."""
        self.console()  # what earlier pages left in the buffer is not this page's
        self.driver.get(page.resolve().as_uri())
        return self.errors()

    def js(self, script: str, *args: Any) -> Any:
        """The value of ``script`` (a function body: ``return …``) run in the current page with ``args``."""
        return self.driver.execute_script(script, *args)

    def click(self, css: str) -> list[ConsoleEntry]:
        """Click the first element matching ``css`` as a user would (at its centre); the errors that raised."""
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.CSS_SELECTOR, css).click()
        return self.errors()

    @property
    def url(self) -> str:
        """The address of the page the browser shows."""
        return self.driver.current_url
