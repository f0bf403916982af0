"""Grounding: what the dream writes must be said in what it was built from (``checks``), and each kind's
sources as the store gives them (``sources``)."""
