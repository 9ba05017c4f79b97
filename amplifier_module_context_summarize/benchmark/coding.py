"""A coding agent's session whose working set keeps growing: new files, edits, test runs, commits, tickets.

``synth.SessionGenerator`` reads the same few hundred files over and over, so the working set a summary ends
with stops growing early. Here the agent keeps writing new modules (with functions and classes), editing
recent ones, running their tests (some fail, and a later run passes), committing, and naming tickets and
URLs: every kind of fact the working set lists grows with the session, which is what a compaction late in a
long session must not pay for.
"""

from __future__ import annotations

import json
import math

from .synth import SMALL, Message, SessionGenerator, Sizes, TextSource

FILES_PER_FOLDER = 12
RECENT_FILES = 40
"""Edits, reads and test runs pick among the newest files most of the time (an agent works on what it wrote)."""


class CodingSession(SessionGenerator):
    """Turns of a coding agent in Anthropic and OpenAI shapes; deterministic for a seed."""

    def __init__(self, sizes: Sizes = SMALL, seed: int = 1, text: TextSource | None = None) -> None:
        super().__init__(sizes, seed, text)
        self.files: list[str] = []
        self.failing: set[str] = set()
        self.calls = 0

    # ------------------------------------------------------------------ one turn

    def turn(self) -> list[Message]:
        """A user ask (sometimes naming a ticket or a URL), one to five tool rounds, a reply."""
        self.turns += 1
        openai = self.rng.random() < 0.5
        ask = self._say(self.sizes.user)
        if self.rng.random() < 0.3:
            ask = f"For PROJ-{self.turns}: {ask}"
        if self.rng.random() < 0.1:
            ask += f" See https://docs.example.com/guide/{self.turns}."
        out: list[Message] = [{"role": "user", "content": ask}]
        for _ in range(self.rng.randint(1, 5)):
            name, args, result = self._action()
            out += self._round(openai, name, args, result)
        reply = self._say(self.sizes.assistant)
        out.append({"role": "assistant", "content": reply if openai else [{"type": "text", "text": reply}]})
        return out

    # ------------------------------------------------------------------ actions

    def _action(self) -> tuple[str, dict[str, str], str]:
        """One tool call: (tool name, arguments, result text)."""
        roll = self.rng.random()
        if not self.files or roll < 0.2:
            return self._write()
        if roll < 0.4:
            return self._edit()
        if roll < 0.6:
            return self._test()
        if roll < 0.7:
            return self._commit()
        if roll < 0.85:
            path = self._pick()
            return "Read", {"file_path": path}, self._code(path, self.rng.randint(2, 6)) + self._output()
        path = self._pick()
        return "Bash", {"command": f"grep -n {self._name(path, 0)} {path}"}, self._output()

    def _write(self) -> tuple[str, dict[str, str], str]:
        n = len(self.files)
        path = f"src/pkg_{n // FILES_PER_FOLDER}/mod_{n}.py"
        self.files.append(path)
        return "Write", {"file_path": path, "content": self._code(path, self.rng.randint(2, 8))}, "File created."

    def _edit(self) -> tuple[str, dict[str, str], str]:
        path = self._pick()
        old = self._code(path, self.rng.randint(1, 2))
        new = self._code(path, self.rng.randint(1, 3), offset=self.rng.randint(0, 9))
        return "Edit", {"file_path": path, "old_string": old, "new_string": new}, "The file has been updated."

    def _test(self) -> tuple[str, dict[str, str], str]:
        path = self._pick()
        test = path.replace("src/", "tests/").replace("/mod_", "/test_mod_")
        if self.rng.random() < 0.3:
            self.failing.add(test)
            reason = f"AssertionError: {self._say((5, 15))}"
            body = f"FAILED {test}::test_{self._name(path, 1)} - {reason}\n1 failed, 4 passed"
        else:
            self.failing.discard(test)
            body = f"{self._output()}\n5 passed in 0.4s"
        return "Bash", {"command": f"pytest -q {test}"}, body

    def _commit(self) -> tuple[str, dict[str, str], str]:
        sha = f"{self.rng.getrandbits(28):07x}"
        return "Bash", {"command": f"git commit -am 'work on {self._pick()}'"}, f"[main {sha}] work\n 2 files changed"

    def _pick(self) -> str:
        if self.rng.random() < 0.8:
            return self.rng.choice(self.files[-RECENT_FILES:])
        return self.rng.choice(self.files)

    # ------------------------------------------------------------------ text

    def _name(self, path: str, k: int) -> str:
        return f"{path.rsplit('/', 1)[-1].removesuffix('.py')}_fn{k}"

    def _code(self, path: str, count: int, offset: int = 0) -> str:
        lines = []
        for k in range(offset, offset + count):
            kind = "class" if k % 4 == 3 else "def"
            suffix = ":" if kind == "class" else "(value):"
            lines += [f"{kind} {self._name(path, k)}{suffix}", f"    return {self._say((5, 20))!r}", ""]
        return "\n".join(lines)

    def _output(self) -> str:
        low, high = self.sizes.tool
        return self.text.text(int(math.exp(self.rng.uniform(math.log(low), math.log(high)))), self.rng)

    def _round(self, openai: bool, name: str, args: dict[str, str], result: str) -> list[Message]:
        self.calls += 1
        call_id = f"call_{self.calls}"
        if openai:
            function = {"name": name.lower(), "arguments": json.dumps(args)}
            call = {"id": call_id, "type": "function", "function": function}
            return [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": result},
            ]
        use = {"type": "tool_use", "id": call_id, "name": name, "input": args}
        return [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]},
        ]
