"""The cost model as a package: model (StageCost, the schema, predict), calibrate (measurements, fit, --calibrate), report
(the plan table and --check).  depthlab.plan is the command's face: it re-exports what callers use."""
