"""The accuracy of a net that learned nothing on the fractal sets, below every module that needs it (the specs, the
stop rule, the claims), so none of them imports another for it."""

CHANCE = (
    0.5  # the fractal sets are balanced: half of each class (depthlab/studies/fractals/specs.py checks n_train, n_test)
)
