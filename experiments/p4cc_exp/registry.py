"""Every reproducible experiment, by id."""
from __future__ import annotations

from .defs.bbr_cubic import BbrCubic
from .defs.bbr_kernel import BbrKernel
from .defs.bbr_rtt import BbrRtt
from .defs.bbr_shallow import BbrShallow
from .defs.dc_fct import DcFct
from .defs.dctcp_convergence import DctcpConvergence
from .defs.dctcp_queue import DctcpQueue
from .defs.dctcp_theory import DctcpTheory
from .defs.fct import Fct
from .defs.int_fairness import IntFairness
from .defs.int_incast import IntIncast
from .defs.oracle_signal import OracleSignal
from .defs.pcc_convergence import PccConvergence
from .defs.pcc_fct import PccFct
from .defs.pcc_friendliness import PccFriendliness
from .defs.pcc_lossy import PccLossy
from .defs.pcc_rtt_fairness import PccRttFairness
from .defs.pcc_satellite import PccSatellite
from .defs.pcc_shallow import PccShallow
from .defs.timely_incast import TimelyIncast

EXPERIMENTS = {e.id: e for e in (DctcpQueue(), DctcpTheory(), DctcpConvergence(), TimelyIncast(), OracleSignal(), PccLossy(), PccShallow(), PccSatellite(), PccConvergence(), PccFriendliness(), PccRttFairness(), PccFct(), Fct(), IntIncast(), IntFairness(), BbrKernel(), BbrCubic(), BbrRtt(), BbrShallow(), DcFct())}


def get(name: str):
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"unknown experiment '{name}' (p4cc list shows them: "
                       f"{', '.join(EXPERIMENTS)})") from None
