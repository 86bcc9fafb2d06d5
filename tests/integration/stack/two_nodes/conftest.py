"""One set-up of two nodes for the planned move and the drain the follow controller follows."""

import pytest

from replicating_nodes import replicating_nodes


@pytest.fixture(scope='package')
def two_nodes(stack):
    """Nodes A and B, each the other's standby (replicating_nodes.py); gone after the last test of this package."""
    with replicating_nodes(stack) as nodes:
        yield nodes
