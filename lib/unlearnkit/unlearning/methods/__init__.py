"""One module per unlearning method, each registering its :class:`~unlearnkit.unlearning.registry.Method` on import
(the order here is the order of :data:`unlearnkit.unlearning.METHODS`): the workbook's first seven (GA, GD, KL, IDK,
DPO, NPO, RMU), then open-unlearning's SimNPO, WGA, SatImp, CE-U, UNDIAL and AltPO. A new method is a new module
here, imported below."""

from . import ga, gd, kl, idk, dpo, npo, rmu  # noqa: I001  (registration order)
from . import simnpo, wga, satimp, ceu, undial, altpo  # noqa: I001

__all__ = ["ga", "gd", "kl", "idk", "dpo", "npo", "rmu", "simnpo", "wga", "satimp", "ceu", "undial", "altpo"]
