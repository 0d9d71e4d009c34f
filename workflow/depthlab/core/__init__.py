"""Pure array math shared by every study: arrays in, arrays out; no paths, no xarray, no config.

shapes (layer sizes, parameter counts, widths for a budget), mlp (nets, init schemes), metrics,
losses/ (one module per loss), optim/ (the hand-written backward pass, SGD, Adam), trainer (the
loop), grid (every lr x seed of a net as one batch), lrsearch (CV + Bayesian optimisation),
kernels (the arc-cosine step, Appendix A, dot-product forms), kernel_regression (CPU fused and
CUDA paths), tangent (the empirical NTK of a finite net), fused (numba kernels), seeds (named
random streams), device.
"""
