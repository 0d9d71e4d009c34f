"""The cost model as a package: model (StageCost, the schema, predict), calibrate (measurements, fit, --calibrate), report
(the plan table and --check), shapes (a training step priced by its shape), command (``depthlab plan``).  Callers import
each name from the module that holds it; devices, resources and priorities live in :mod:`depthlab.placement`."""
