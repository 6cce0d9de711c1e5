"""Search over the index: layers that rank events, and the step that turns ranks into hits."""
