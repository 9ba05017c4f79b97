#!/usr/bin/env python3
"""Does a real small model take a spilled output's preview for the whole? SmolLM2-135M-Instruct, old wording vs new.

Usage (not run by CI; the model half needs torch, transformers and gguf, e.g. in a separate venv)::

    python tools/smol_preview_probe.py cases /tmp/cases.json [--cases 12]     # with the module installed
    other-venv/bin/python tools/smol_preview_probe.py run /tmp/cases.json --gguf-dir DIR \
        [--gguf-file SmolLM2-135M-Instruct.Q4_1.gguf]

For each case a test log whose one failure (and its order id) sits in the middle is the tool result of a ``bash``
call; the user asks which order id failed. The tool result is either the old wording (the output clipped head and
tail to 1,500 characters with ``[... N characters clipped; recall with context_recall, handle …]`` in the middle,
what a view showed for an output over its room) or the new preview (``spill.preview.render``). Greedy decoding, 64
new tokens. An answer is counted as ``read`` when it calls or names a reading tool, the file or the handle; ``as
seen`` when it states an order id (the right one cannot be in what it was shown, so any id is invented);
``says unseen`` when it says the part is not shown without reading it; ``other`` otherwise (a 135M model often
continues the log).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SYSTEM = (
    "You are a coding agent. You can call tools by replying with one line: "
    'CALL read_file {"file_path": "...", "offset": N, "limit": N} or '
    'CALL context_recall {"operation": "fetch", "handle": "..."}. Otherwise answer the user.'
)
READ = re.compile(r"CALL|read_file|context_recall|\.txt|\bm3-[0-9a-f]{6}", re.IGNORECASE)
ORDER = re.compile(r"ORD-\d+")
UNSEEN = re.compile(r"not (?:been )?(?:shown|seen|visible|included)|cannot see|can't see|preview", re.IGNORECASE)


def case(i: int) -> tuple[str, str]:
    lines = 1_200 + 83 * i
    secret = f"ORD-{7000 + 37 * i}"
    body = [f"test_{n} ok" for n in range(lines)]  # short lines: a small prompt for a CPU run
    body[lines // 2 + i] = f"FAILED test_checkout: expected order id {secret}"
    return "\n".join(body), secret


def wordings(count: int) -> list[dict[str, str]]:
    """Each case's output worded both ways (the module's own code: run where it is installed)."""
    sys.path.insert(0, str(REPO))
    from amplifier_module_context_summarize.core.clip import clip_middle
    from amplifier_module_context_summarize.spill.preview import Spilled, render

    out = []
    for i in range(count):
        text, secret = case(i)
        path = f"/home/user/.cache/amplifier-context-summarize/spill/43e48b5a88eb8259/m3-3fa2b1-{i:010x}.txt"
        new = render(text, Spilled(path, "m3-3fa2b1", len(text) // 3, "context_recall"))
        old = clip_middle(text, 1_500, "; recall with context_recall, handle m3-3fa2b1")
        assert secret not in new and secret not in old
        out.append({"secret": secret, "old": old, "new": new})
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["cases", "run"])
    parser.add_argument("file", type=Path)
    parser.add_argument("--gguf-dir")
    parser.add_argument("--gguf-file", default="SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--cases", type=int, default=12)
    args = parser.parse_args(argv)
    if args.step == "cases":
        args.file.write_text(json.dumps(wordings(args.cases)))
        return 0
    cases = json.loads(args.file.read_text())
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.gguf_dir, gguf_file=args.gguf_file)
    model = AutoModelForCausalLM.from_pretrained(args.gguf_dir, gguf_file=args.gguf_file)
    model.eval()
    kinds = ("read", "as seen", "says unseen", "other")
    tally = {"old": dict.fromkeys(kinds, 0), "new": dict.fromkeys(kinds, 0)}
    for i, worded in enumerate(cases):
        for wording in ("old", "new"):
            result = worded[wording]
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Run the test suite and tell me which order id test_checkout failed with."},
                {"role": "assistant", "content": 'CALL bash {"command": "pytest -v"}'},
                {"role": "user", "content": f"Tool result (bash):\n{result}"},
            ]
            prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = tokenizer(prompt, return_tensors="pt")
            with torch.no_grad():
                out = model.generate(**ids, max_new_tokens=64, do_sample=False, pad_token_id=tokenizer.eos_token_id)
            answer = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True).strip()
            kind = (
                "read"
                if READ.search(answer)
                else "as seen"
                if ORDER.search(answer)
                else "says unseen"
                if UNSEEN.search(answer)
                else "other"
            )
            tally[wording][kind] += 1
            print(f"case {i:2d} {wording}: {kind:11s} | {answer[:110]!r}", flush=True)
    for wording, counts in tally.items():
        print(f"{wording}: " + ", ".join(f"{k} {v}/{len(cases)}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
