"""The working set: the section of the summary that keeps files, commands, errors, ids and URLs exactly.

Read it in this order; each module imports only those before it:

1. **Facts** (``facts.py``, with ``definitions.py`` and ``reads.py``): what one group records, extracted
   deterministically from the group as a view shows it: file actions, command and tool outcomes, ids, URLs,
   workdirs, definitions written or removed.
2. **Fold** (``fold.py``): how facts fold, group after group, into one ``WorkingSet`` of records keyed by
   spelling (a path as written, a command with its ``cd``); ``touched`` notes the keys each fold changed.
3. **Layout in a room** (``shelves.py`` → ``layout.py`` → ``ladder_tokens.py`` → ``section.py``): the
   records arranged by what they show as under the workspace root, newest first (shelves); every line the
   section can show and the ladder of folds and drops that shrinks it (layout); the size at every ladder step
   without writing it (ladder tokens); ``section.render(working_set, max_tokens, count_tokens)`` finds the
   fewest steps that fit.
4. **Over a history** (``index.py``): ``index_of(history)`` keeps each closed group's facts and the state
   folded to the furthest end asked for, so a compaction pays for its new groups, not the history.

The invariant that makes the incremental path safe: the text is a function of the groups folded and the
arguments alone. Folding is a left fold over groups (the index folds only the new ones; a nearer end folds
again from the kept facts), and the shelves redo exactly the keys the new groups touched, so a render from
kept state equals one from scratch, and a resumed session renders byte for byte the same. The tests that
hold it: ``tests/test_working_set.py::test_incremental_folding_equals_folding_from_scratch``,
``tests/test_shelves.py::test_shelves_kept_up_to_date_equal_the_inputs_derived_afresh``,
``test_a_render_from_kept_shelves_equals_one_from_fresh_shelves`` and
``test_the_estimate_at_every_ladder_step_is_the_sum_of_the_lines_it_would_write``.

May import: ``core`` only.
"""
