"""The ML environment: the CUDA runtime its wheels need, FlashInfer's kernels, locks."""
