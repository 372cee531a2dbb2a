"""Navigation and edits over a definition's scopes: go to definition, references, rename,
the outline, and completion of state names, each kept to its Parallel branch or Map
processor.

MACHINE names a state Check in three scopes. AWS wants state names unique machine-wide, so
`validate` rejects it (DUPLICATE_STATE_NAME), but it is what a copied branch looks like while
it is being edited, and where keeping to a scope matters: navigation works on a definition
with errors."""

import json

from conftest import change_doc, open_doc, position_of, uri_of
from lsprotocol import types

MACHINE = """{
  "StartAt": "Check",
  "States": {
    "Check": { "Type": "Pass", "Next": "Fan" },
    "Fan": {
      "Type": "Parallel",
      "Branches": [
        {
          "StartAt": "Check",
          "States": {
            "Check": { "Type": "Pass", "Next": "Done" },
            "Done": { "Type": "Succeed" }
          }
        }
      ],
      "Catch": [ { "ErrorEquals": ["States.ALL"], "Next": "Check" } ],
      "Next": "Each"
    },
    "Each": {
      "Type": "Map",
      "ItemProcessor": {
        "StartAt": "Check",
        "States": { "Check": { "Type": "Pass", "End": true } }
      },
      "Next": "Choose"
    },
    "Choose": {
      "Type": "Choice",
      "Choices": [ { "Variable": "$.x", "IsPresent": true, "Next": "Check" } ],
      "Default": "Done"
    },
    "Done": { "Type": "Succeed" }
  }
}
"""


def doc(path):
    return types.TextDocumentIdentifier(uri=uri_of(path))


def offset(text, position):
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: position.line]) + position.character


def apply(text, edits):
    for edit in sorted(edits, key=lambda e: offset(text, e.range.start), reverse=True):
        start, end = offset(text, edit.range.start), offset(text, edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


async def opened(client, tmp_path, text=MACHINE, name="nav.asl.json"):
    path = tmp_path / name
    await open_doc(client, path, text)
    return path


async def test_go_to_definition_from_each_kind_of_target_lands_on_the_key(client, tmp_path):
    path = await opened(client, tmp_path)
    top_check = position_of(MACHINE, '"Check": {')
    # StartAt, the Catch's Next, the Choice rule's Next.
    for needle, nth, delta in [('"Check"', 0, 3), ('"Next": "Check"', 0, 12), ('"Next": "Check"', 1, 12)]:
        at = position_of(MACHINE, needle, nth, delta)
        assert at.line in (1, 15, 28)
        got = await client.text_document_definition_async(
            types.DefinitionParams(text_document=doc(path), position=at)
        )
        assert got.uri == uri_of(path)
        assert got.range.start == top_check, needle
    # StartAt inside the branch lands on the branch's own Check.
    inner = position_of(MACHINE, '"StartAt": "Check"', 1, delta=13)
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(path), position=inner)
    )
    assert got.range.start == position_of(MACHINE, '"Check": {', 1)
    # Default goes to the top-level Done, not the branch's.
    at = position_of(MACHINE, '"Default": "Done"', delta=13)
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(path), position=at)
    )
    assert got.range.start == position_of(MACHINE, '"Done": {', 1)


async def test_references_stay_in_the_scope(client, tmp_path):
    path = await opened(client, tmp_path)
    got = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(path),
            position=position_of(MACHINE, '"Check": {', 0, delta=2),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    lines = sorted(r.range.start.line for r in got)
    # The key, StartAt, the Catch's Next and the Choice rule's Next; none inside the scopes.
    assert lines == [1, 3, 15, 28]


async def test_rename_changes_every_reference_in_its_scope_and_none_outside(client, tmp_path):
    path = await opened(client, tmp_path)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc(path),
            position=position_of(MACHINE, '"Next": "Check"', delta=11),
            new_name="Verify",
        )
    )
    renamed = json.loads(apply(MACHINE, edit.changes[uri_of(path)]))
    assert renamed["StartAt"] == "Verify"
    assert list(renamed["States"])[0] == "Verify"
    assert renamed["States"]["Fan"]["Catch"][0]["Next"] == "Verify"
    assert renamed["States"]["Choose"]["Choices"][0]["Next"] == "Verify"
    branch = renamed["States"]["Fan"]["Branches"][0]
    assert branch["StartAt"] == "Check" and "Check" in branch["States"]
    processor = renamed["States"]["Each"]["ItemProcessor"]
    assert processor["StartAt"] == "Check" and "Check" in processor["States"]
    text = apply(MACHINE, edit.changes[uri_of(path)])
    codes = {d.code for d in await change_doc(client, path, text, 2)}
    assert codes == {"DUPLICATE_STATE_NAME"}, "every transition still lands"


