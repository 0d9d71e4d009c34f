"""Training losses, one module each (``base``: the interface; ``mse``, ``logistic``, ``hinge``).

A stage imports the losses it trains with, so its code fingerprint covers those and no other:
editing the hinge loss reruns the fractal nets that use it, and no Mori & Ueda job.
"""
