"""An IPython extension the runner loads into every kernel it starts (``--IPKernelApp.extensions``): at the kernel's
exit asyncio destroys its still-pending control task and logs "Task was destroyed but it is pending!" to a stderr
ipykernel has already closed, which printed "--- Logging error ---" and a traceback into the runner's output after a
clean run. That one record is dropped; every other record of asyncio, and every warning, still shows. The library
drops it on import too (:func:`unlearnkit.lifetime.quiet_kernel_exit`), for kernels papermill starts without the
runner; the extension covers a kernel from its start, before a notebook imports the library."""

from __future__ import annotations

from ..lifetime import DropShutdownTask as _DropShutdownTask
from ..lifetime import quiet_kernel_exit

__all__ = ["_DropShutdownTask", "load_ipython_extension", "quiet_kernel_exit"]


def load_ipython_extension(ipython) -> None:  # noqa: ARG001 - IPython's hook
    quiet_kernel_exit()
