"""fa3's float64 expectation: O and L of float64 attention of the bf16 inputs the kernel reads. The kernel's own
rounding is fa2-triton's (P to bf16 before P·V, O to bf16 when stored; fp32 for everything else), so are its bounds.
"""

from __future__ import annotations

from ..fa2_triton.expect import ENGINE_TOLERANCE, LOG_DOMAIN, TOLERANCE, expected

__all__ = ["ENGINE_TOLERANCE", "LOG_DOMAIN", "TOLERANCE", "expected"]
