"""What a request is shown: the view of one history under one compaction state.

``request`` builds a request's view and fits its copy to the budget; ``tail`` keeps the verbatim tail between
requests; ``splice`` writes the ``[CONTEXT SUMMARY]`` message for a state; ``masking`` holds the groups' masked
forms and their token counts; ``fit`` holds the last rungs of fitting a copy (pins give way, texts clipped with
handles); ``losses`` accounts for what a view hides; ``carrier`` puts a native summary's signed block in the view for
a provider module that can send it.

May import: ``core``, ``working_set``, ``summarizer``, ``backends``, ``stores``, ``config`` and ``events``; within
``compaction``, nothing else.
"""
