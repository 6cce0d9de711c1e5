"""Agent policy: what an agent's tool call or a harness hook does."""
