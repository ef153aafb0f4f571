"""The quality gate: a server's answers and logprobs against a recorded reference, alone and at load."""
