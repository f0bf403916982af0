"""The companion's side: its mood, drives and reflections (``reflect``), checks that what it writes about itself
is in its own voice (``voice``), and the world-state proposals it makes (``world``)."""
