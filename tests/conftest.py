import sys
from pathlib import Path

import pytest

from amplifier_module_context_summarize.testing.redis_server import MISSING, RedisServer

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def redis_server(tmp_path: Path):
    """A real redis-server of our own on a free loopback port (killed, restarted at will); skips without one."""
    if RedisServer.binary() is None:
        pytest.skip(MISSING)
    with RedisServer.started(tmp_path / "redis") as server:
        yield server
