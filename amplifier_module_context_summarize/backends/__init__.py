"""Summarizer backends: the session's provider, Anthropic, OpenAI(-compatible), native compaction, behind one protocol.

Owns the protocol and its fault categories (``base``), the table of kinds and the summarizer settings
(``registry``), the session's provider (``session``, with the providers found to need their streaming path
remembered across processes: ``provider_paths``), the direct backends (``anthropic_backend``,
``openai_backend``), HTTP error classification (``http_errors``), API keys read from the environment (``keys``),
retries (``retrying``), and the providers' own compaction (``native_backend``, with what it sends and reads back in
``native_wire``).

May import: ``core`` only (``registry`` imports each backend module by name when that kind is built).
"""
