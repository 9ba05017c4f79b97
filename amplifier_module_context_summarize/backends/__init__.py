"""Summarizer backends: the session's provider, Anthropic, OpenAI(-compatible), behind one protocol.

Owns the protocol and its fault categories (``base``), the table of kinds and the summarizer settings
(``registry``), HTTP error classification, keys, and retries (``retrying``).

May import: ``core`` only (``registry`` imports each backend module by name when that kind is built).
"""
