"""Snakemake logger plugin ``depthlab`` (``--logger depthlab``, set in workflow/profiles/default): a quiet terminal
with one line per finished job and an ETA, Snakemake's full output in ``<results>/logs/snakemake/``.  The logic is
:mod:`.terminal` (also ``depthlab.progress``); this module is only the plugin interface Snakemake discovers by its
name.  Neither imports ``depthlab``: the plugin is loaded before the Snakefile chooses which checkout's package runs."""

from __future__ import annotations

import logging
import sys

from snakemake_interface_logger_plugins.base import LogHandlerBase

from . import terminal as progress


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        from snakemake.logging import ColorizingTextHandler, DefaultFilter, DefaultFormatter

        s = self.common_settings
        quiet = getattr(s, "quiet", None) or set()
        stream = sys.stdout if getattr(s, "stdout", False) else sys.stderr
        loud = (
            bool(s.verbose or s.dryrun or s.printshellcmds or getattr(s, "debug_dag", False))
            or progress.verbose_requested()
        )
        passthrough = None
        if loud:  # Snakemake's own terminal output, as without the plugin
            passthrough = ColorizingTextHandler(nocolor=s.nocolor, stream=stream)
            passthrough.addFilter(DefaultFilter(quiet, s.debug_dag, s.verbose, s.dryrun, s.printshellcmds))
            passthrough.setFormatter(DefaultFormatter(quiet, s.show_failed_logs))
        self.terminal = progress.Terminal(
            stream,
            passthrough,
            DefaultFormatter(set(), s.show_failed_logs),
            DefaultFilter(set(), s.debug_dag, s.verbose, s.dryrun, s.printshellcmds),
        )
        progress.register(self.terminal)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.terminal.emit(record)
        except Exception:  # the terminal must never stop the run
            self.handleError(record)

    def close(self) -> None:
        self.terminal.close()
        super().close()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False
