"""Reading session files (readers/session_io.py): JSON arrays and JSON lines, with their line numbers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from amplifier_module_context_summarize.readers.session_io import SessionFileError, load_messages, load_session

# ------------------------------------------------------------------------------- 8. loading a JSON array


def test_loading_a_json_array_is_linear(tmp_path: Path) -> None:
    def load(count: int) -> float:
        path = tmp_path / f"a{count}.json"
        path.write_text(
            "[\n" + ",\n".join(json.dumps({"role": "user", "content": f"m{i}"}) for i in range(count)) + "\n]"
        )
        start = time.perf_counter()
        messages = load_messages(path)
        assert len(messages) == count
        return time.perf_counter() - start

    load(1_000)
    small, large = min(load(6_000) for _ in range(3)), min(load(24_000) for _ in range(3))
    assert large < 8 * small + 0.05, f"{small:.3f}s for 6,000 messages, {large:.3f}s for 24,000"


def test_array_elements_keep_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[\n{"role": "user", "content": "a"},\n\n{"role": "user", "content": "b"},\n{"role": 3}\n]')
    loaded = load_session(path)  # read, the bad element skipped and named by its line (issue 35)
    assert [m["content"] for m in loaded.messages] == ["a", "b"] and [line for line, _ in loaded.skipped] == [5]
    path.write_text('[\n\n{"role": 3}\n]')
    with pytest.raises(SessionFileError, match=r"a\.json:3: "):
        load_messages(path)
