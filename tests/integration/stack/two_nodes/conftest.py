"""One set-up of two nodes for every test here: node B joined once, for the move, the failover and the watchdog."""

import pytest

from replicating_nodes import replicating_nodes


@pytest.fixture(scope='package')
def two_nodes(stack):
    """Nodes A and B, each the other's standby (replicating_nodes.py); gone after the last test of this package."""
    with replicating_nodes(stack) as nodes:
        yield nodes
