"""unlearnkit: the library behind the unlearning workbook.

One module per station of the pipeline
data -> models -> training / unlearning -> generation -> metrics -> bounds -> plots.

Importing it pins the instruction set its libraries compute with (:mod:`unlearnkit.machine`), for this process and
every process it starts, unless the user set those variables or ``UNLEARNKIT_NATIVE_ISA=1``; and, in a process a
runner started, ends that process when the runner ends, and in a notebook's kernel drops asyncio's note of the
control task ipykernel leaves pending at exit (:mod:`unlearnkit.lifetime`).
"""

from . import lifetime as _lifetime
from . import machine as _machine

_machine.pin()
_lifetime.die_with_runner()  # a kernel or worker of a runner ends when the runner does (unlearnkit.lifetime)
_lifetime.quiet_kernel_exit()  # and a kernel, the runner's or papermill's, ends without a "Logging error"

__version__ = "0.1.0"
