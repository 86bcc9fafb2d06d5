"""Real output captured from OpenZFS, Nomad and democratic-csi, which the unit tests feed to the parsers."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / 'fixtures'
