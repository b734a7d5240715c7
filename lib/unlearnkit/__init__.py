"""unlearnkit: the library behind the unlearning workbook.

One module per station of the pipeline
data -> models -> training / unlearning -> generation -> metrics -> bounds -> plots.

Importing it pins the instruction set its libraries compute with (:mod:`unlearnkit.machine`), for this process and
every process it starts, unless the user set those variables or ``UNLEARNKIT_NATIVE_ISA=1``.
"""

from . import machine as _machine

_machine.pin()

__version__ = "0.1.0"
