"""The console under test: a real tms-api (with tokens), scheduler and executor on the
project's PostgreSQL and ZooKeeper, a real tms-console process, and Debian's chromium driven
by Playwright (never a downloaded browser)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tms.local.stack import LocalStack

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
ADMIN_TOKEN = "console-admin-token-0123456789"
READER_TOKEN = "console-reader-token-0123456789"
OWNER_TOKEN = "console-owner-token-0123456789"
# Where screenshots go: set TMS_CONSOLE_SCREENSHOTS=docs/console to refresh the docs' images.
SCREENSHOTS_ENV = "TMS_CONSOLE_SCREENSHOTS"


@dataclass
class ConsoleEnv:
    stack: LocalStack
    console: subprocess.Popen[bytes]
    url: str
    log: Path
    screenshots: Path

    def admin_stub(self) -> Any:
        import grpc

        from tms.v1 import tms_pb2_grpc

        channel = grpc.insecure_channel(self.stack.api_address)
        return tms_pb2_grpc.TableManagementServiceStub(channel), (
            ("authorization", f"Bearer {ADMIN_TOKEN}"),)


@pytest.fixture(scope="module")
def console_env(tms_home: Path) -> Iterator[ConsoleEnv]:
    root = Path(tempfile.mkdtemp(prefix="tms-console-"))
    tokens = root / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"name": "ops", "token": ADMIN_TOKEN, "roles": ["admin"]},
        {"name": "viewer", "token": READER_TOKEN, "roles": ["reader"]},
        {"name": "team-sales", "token": OWNER_TOKEN, "roles": ["owner"],
         "tables": ["sales.*"]},
    ]}))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS)
    stack = LocalStack(root, tms_home, api_args=["--tokens-file", str(tokens)],
                       scheduler_args=["--shard-settle-s", "0.5", "--poll-interval-s", "0.2"],
                       executor_args=["--poll-interval-s", "0.2"])
    proc = None
    log = root / "logs" / "console.log"
    try:
        stack.start_servers()
        stack.start_api()
        stack.start_scheduler()
        console = stack.start_console()
        assert console.proc is not None
        proc, url, log = console.proc, stack.console_url, console.log_path
        shots = Path(os.environ.get(SCREENSHOTS_ENV) or root / "screenshots")
        shots.mkdir(parents=True, exist_ok=True)
        yield ConsoleEnv(stack, proc, url, log, shots)
    finally:
        if proc is not None:
            print("tms-console log:\n" + log.read_text(errors="replace")[-20000:])
        stack.stop()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: scripts/setup installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Person:
    """One browser session: every dialog and page error is recorded; a test asserts none."""

    page: Any
    dialogs: list[str]
    errors: list[str]
    csp_violations: list[str]


def open_person(browser: Any) -> tuple[Any, Person]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    person = Person(page, [], [], [])

    def on_dialog(d: Any) -> None:
        person.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda e: person.errors.append(str(e)))
    page.on("console", lambda m: person.csp_violations.append(m.text)
            if "Content Security Policy" in m.text else None)
    return context, person


def sign_in(person: Person, url: str, token: str) -> None:
    page = person.page
    page.goto(f"{url}/")
    assert "/signin" in page.url
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")
