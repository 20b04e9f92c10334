"""Per-student variants: every student's own public traces, hidden traces, protocol seeds and
golden files.

    keys.variant_key(secret, student_id) -> key        # HMAC-SHA256 of the id, the course secret
    drawn.public_traces / drawn.hidden_traces           # a unit's traces drawn from a key
    drawn.protocols                                     # its protocols, with seeds drawn
    store.variant_unit(unit, key) -> Unit               # that variant's lab folder, hidden
                                                        # traces and golden, made once, cached
    roster.read_roster(path) -> ids                     # the class, checked before anything
    release.release_students(unit, ids, secret, out)    # one lab folder and zip per student

A unit opts in with unit.yaml ``variants`` (docs/ta.md, "Variants"). A variant is a ``Unit``
whose lab folder and traces folder are the variant's, so the release builder, ``golden``, the
grader and the hidden-data rules run on it unchanged.
"""
