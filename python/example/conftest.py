"""The session's server gets the two state machines of this folder and a local program for the
Charge state; everything else comes from the sfn-local pytest plugin."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def sfn_local_options(sfn_local_options):
    sfn_local_options.definitions = {
        "Orders": HERE / "orders.asl.json",
        "Approval": HERE / "approval.asl.json",
    }
    sfn_local_options.tasks = [f"Orders:Charge={sys.executable} {HERE / 'charge.py'}"]
    return sfn_local_options
