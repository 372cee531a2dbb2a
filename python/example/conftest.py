"""The session's server gets the two state machines of this folder, the one of its SAM template
(with the template's parameter given) and a local program for the Charge state; everything else
comes from the sfn-local pytest plugin."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def sfn_local_options(sfn_local_options):
    sfn_local_options.definitions = {
        "Orders": HERE / "orders.asl.json",
        "Approval": HERE / "approval.asl.json",
        "Reminder": HERE / "reminder.asl.json",
    }
    sfn_local_options.templates = [HERE / "template.yaml"]
    sfn_local_options.substitutions = {"Greeting": "Hello"}
    sfn_local_options.tasks = [f"Orders:Charge={sys.executable} {HERE / 'charge.py'}"]
    return sfn_local_options
