"""A stand-in for IPython on the lent GPU machine (tests/device/carry_sglang.sh): sglang/utils.py
does `from IPython.display import HTML, display` when imported, for notebook helpers a headless
server never calls."""
__version__ = "0.0.0+stand-in"
