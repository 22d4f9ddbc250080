from pathlib import Path

import pytest


@pytest.fixture
def data_dir() -> Path:
    """Test data shipped with the project (never ../shared)."""
    return Path(__file__).parent / "data"
