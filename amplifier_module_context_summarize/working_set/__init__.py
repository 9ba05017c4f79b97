"""The working set: the section of the summary that keeps files, commands, errors, ids and URLs exactly.

Read it in this order; each module imports only those before it:

1. **Facts** (``facts.py``, with ``definitions.py`` and ``reads.py``): what one group records, extracted
   deterministically from the group as a view shows it: file actions, command and tool outcomes, ids, URLs,
   workdirs, definitions written or removed. ``facts.py`` pairs each call with its result and asks the parts,
   each with one job: ``records.py`` (the records facts are made of), ``paths.py`` (what names a file),
   ``patches.py`` (files a patch or a change list names), ``shell.py`` (the shell parser: what a command line
   reads, writes and runs), ``mentions.py`` (ids and URLs) and ``outcomes.py`` (how a call ended).
2. **Fold** (``fold.py``): how facts fold, group after group, into one ``WorkingSet`` of records keyed by
   spelling (a path as written, a command with its ``cd``); ``touched`` notes the keys each fold changed.
3. **Shelves** (``shelves.py``): the records arranged as the layout reads them, under the workspace root and
   newest first per kind, redoing only the keys the newest folds touched.
4. **Layout in a room** (``layout.py``): the pieces that could show, each sized once in every shape; the
   ladder of folds and drops that shrinks the section; its size at every rung without writing it;
   ``render(working_set, max_tokens, count_tokens)`` finds the fewest rungs that fit.
5. **Over a history** (``index.py``): ``index_of(history)`` keeps each closed group's facts and the state
   folded to the furthest end asked for, so a compaction pays for its new groups, not the history.

The invariant that makes the incremental path safe: the text is a function of the groups folded and the
arguments alone. Folding is a left fold over groups (the index folds only the new ones; a nearer end folds
again from the kept facts); the shelves redo exactly the keys the new groups touched, so they equal shelves
derived afresh; the estimate at every rung is the sum of the lines that rung writes; and the cut of what
cannot fit only hides rungs no fitting step has. So a render from kept state equals one from scratch, and a
resumed session renders byte for byte the same. The tests that hold it:
``tests/test_working_set.py::test_incremental_folding_equals_folding_from_scratch``,
``tests/test_shelves.py::test_shelves_kept_up_to_date_equal_the_inputs_derived_afresh``,
``test_a_render_from_kept_shelves_equals_one_from_fresh_shelves``,
``test_the_estimate_at_every_ladder_step_is_the_sum_of_the_lines_it_would_write`` and
``test_cutting_what_cannot_fit_by_its_shortest_lines_renders_what_the_count_cut_renders``.

May import: ``core`` only.
"""
