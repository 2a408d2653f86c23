"""nvFuser: translating prims into nvFuser FusionDefinitions, and printing them as repros.

nvFuser is optional and imported only when a fusion is defined (``loader.py``);
``translate.py`` holds the table prim Symbol -> translation, with the reason when nvFuser
cannot take a BoundSymbol; ``define.py`` builds a FusionDefinition from a region of prims,
or the standalone Python script of the same definition.
"""

from thunder.executors.nvfuser.define import (
    TensorDescriptor,
    TranslationError,
    check_region,
    contiguous_descriptor,
    define_fusion,
    fusion_definition_source,
    fusion_repro,
)
from thunder.executors.nvfuser.loader import (
    NvFuserUnavailable,
    definition_unavailable_reason,
    load,
    unavailable_reason,
)
from thunder.executors.nvfuser.translate import TRANSLATIONS, UNSUPPORTED, unsupported_reason

__all__ = [
    "TRANSLATIONS",
    "UNSUPPORTED",
    "NvFuserUnavailable",
    "TensorDescriptor",
    "TranslationError",
    "check_region",
    "contiguous_descriptor",
    "define_fusion",
    "definition_unavailable_reason",
    "fusion_definition_source",
    "fusion_repro",
    "load",
    "unavailable_reason",
    "unsupported_reason",
]
