"""The torch language: every supported torch function, method and operator as a Symbol
printed ``ltorch.<name>``, composed of prims."""

from thunder.ops.ltorch.backward import *  # noqa: F401,F403,E402
from thunder.ops.ltorch.casts import *  # noqa: F401,F403,E402
from thunder.ops.ltorch.checks import *  # noqa: F401,F403
from thunder.ops.ltorch.conv import *  # noqa: F401,F403
from thunder.ops.ltorch.dropout import *  # noqa: F401,F403
from thunder.ops.ltorch.einsum import *  # noqa: F401,F403
from thunder.ops.ltorch.elementwise import *  # noqa: F401,F403
from thunder.ops.ltorch.factories import *  # noqa: F401,F403
from thunder.ops.ltorch.flash_attention import *  # noqa: F401,F403
from thunder.ops.ltorch.foreach import *  # noqa: F401,F403
from thunder.ops.ltorch.grouped import *  # noqa: F401,F403
from thunder.ops.ltorch.indexed import *  # noqa: F401,F403
from thunder.ops.ltorch.indexing import *  # noqa: F401,F403
from thunder.ops.ltorch.inplace import *  # noqa: F401,F403
from thunder.ops.ltorch.layers import *  # noqa: F401,F403
from thunder.ops.ltorch.linalg import *  # noqa: F401,F403
from thunder.ops.ltorch.losses import *  # noqa: F401,F403
from thunder.ops.ltorch.margins import *  # noqa: F401,F403
from thunder.ops.ltorch.matrix import *  # noqa: F401,F403
from thunder.ops.ltorch.nn import *  # noqa: F401,F403
from thunder.ops.ltorch.normalization import *  # noqa: F401,F403
from thunder.ops.ltorch.order import *  # noqa: F401,F403
from thunder.ops.ltorch.reductions import *  # noqa: F401,F403
from thunder.ops.ltorch.repetition import *  # noqa: F401,F403
from thunder.ops.ltorch.resample import *  # noqa: F401,F403
from thunder.ops.ltorch.rnn import *  # noqa: F401,F403
from thunder.ops.ltorch.scans import *  # noqa: F401,F403
from thunder.ops.ltorch.scatter import *  # noqa: F401,F403
from thunder.ops.ltorch.shape import *  # noqa: F401,F403
from thunder.ops.ltorch.special import *  # noqa: F401,F403
from thunder.ops.ltorch.spellings import *  # noqa: F401,F403
from thunder.ops.ltorch.stacking import *  # noqa: F401,F403
from thunder.ops.ltorch.statistics import *  # noqa: F401,F403
from thunder.ops.ltorch.unpool import *  # noqa: F401,F403