async def test_rename_inside_a_map_processor_leaves_the_other_scopes(client, tmp_path):
    path = await opened(client, tmp_path)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc(path),
            position=position_of(MACHINE, '"Check": { "Type": "Pass", "End"', delta=2),
            new_name="Inner",
        )
    )
    renamed = json.loads(apply(MACHINE, edit.changes[uri_of(path)]))
    processor = renamed["States"]["Each"]["ItemProcessor"]
    assert processor == {"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "End": True}}}
    assert renamed["StartAt"] == "Check"
    assert renamed["States"]["Fan"]["Branches"][0]["StartAt"] == "Check"


async def test_the_outline_nests_states_under_branches_and_processors(client, tmp_path):
    path = await opened(client, tmp_path)
    got = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(path))
    )

    def tree(symbols):
        return [(s.name, tree(s.children or [])) for s in symbols]

    assert tree(got) == [
        ("Check", []),
        ("Fan", [("Branch 1", [("Check", []), ("Done", [])])]),
        ("Each", [("ItemProcessor", [("Check", [])])]),
        ("Choose", []),
        ("Done", []),
    ]
    assert got[1].detail == "Parallel"


async def completion_labels(client, path, text, needle, nth=0):
    at = position_of(text, needle, nth, delta=len(needle) - 1)
    got = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(path), position=at)
    )
    items = got.items if hasattr(got, "items") else got
    return sorted(i.label for i in items)


async def test_completion_in_an_empty_next_offers_exactly_the_states_of_its_scope(
    client, tmp_path
):
    text = MACHINE.replace('"Next": "Done" }', '"Next": "" }').replace(
        '"Next": "Choose"', '"Next": ""'
    )
    path = tmp_path / "empty.asl.json"
    await open_doc(client, path, text)
    # Inside the Parallel's branch: its own two states.
    assert await completion_labels(client, path, text, '"Next": "', 0 + 1) == ["Check", "Done"]
    # At the top level: the top level's five.
    top = await completion_labels(client, path, text, '"Next": "', 3)
    assert top == ["Check", "Choose", "Done", "Each", "Fan"]
    # In the Map's processor's StartAt: its one state.
    assert await completion_labels(client, path, text, '"StartAt": "', 2) == ["Check"]


async def test_yaml_definitions_navigate_too(client, tmp_path):
    text = "StartAt: Start\nStates:\n  Start:\n    Type: Pass\n    Next: End\n  End:\n    Type: Succeed\n"
    path = tmp_path / "nav.asl.yaml"
    assert list(await open_doc(client, path, text)) == []
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(path), position=position_of(text, "End", 0, 1))
    )
    assert got.range.start == types.Position(line=5, character=2)
    edit = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc(path), position=types.Position(line=5, character=3), new_name="Fin"
        )
    )
    assert apply(text, edit.changes[uri_of(path)]) == text.replace("End", "Fin")


HOVER = """{
  "StartAt": "Charge",
  "States": {
    "Charge": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": { "FunctionName": "charge", "Payload.$": "$" },
      "TimeoutSeconds": 30,
      "HeartbeatSeconds": 10,
      "Retry": [ { "ErrorEquals": ["States.TaskFailed"], "MaxAttempts": 2 } ],
      "Catch": [ { "ErrorEquals": ["States.ALL"], "Next": "Failed" } ],
      "Next": "Done"
    },
    "Failed": { "Type": "Fail", "Error": "Charge" },
    "Done": { "Type": "Succeed" }
  }
}
"""


async def hover_at(client, path, position):
    got = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(path), position=position)
    )
    return got.contents.value if got else None


async def test_hover_on_a_state_tells_its_type_transitions_error_handling_and_timeouts(
    client, tmp_path
):
    path = tmp_path / "hover.asl.json"
    assert list(await open_doc(client, path, HOVER)) == []
    card = await hover_at(client, path, position_of(HOVER, '"Charge": {', delta=3))
    assert card.startswith("**Charge**: [Task](https://docs.aws.amazon.com/")
    assert "Resource: `arn:aws:states:::lambda:invoke`" in card
    assert "Goes to: `Done`" in card
    assert "Retries `States.TaskFailed` (MaxAttempts 2)" in card
    assert "Catches `States.ALL` → `Failed`" in card
    assert "TimeoutSeconds: 30 · HeartbeatSeconds: 10" in card
    # The same card from a value naming the state.
    assert await hover_at(client, path, position_of(HOVER, '"Charge"', delta=3)) == card


async def test_hover_on_a_field_explains_it_and_links_the_guide(client, tmp_path):
    path = tmp_path / "hover.asl.json"
    await open_doc(client, path, HOVER)
    text = await hover_at(client, path, position_of(HOVER, '"HeartbeatSeconds"', delta=3))
    assert text.startswith("**HeartbeatSeconds**: ")
    assert "smaller than `TimeoutSeconds`" in text
    assert "(https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html)" in text
    assert await hover_at(client, path, position_of(HOVER, '"FunctionName"', delta=3)) is None
