"""What the dream writes about the conversations: session gists, day → week → month digests and the narrative,
chunked to the model's context (``chunks``)."""
