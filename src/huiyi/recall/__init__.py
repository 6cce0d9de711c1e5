"""Recall over history: the tools agents call (`tools.Recall`) and the skeleton of what
compaction removed (`skeleton`)."""
