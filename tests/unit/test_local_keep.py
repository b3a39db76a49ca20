"""A local stack kept up for a person (tms.local.keep): fresh tokens of which only digests are
on disk and which the API's authenticator accepts in their roles; the lines that point the CLI
at the stack; the wait that ends on Ctrl-C (0) or when a process dies (1, naming its log)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tms.api.auth import Authenticator, Role
from tms.api.errors import ApiError
from tms.local.keep import cli_env, connection_text, keep_up, write_tokens_file
from tms.local.stack import LocalStack


def test_tokens_file_holds_digests_the_api_accepts(tmp_path: Path) -> None:
    tokens = write_tokens_file(tmp_path / "state" / "tokens.json")
    text = tokens.path.read_text()
    assert tokens.admin not in text and tokens.writer not in text
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    auth = Authenticator.from_file(tokens.path)
    admin = auth.authenticate([("authorization", f"Bearer {tokens.admin}")])
    writer = auth.authenticate([("authorization", f"Bearer {tokens.writer}")])
    assert admin.admin and not writer.admin
    assert writer.may(Role.WRITER) and not writer.may(Role.OWNER)
    with pytest.raises(ApiError):
        auth.authenticate([("authorization", "Bearer guessed")])
    again = write_tokens_file(tokens.path)  # fresh at every start
    assert again.admin != tokens.admin


class _Zk:
    hosts = "127.0.0.1:2181"


class _Proc:
    def __init__(self, code: int | None) -> None:
        self.returncode = code


class _Service:
    def __init__(self, name: str, code: int | None, log: Path) -> None:
        self.name, self.proc, self.log_path = name, _Proc(code), log

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None


def _stack(tmp_path: Path) -> LocalStack:
    stack = LocalStack(tmp_path, tmp_path / "home", api_port=50123,
                       database_url="postgresql://postgres@127.0.0.1:5/tms")
    stack.zookeeper = _Zk()  # type: ignore[assignment]
    return stack


def test_connection_text_has_the_address_token_and_env_lines(tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    tokens = write_tokens_file(tmp_path / "tokens.json")
    text = connection_text(stack, tokens, ("tms tables list",))
    assert cli_env(stack, tokens) == {"TMS_API": "127.0.0.1:50123", "TMS_TOKEN": tokens.admin}
    assert "  export TMS_API=127.0.0.1:50123" in text.splitlines()
    assert f"  export TMS_TOKEN={tokens.admin}" in text.splitlines()
    assert "  tms tables list" in text.splitlines()
    assert text.splitlines()[-1] == "Ctrl-C stops everything."


def test_keep_up_ends_when_a_process_dies_and_names_its_log(tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    scheduler = _Service("scheduler-0", None, tmp_path / "scheduler-0.log")
    stack.services = [_Service("api", None, tmp_path / "api.log"), scheduler]  # type: ignore[list-item]
    said: list[str] = []
    sleeps = 0

    def sleep(_s: float) -> None:
        nonlocal sleeps
        sleeps += 1
        if sleeps == 3:
            scheduler.proc.returncode = 1

    assert keep_up(stack, said.append, sleep) == 1
    assert said == [f"scheduler-0 exited (code 1); its log: {tmp_path / 'scheduler-0.log'}"]


def test_keep_up_ends_with_0_on_ctrl_c(tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    stack.services = [_Service("api", None, tmp_path / "api.log")]  # type: ignore[list-item]

    def sleep(_s: float) -> None:
        raise KeyboardInterrupt

    assert keep_up(stack, print, sleep) == 0
