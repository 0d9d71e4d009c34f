"""The kernel families of the spectra study: the order nu of each kernel's singularity at u = 1, and the kernels that
exist at one depth only (no numpy, no torch: the config rules and the registry read it)."""

NU = {"rf": 1.5, "ntk": 0.5, "rf_bias": 1.5, "ntk_bias": 0.5, "mu_ntk": 0.5, "mu_nngp": 1.5, "laplace": 0.5}
FIXED_DEPTH = {"rf_bias": 1, "ntk_bias": 1, "laplace": 0}  # kernels defined at one depth only
