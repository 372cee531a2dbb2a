"""SAM and CloudFormation templates: an inline `Definition` reports in the template at its
line, a `DefinitionUri` file on its own URI at its line, and a `DefinitionString` (what
`cdk.out` templates hold) at its field, as `validate` reports the template."""

import subprocess

from conftest import SFN_LOCAL, change_doc, open_doc, published, uri_of
from lsprotocol import types

DEFINITION_FILE = """{
  "StartAt": "Work",
  "States": {
    "Work": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {
        "QueueUrl": "${QueueUrl}",
        "MessageBody": { "token.$": "$$.Task.Token" }
      },
      "TimeoutSeconds": 300,
      "HeartbeatSeconds": 300,
      "End": true
    }
  }
}
"""

TEMPLATE = """AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Queue:
    Type: AWS::SQS::Queue
  FromFile:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: statemachine/work.asl.json
      DefinitionSubstitutions:
        QueueUrl: !Ref Queue
  Inline:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Wait
        States:
          Wait:
            Type: Task
            Resource: arn:aws:states:::sqs:sendMessage.waitForTaskToken
            Parameters:
              QueueUrl: !Ref Queue
              MessageBody:
                token.$: $$.Task.Token
            TimeoutSeconds: 30
            HeartbeatSeconds: 45
            End: true
"""


def validate_github(cwd, name):
    out = subprocess.run(
        [SFN_LOCAL, "validate", "--format", "github", name],
        capture_output=True,
        text=True,
        cwd=cwd,
    ).stdout
    found = []
    for line in out.splitlines():
        head = line.partition("::")[2].partition("::")[0]
        fields = dict(p.split("=", 1) for p in head.partition(" ")[2].split(","))
        code = fields["title"].split(" in ")[0]  # "CODE in LogicalId"
        found.append((fields["file"], int(fields["line"]), int(fields["col"]), code))
    return sorted(found)


def places(uri_to_file, diagnostics_by_uri):
    return sorted(
        (uri_to_file[uri], d.range.start.line + 1, d.range.start.character + 1, d.code)
        for uri, diagnostics in diagnostics_by_uri.items()
        for d in diagnostics
    )


async def test_a_sam_template_reports_inline_and_definition_file_heartbeats_at_their_lines(
    client, tmp_path
):
    (tmp_path / "statemachine").mkdir()
    machine = tmp_path / "statemachine/work.asl.json"
    machine.write_text(DEFINITION_FILE)
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE)
    client.diagnostics.pop(uri_of(machine), None)
    in_template = await open_doc(client, template)
    in_file = await published(client, uri_of(machine))

    [inline] = in_template
    assert inline.message == "HeartbeatSeconds (45) must be smaller than TimeoutSeconds (30)"
    assert inline.range.start.line == TEMPLATE.split("\n").index("            HeartbeatSeconds: 45")
    [from_file] = in_file
    assert from_file.message == "HeartbeatSeconds (300) must be smaller than TimeoutSeconds (300)"
    assert from_file.range.start.line == 11
    # The fix applies in the template too.
    assert from_file.data and inline.data

    # Exactly validate's report of the template: same files, lines, columns and codes.
    files = {uri_of(template): "template.yaml", uri_of(machine): "statemachine/work.asl.json"}
    got = places(files, {uri_of(template): in_template, uri_of(machine): in_file})
    assert got == validate_github(tmp_path, "template.yaml")


async def test_the_definition_files_unsaved_text_is_what_the_template_checks(client, tmp_path):
    (tmp_path / "statemachine").mkdir()
    machine = tmp_path / "statemachine/work.asl.json"
    machine.write_text(DEFINITION_FILE)
    fixed = DEFINITION_FILE.replace('"HeartbeatSeconds": 300', '"HeartbeatSeconds": 60')
    # Open (unsaved, fixed) in the editor, then the template: the editor's text wins.
    await open_doc(client, machine, fixed)
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE.replace("HeartbeatSeconds: 45", "HeartbeatSeconds: 15"))
    client.diagnostics.pop(uri_of(machine), None)
    assert list(await open_doc(client, template)) == []
    assert list(await published(client, uri_of(machine))) == []


