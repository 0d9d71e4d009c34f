"""Optimisers for M stacked nets, one module each (``sgd``, ``adam``), over the hand-written backward pass (``backprop``).

A stage imports the optimisers it trains with, so its code fingerprint covers those only.
"""
