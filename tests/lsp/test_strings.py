"""Definitions written inside a template's strings (#48): what CDK synthesizes, a
`DefinitionString` that is an `Fn::Join` of JSON pieces. Every edit the server offers there is
mapped back through the string's escaping, so applying it leaves a template that parses and
validates; navigation and completion work inside it; a `fromFile` asset is checked in its
stack's context; a template that no longer parses gets validate's syntax error."""

import json
import shutil
import subprocess

from conftest import REPO, SFN_LOCAL, open_doc, position_of, published, uri_of
from lsprotocol import types
from test_navigation import apply

CDK_APP = REPO / "tests/cdk_app/cdk.out"
FROM_FILE = REPO / "tests/cdk_from_file/cdk.out"
STACK = "OrdersStack.template.json"


def validate(cwd, *args):
    return subprocess.run(
        [SFN_LOCAL, "validate", *args], capture_output=True, text=True, cwd=cwd
    )


def misspelt(tmp_path):
    """The CDK app's assembly, `"Next":"Ship"` misspelt inside the Fn::Join pieces."""
    shutil.copytree(CDK_APP, tmp_path / "cdk.out")
    template = tmp_path / "cdk.out" / STACK
    text = template.read_text().replace('\\"Next\\":\\"Ship\\"', '\\"Next\\":\\"Shipp\\"')
    assert "Shipp" in text
    template.write_text(text)
    return template, text


async def test_a_quick_fix_in_a_definition_string_keeps_the_template_whole(client, tmp_path):
    template, text = misspelt(tmp_path)
    [d] = [d for d in await open_doc(client, template) if d.code == "MISSING_TRANSITION_TARGET"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(template)),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d]),
        )
    )
    [action] = actions
    assert action.title == 'Change to "Ship"'
    [edit] = action.edit.changes[uri_of(template)]
    # It replaces the name inside the piece, escaped as the piece writes it: 9 characters,
    # not the whole DefinitionString (2,835 characters before).
    assert edit.new_text == '\\"Ship\\"'
    fixed = apply(text, [edit])
    json.loads(fixed)
    assert len(text) - len(fixed) == 1
    template.write_text(fixed)
    out = validate(tmp_path, f"cdk.out/{STACK}")
    assert out.returncode == 0, out.stdout + out.stderr


async def test_navigation_and_completion_work_inside_a_definition_string(client, tmp_path):
    shutil.copytree(CDK_APP, tmp_path / "cdk.out")
    template = tmp_path / "cdk.out" / STACK
    text = template.read_text()
    await open_doc(client, template)
    doc = types.TextDocumentIdentifier(uri=uri_of(template))
    on_next = position_of(text, '\\"Next\\":\\"Ship\\"', delta=len('\\"Next\\":\\"') + 1)
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=on_next)
    )
    key = position_of(text, '\\"Ship\\":{')
    assert (got.range.start.line, got.range.start.character) == (key.line, key.character)
    completions = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc, position=on_next)
    )
    items = completions.items if hasattr(completions, "items") else completions
    labels = {i.label for i in items}
    assert {"Charge", "Ship"} <= labels
    renamed = await client.text_document_rename_async(
        types.RenameParams(text_document=doc, position=on_next, new_name='Sh"ip')
    )
    after = apply(text, renamed.changes[uri_of(template)])
    definition = "".join(
        p if isinstance(p, str) else "${X}"
        for p in json.loads(after)["Resources"]["OrdersStateMachine6A3C2B1D"]["Properties"][
            "DefinitionString"
        ]["Fn::Join"][1]
    )
    assert json.loads(definition)["States"]["Charge"]["Next"] == 'Sh"ip'
    assert 'Sh"ip' in json.loads(definition)["States"]


async def test_a_from_file_asset_is_checked_as_validate_checks_it(client, tmp_path):
    shutil.copytree(FROM_FILE, tmp_path / "cdk.out")
    stack = tmp_path / "cdk.out/FilesStack.template.json"
    asset = next((tmp_path / "cdk.out").glob("asset.*.json"))
    in_stack = await open_doc(client, stack)
    # The asset is read (validate reads it): no NOT_CHECKED on the stack.
    assert "NOT_CHECKED" not in {d.code for d in in_stack}
    client.diagnostics.pop(uri_of(asset), None)
    got = await open_doc(client, asset)
    # Checked with its stack's substitutions: nothing unresolved, as validate says.
    assert "UNRESOLVED_SUBSTITUTION" not in {d.code for d in got}
    out = validate(tmp_path, "--format", "json", str(asset.relative_to(tmp_path)))
    reports = json.loads(out.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    assert sorted(d["code"] for r in reports for d in r["diagnostics"]) == sorted(
        d.code for d in got
    )


async def test_a_template_that_no_longer_parses_gets_validates_syntax_error(client, tmp_path):
    shutil.copytree(CDK_APP, tmp_path / "cdk.out")
    template = tmp_path / "cdk.out" / STACK
    broken = template.read_text().replace('"Resources": {', '"Resources": {{', 1)
    template.write_text(broken)
    got = await open_doc(client, template)
    assert [d.code for d in got] == ["INVALID_JSON_DESCRIPTION"]
    out = validate(tmp_path, "--format", "github", f"cdk.out/{STACK}")
    assert "INVALID_JSON_DESCRIPTION" in out.stdout
    line = int(out.stdout.split("line=")[1].split(",")[0])
    assert got[0].range.start.line + 1 == line
