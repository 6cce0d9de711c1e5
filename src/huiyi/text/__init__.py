"""Text handling shared by the index, search and memory: normalisation, tokens, snippets."""
