"""The profile: facts about the person, proposed by the model or read from a dependency parse (``floor``), kept
only when the person's own words say them (``gate``, ``statement``), and shown as About you (``about``)."""
