"""Moving a person's history in and out: ChatGPT and Lyra imports, export, backup and restore.

Imports never call a chat or summary model: they embed in batches and insert
whole conversations per transaction; the dream cycle consolidates later, by
each conversation's real date.
"""
