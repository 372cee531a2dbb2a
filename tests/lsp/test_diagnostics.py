"""Diagnostics as `validate` gives them: every definition AWS rejected in the validation corpus
gets `validate`'s codes, messages and places; every one AWS accepted gets no error."""

import json
import subprocess

import pytest
from conftest import (
    CASES,
    SFN_LOCAL,
    change_doc,
    close_doc,
    definition_text,
    open_doc,
    position_of,
    published,
    uri_of,
)
from lsprotocol import types


def cases(*buckets):
    for bucket in buckets:
        for path in sorted((CASES / bucket).glob("*.json")):
            case = json.loads(path.read_text())
            text = definition_text(case)
            if text is not None:
                yield path.stem, case, text


REJECTED = [c for c in cases("validation") if c[1]["expected"].get("valid") is False]
ACCEPTED = [
    c
    for c in cases("validation", "pure", "aws_task")
    if c[1].get("expected", {}).get("valid", True) is not False
]


def validate_github(path, machine_type):
    """`validate --format github`'s diagnostics: (severity, line, column, code, message)."""
    out = subprocess.run(
        [SFN_LOCAL, "validate", "--format", "github", "--type", machine_type, str(path)],
        capture_output=True,
        text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        head, _, message = line.partition("::")[2].partition("::")
        severity, _, props = head.partition(" ")
        fields = dict(p.split("=", 1) for p in props.split(","))
        message = message.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
        found.append((severity, int(fields["line"]), int(fields["col"]), fields["title"], message))
    return found


def utf16_column(text, line, column):
    """A 1-based character column of a 1-based line as LSP counts it (0-based UTF-16 units)."""
    lines = text.split("\n")
    if line - 1 >= len(lines):
        return column - 1
    prefix = lines[line - 1][: column - 1]
    return sum(2 if ord(c) > 0xFFFF else 1 for c in prefix)


def test_the_corpus_has_rejected_and_accepted_definitions():
    assert len(REJECTED) >= 16
    assert len(ACCEPTED) >= 600


@pytest.mark.parametrize("name,case,text", REJECTED, ids=[c[0][-60:] for c in REJECTED])
async def test_a_rejected_definition_gets_validates_diagnostics_at_its_places(
    client, express, tmp_path, name, case, text
):
    machine_type = case.get("state_machine_type") or "STANDARD"
    path = tmp_path / "machine.asl.json"
    path.write_text(text)
    expected = validate_github(path, machine_type)
    assert any(e[0] == "error" for e in expected), "validate rejects it too"
    server = express if machine_type == "EXPRESS" else client
    got = await open_doc(server, path)
    assert len(got) == len(expected), (expected, got)
    for severity, line, col, code, message in expected:
        start = types.Position(line=line - 1, character=utf16_column(text, line, col))
        same = [
            d
            for d in got
            if d.range.start == start
            and d.code == code
            and message.split("\n")[0] == d.message.split("\n")[0]
            and d.severity
            == (
                types.DiagnosticSeverity.Error
                if severity == "error"
                else types.DiagnosticSeverity.Warning
            )
        ]
        assert same, f"validate: {code} at {line}:{col} {message!r}; lsp: {got}"


async def test_every_accepted_definition_publishes_no_error(client, express, tmp_path):
    wrong = []
    for name, case, text in ACCEPTED:
        server = express if case.get("state_machine_type") == "EXPRESS" else client
        path = tmp_path / f"{name[-80:]}.asl.json"
        got = await open_doc(server, path, text)
        errors = [d for d in got if d.severity == types.DiagnosticSeverity.Error]
        if errors:
            wrong.append((name, errors))
    assert not wrong, wrong


NEAR = """{
  "StartAt": "Start",
  "States": {
    "Start": { "Type": "Pass", "Next": "Chek" },
    "Check": { "Type": "Succeed" }
  }
}
"""


async def test_a_near_state_name_gets_a_did_you_mean_and_a_fix(client, tmp_path):
    path = tmp_path / "near.asl.json"
    [d] = await open_doc(client, path, NEAR)
    assert d.code == "MISSING_TRANSITION_TARGET"
    assert 'did you mean "Check"?' in d.message
    assert d.range.start == position_of(NEAR, '"Next"')  # where validate puts it
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(path)),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    [action] = actions
    assert action.title == 'Change to "Check"'
    [edit] = action.edit.changes[uri_of(path)]
    lines = NEAR.split("\n")
    assert lines[3][edit.range.start.character : edit.range.end.character] == '"Chek"'
    lines[3] = (
        lines[3][: edit.range.start.character]
        + edit.new_text
        + lines[3][edit.range.end.character :]
    )
    assert list(await change_doc(client, path, "\n".join(lines), 2)) == []


HEARTBEAT = """{
  "StartAt": "Work",
  "States": {
    "Work": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": { "QueueUrl": "q", "MessageBody": { "token.$": "$$.Task.Token" } },
      "TimeoutSeconds": 60,
      "HeartbeatSeconds": 60,
      "End": true
    }
  }
}
"""


async def test_heartbeat_not_below_timeout_gets_a_fix_that_moves_it_below(client, tmp_path):
    path = tmp_path / "heartbeat.asl.json"
    [d] = await open_doc(client, path, HEARTBEAT)
    assert d.message == "HeartbeatSeconds (60) must be smaller than TimeoutSeconds (60)"
    assert d.range.start.line == 8
    [related] = d.related_information
    assert related.location.range.start.line == 7
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(path)),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    [action] = actions
    [edit] = action.edit.changes[uri_of(path)]
    assert edit.new_text == "59"
    fixed = HEARTBEAT.replace('"HeartbeatSeconds": 60', '"HeartbeatSeconds": 59')
    assert list(await change_doc(client, path, fixed, 2)) == []


YAML = """StartAt: Start
States:
  Start:
    Type: Pass
    Next: Chek
  Check:
    Type: Succeed
"""


async def test_a_yaml_definition_gets_diagnostics_at_its_yaml_lines(client, tmp_path):
    path = tmp_path / "near.asl.yaml"
    path.write_text(YAML)
    expected = validate_github(path, "STANDARD")
    [d] = await open_doc(client, path)
    [(_, line, col, code, _)] = expected
    assert (d.range.start.line, d.range.start.character, d.code) == (line - 1, col - 1, code)
    assert d.range.start.line == 4
    assert 'did you mean "Check"?' in d.message


async def test_closing_a_document_clears_its_diagnostics(client, tmp_path):
    path = tmp_path / "closed.asl.json"
    assert len(await open_doc(client, path, NEAR)) == 1
    client.diagnostics.pop(uri_of(path), None)
    close_doc(client, path)
    assert list(await published(client, uri_of(path))) == []


async def test_a_misspelt_field_gets_a_fix_that_renames_it(client, tmp_path):
    text = NEAR.replace('"Next": "Chek"', '"Nxt": "Check"')
    path = tmp_path / "field.asl.json"
    got = await open_doc(client, path, text)
    [d] = [d for d in got if "did you mean" in d.message]
    assert d.message.startswith("Field 'Nxt' is not supported")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(path)),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    [action] = actions
    assert action.title == 'Rename to "Next"'
    [edit] = action.edit.changes[uri_of(path)]
    assert edit.new_text == "Next"
    assert edit.range.start == position_of(text, '"Nxt"', delta=1)
    assert list(await change_doc(client, path, NEAR.replace("Chek", "Check"), 2)) == []