CDK_TEMPLATE = """{
  "Resources": {
    "Machine": {
      "Type": "AWS::StepFunctions::StateMachine",
      "Properties": {
        "DefinitionString": "{\\"StartAt\\":\\"A\\",\\"States\\":{\\"A\\":{\\"Type\\":\\"Pass\\",\\"Next\\":\\"Chek\\"},\\"Check\\":{\\"Type\\":\\"Succeed\\"}}}"
      },
      "Metadata": { "aws:cdk:path": "Stack/Machine/Resource" }
    }
  }
}
"""


async def test_a_cdk_out_template_reports_its_definition_string(client, tmp_path):
    (tmp_path / "cdk.out").mkdir()
    template = tmp_path / "cdk.out/Stack.template.json"
    template.write_text(CDK_TEMPLATE)
    [d] = await open_doc(client, template)
    assert d.code == "MISSING_TRANSITION_TARGET"
    assert d.message.startswith("in DefinitionString at /States/A/Next: ")
    assert 'did you mean "Check"?' in d.message
    assert d.message.endswith("(construct Stack/Machine/Resource)")
    assert d.range.start.line == 5
    files = {uri_of(template): "cdk.out/Stack.template.json"}
    got = places(files, {uri_of(template): [d]})
    assert got == validate_github(tmp_path, "cdk.out/Stack.template.json")


async def test_a_missing_definition_file_is_an_error_at_definition_uri(client, tmp_path):
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE.replace("work.asl.json", "gone.asl.json"))
    got = await open_doc(client, template)
    missing = [d for d in got if d.code == "UNREADABLE_DEFINITION"]
    assert [d.range.start.line for d in missing] == [8]


async def test_a_definition_file_edited_beside_its_template_is_checked_in_its_context(
    client, tmp_path
):
    (tmp_path / "statemachine").mkdir()
    machine = tmp_path / "statemachine/work.asl.json"
    machine.write_text(DEFINITION_FILE)
    alone = await open_doc(client, tmp_path / "statemachine/other.asl.json", DEFINITION_FILE)
    # On its own, ${QueueUrl} has no value: validate warns.
    assert "UNRESOLVED_SUBSTITUTION" in {d.code for d in alone}
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE)
    await open_doc(client, template)
    # Opened beside its template: the template gives QueueUrl, only the heartbeat is wrong.
    got = await open_doc(client, machine)
    assert [d.code for d in got] == ["SCHEMA_VALIDATION_FAILED"]
    fixed = DEFINITION_FILE.replace('"HeartbeatSeconds": 300', '"HeartbeatSeconds": 60')
    assert list(await change_doc(client, machine, fixed, 2)) == []


async def test_navigation_works_inside_a_templates_inline_definition(client, tmp_path):
    template = tmp_path / "template.yaml"
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine/work.asl.json").write_text(DEFINITION_FILE)
    await open_doc(client, template, TEMPLATE)
    lines = TEMPLATE.split("\n")
    start_at = lines.index("        StartAt: Wait")
    key = lines.index("          Wait:")
    doc = types.TextDocumentIdentifier(uri=uri_of(template))
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=types.Position(line=start_at, character=18))
    )
    assert (got.range.start.line, got.range.start.character) == (key, 10)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc, position=types.Position(line=key, character=11), new_name="Hold"
        )
    )
    edits = edit.changes[uri_of(template)]
    assert sorted(e.range.start.line for e in edits) == [start_at, key]
    assert all(e.new_text == "Hold" for e in edits)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc)
    )
    assert [(s.name, [c.name for c in s.children]) for s in symbols] == [("Inline", ["Wait"])]
