"""The summarizer: one span of groups in, one checked summary out.

Owns the span summarizer and its validation (``span``: fragments, folding, rejection of empty, refused or
not-smaller answers), the check that an answer stays with its span (``grounding``: invented names, loops,
forged markup), the prompt templates and the fenced transcript (``prompts``), the offline extractive
summary (``extractive``) and the offline merge of tiers (``offline_merge``).

May import: ``core``, ``working_set``, ``backends`` and ``config``.
"""
