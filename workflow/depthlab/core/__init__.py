"""Pure array math shared by every study: arrays in, arrays out; no paths, no xarray, no config.

mlp (nets, init schemes), losses, optim (SGD, Adam), trainer (the loop), lrsearch
(CV + Bayesian optimisation), kernels (arc-cosine / Appendix A / dot-product forms),
seeds (named random streams), device.
"""
