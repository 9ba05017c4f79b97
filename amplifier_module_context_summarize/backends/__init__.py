"""Summarizer backends: the session's provider, Anthropic, OpenAI(-compatible)."""
