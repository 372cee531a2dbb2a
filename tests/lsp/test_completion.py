"""Completion beyond state names: a state's fields (by type and query language, also while a
key is half typed), `States.*` error names, intrinsic functions, and the optimized
integrations' resource ARNs."""

from conftest import open_doc, position_of, uri_of
from lsprotocol import types

TYPING = """{
  "StartAt": "Work",
  "States": {
    "Work": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": { "Payload.$": "States." },
      "Retry": [ { "ErrorEquals": [""] } ],
      "End": true,
      "Ti"
    }
  }
}
"""


async def labels(client, path, text, needle, nth=0, delta=None):
    at = position_of(text, needle, nth, len(needle) if delta is None else delta)
    got = await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri_of(path)), position=at)
    )
    items = got.items if hasattr(got, "items") else (got or [])
    return [i.label for i in items]


async def test_fields_of_a_task_while_its_key_is_typed(client, tmp_path):
    path = tmp_path / "typing.asl.json"
    await open_doc(client, path, TYPING)
    got = await labels(client, path, TYPING, '"Ti', delta=3)
    for want in ["TimeoutSeconds", "HeartbeatSeconds", "Catch", "ResultSelector", "Comment"]:
        assert want in got
    # Written already, another type's, or JSONata's: not offered.
    for unwanted in ["Resource", "Retry", "Choices", "Seconds", "Arguments", "Branches"]:
        assert unwanted not in got


async def test_fields_follow_the_query_language(client, tmp_path):
    text = TYPING.replace('"StartAt": "Work",', '"QueryLanguage": "JSONata",\n  "StartAt": "Work",')
    text = text.replace('      "Parameters": { "Payload.$": "States." },\n', "")
    path = tmp_path / "jsonata.asl.json"
    await open_doc(client, path, text)
    got = await labels(client, path, text, '"Ti', delta=3)
    assert "Arguments" in got and "Output" in got
    for unwanted in ["Parameters", "ResultSelector", "InputPath", "TimeoutSecondsPath"]:
        assert unwanted not in got


async def test_error_names_intrinsics_and_resource_arns(client, tmp_path):
    text = TYPING.replace('      "Ti"\n', "").replace('"End": true,', '"End": true')
    path = tmp_path / "values.asl.json"
    assert [d.code for d in await open_doc(client, path, text)] != []
    errors = await labels(client, path, text, '"ErrorEquals": ["', delta=17)
    assert "States.ALL" in errors and "States.HeartbeatTimeout" in errors
    assert all(e.startswith("States.") for e in errors)
    functions = await labels(client, path, text, '"States.', delta=8)
    assert "States.Format()" in functions and "States.UUID()" in functions
    assert len(functions) == 18
    with_resource = text.replace("arn:aws:states:::lambda:invoke", "")
    await open_doc(client, path, with_resource)
    arns = await labels(client, path, with_resource, '"Resource": "', delta=13)
    for want in [
        "arn:aws:states:::lambda:invoke",
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "arn:aws:states:::states:startExecution.sync:2",
        "arn:aws:states:::ecs:runTask.sync",
    ]:
        assert want in arns
    assert "arn:aws:states:::sqs:sendMessage.sync" not in arns


async def test_yaml_fields_while_a_key_is_typed(client, tmp_path):
    text = "StartAt: Wait\nStates:\n  Wait:\n    Type: Wait\n    End: true\n    Se\n"
    path = tmp_path / "typing.asl.yaml"
    await open_doc(client, path, text)
    got = await labels(client, path, text, "    Se", delta=6)
    assert "Seconds" in got and "SecondsPath" in got
    assert "Resource" not in got and "End" not in got
