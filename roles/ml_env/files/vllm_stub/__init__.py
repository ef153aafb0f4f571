"""Stand-in for vLLM, written by the ml_env role (ml_env_vllm_stub: true) on CPU hosts only.

sglang 0.5.23 imports vllm._custom_ops on its --device cpu path but never calls it there;
installing real vLLM would replace the pinned torch.
"""
