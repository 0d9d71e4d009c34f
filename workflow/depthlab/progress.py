"""The quiet terminal of a run (``depthlab.progress``): the code lives in :mod:`snakemake_logger_plugin_depthlab.terminal`.

Snakemake loads its logger plugin before it reads the Snakefile.  Were the plugin to import ``depthlab``, the package
of the installed checkout would be in ``sys.modules`` before the Snakefile puts its own ``workflow/`` on the path, and
a run of another checkout's Snakefile (an edited copy) would fingerprint the wrong code.  So the terminal imports
nothing of ``depthlab``, and this name is the same module object."""

import sys

from snakemake_logger_plugin_depthlab import terminal as _terminal

sys.modules[__name__] = _terminal
