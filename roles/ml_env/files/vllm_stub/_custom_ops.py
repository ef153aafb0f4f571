"""Stand-in: any call means the CPU path changed and the stub no longer fits."""


def rotary_embedding(*args, **kwargs):
    raise NotImplementedError("vllm stand-in from ml_env: real vLLM is not installed")
