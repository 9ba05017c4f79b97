"""The core: what a conversation is, what a view may be, and what it costs. Pure functions and small values.

Owns the message shapes and their groups (``messages``), what each attachment block carries (``blocks``) and what
its binary parts cost (``media``: image sizes, PDF pages), token counting (``tokens``), what the orchestrator adds
on the wire and its calibration (``wire``), the request budget (``budget``), the stored history (``history``; its
messages kept frozen, out of the collector's walk: ``frozen``; its long sequences too: ``atoms``), the
frozen compaction state and the splice it shows (``state``), what a pin keeps of a message and how it shows
(``pins``), the rules every view obeys (``invariants``), the boundary plan (``plan``), clipping (``clip``), handles
to masked outputs (``handles``), secret redaction (``redact``), searching one text for thousands of strings
(``substrings``), writing a Markdown table (``tables``), counts in words (``words``), the clock that deadlines and
waited times read (``clock``: the running event loop's), the optional SDKs (``extras``), the user's guidance of the
summary being asked (``guidance``) and the configuration keys of the peer context modules (``peer_keys``).

May import: the standard library and third-party packages only, nothing else of this package. Everything
else builds on it.
"""
