"""The rollout: capacity-safe batches, and the URLs of the workers and gateways it drains and rejoins."""
