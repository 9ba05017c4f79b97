"""Summarizer backends: the session's provider, Anthropic, OpenAI(-compatible), behind one protocol.

Owns the protocol and its fault categories (``base``), the table of kinds and the summarizer settings
(``registry``), the session's provider (``session``, with the providers found to need their streaming path
remembered across processes: ``provider_paths``), the direct backends (``anthropic_backend``,
``openai_backend``), HTTP error classification (``http_errors``), API keys read from the environment (``keys``),
and retries (``retrying``).

May import: ``core`` only (``registry`` imports each backend module by name when that kind is built).
"""
