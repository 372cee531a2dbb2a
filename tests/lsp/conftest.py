"""Clients of `sfn-local lsp` for the suite, and helpers to open documents and read answers."""

import asyncio
import json
import os
import pathlib

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SFN_LOCAL = os.environ["SFN_LOCAL_BIN"]
REPO = pathlib.Path(__file__).resolve().parents[2]
CASES = REPO / "tests/corpora/conformance/cases"

CONFIG = ClientServerConfig(server_command=[SFN_LOCAL, "lsp"])


async def start(client: LanguageClient, machine_type: str):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            initialization_options={"machineType": machine_type},
        )
    )


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, "STANDARD")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def express(lsp_client: LanguageClient):
    await start(lsp_client, "EXPRESS")
    yield
    await lsp_client.shutdown_session()


def uri_of(path: pathlib.Path) -> str:
    return path.resolve().as_uri()


async def published(client: LanguageClient, uri: str, timeout: float = 20.0):
    """The diagnostics the server publishes next for `uri` (the caller cleared the old ones)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while uri not in client.diagnostics:
        assert loop.time() < deadline, f"no diagnostics published for {uri}"
        await asyncio.sleep(0.002)
    return client.diagnostics[uri]


async def open_doc(client: LanguageClient, path: pathlib.Path, text: str | None = None):
    """Opens `path` (with `text`, else its contents) and returns what the server publishes."""
    uri = uri_of(path)
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="json" if path.suffix == ".json" else "yaml",
                version=1,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return await published(client, uri)


async def change_doc(client: LanguageClient, path: pathlib.Path, text: str, version: int):
    """Replaces the whole text of an open document and returns what the server publishes."""
    uri = uri_of(path)
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return await published(client, uri)


def close_doc(client: LanguageClient, path: pathlib.Path):
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(path))
        )
    )


def definition_text(case: dict) -> str | None:
    """A corpus case's definition, as tests/common's `definition_text` writes it."""
    if isinstance(case.get("definition_raw"), str):
        return case["definition_raw"]
    if "definition" not in case:
        return None
    text = json.dumps(case["definition"], indent=2, ensure_ascii=False)
    return text.replace(
        '"activity_arn"', '"arn:aws:states:us-east-1:111111111111:activity:activity_arn"'
    )


def position_of(text: str, needle: str, nth: int = 0, delta: int = 0) -> types.Position:
    """The position of the `nth` occurrence of `needle` (plus `delta` characters)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    before = text[:at]
    line = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1)
    return types.Position(line=line, character=column)
