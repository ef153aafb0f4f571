"""GPU hosts: their facts and checks, the GPU topology, the admission, the CUDA toolkit."""
