"""The dream cycle itself: sensing the backlog and the drives, one pass (``cycle.Dreamer``), its calls to the
summary model (``scribe``), its schedule, its prompts, and its log in sentences a person reads."""
