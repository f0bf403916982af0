"""Forgetting that leaves no byte behind: choosing what goes (``plan``), erasing it with everything built from
it (``erase``), finding a text the way a person typed it (``matching``, ``folding``), what deleted rows leave on
disk (``scrub``), and the ledger a restored backup reads (``ledger``)."""
