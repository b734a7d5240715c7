"""An IPython extension the runner loads into every kernel it starts (``--IPKernelApp.extensions``): at the kernel's
exit asyncio destroys its still-pending control task and logs "Task was destroyed but it is pending!" to a stderr
ipykernel has already closed, which printed "--- Logging error ---" and a traceback into the runner's output after a
clean run. That one record is dropped; every other record of asyncio, and every warning, still shows."""

from __future__ import annotations

import logging


class _DropShutdownTask(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not (text.startswith("Task was destroyed but it is pending") and "Kernel.dispatch_" in text)


def load_ipython_extension(ipython) -> None:  # noqa: ARG001 - IPython's hook
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _DropShutdownTask) for f in logger.filters):
        logger.addFilter(_DropShutdownTask())
