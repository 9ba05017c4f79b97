"""The summarizer: one span of groups in, one checked summary out.

Owns the span summarizer and its validation (``span``: fragments, folding, rejection of empty, refused or
not-smaller answers), a span rendered and counted once so cutting it into fragments is linear (``fragments``),
the check that an answer stays with its span (``grounding``: invented names, loops,
forged markup), the prompt templates and the fenced transcript (``prompts``), the offline extractive
summary (``extractive``), the offline merge of tiers (``offline_merge``), what the guidance keeps gathered
into a summary's kept section (``kept``), a summary asked at the end of the view
the session last sent (``in_context``) and the summarizer's measured speed (``pace``).

May import: ``core``, ``working_set``, ``backends`` and ``config``.
"""
