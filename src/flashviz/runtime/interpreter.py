"""Triton's interpreter (TRITON_INTERPRET=1: kernels run on the CPU, in NumPy), as flashviz.attention's kernels and
a user's kernel under `flashviz trace --kernel` need it: `fix_interpreter` fills the gaps of Triton 3.6's
interpreter that these kernels step on, once per process."""

from __future__ import annotations


def fix_interpreter() -> None:
    """Gaps of Triton 3.6's interpreter that these kernels step on, filled the way upstream fills them:
    - a loop bound computed at run time becomes a Python int by int() of a one-element array, which NumPy 2.4
      refuses ("only 0-dimensional arrays can be converted"; triton-lang/triton#9171): take the element;
    - tl.dot multiplies bfloat16 operands as their raw 16-bit patterns (it widens only 8-bit floats): widen
      bfloat16 to float32 first, which is exact, as the tensor cores' products are;
    - float32 -> bfloat16 casts truncate, where the GPU (cvt.rn) and torch round to nearest even, which doubles
      the rounding error of P and of every output: round to nearest even;
    - tl.dot ignores input_precision: float32 operands of a "tf32" dot (the ladder's fp32 runs) keep all 23
      mantissa bits, where the tensor cores take tf32's 10: cut the 13 low bits of each operand (a model of
      the tensor cores' tf32 mode, not a bit-exact copy of it; "ieee" dots stay exact float32)."""
    import numpy as np
    from triton.runtime import interpreter

    if getattr(interpreter, "flashviz_fixes", False):
        return
    interpreter.flashviz_fixes = True
    patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
    if patch_tensor is not None:

        def patched_tensor(tensor, scope):
            patch_tensor(tensor, scope)
            scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

        interpreter._patch_lang_tensor = patched_tensor

    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None:  # nothing below to patch
        return
    create_dot = getattr(builder, "create_dot", None)
    if create_dot is not None:
        import triton.language as tl

        def widen(x):
            if x.dtype.scalar != tl.bfloat16:
                return x
            wide = interpreter._convert_float(x.data, tl.bfloat16, tl.float32, None).view(np.float32)
            return interpreter.TensorHandle(wide, tl.float32)

        from triton._C.libtriton import ir

        def tf32(x):
            if x.dtype.scalar != tl.float32:
                return x
            bits = np.ascontiguousarray(x.data, dtype=np.float32).view(np.uint32)
            return interpreter.TensorHandle((bits & np.uint32(0xFFFFE000)).view(np.float32), tl.float32)

        def patched_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            if input_precision == ir.INPUT_PRECISION.TF32:
                a, b = tf32(a), tf32(b)
            return create_dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

        builder.create_dot = patched_dot

    cast_impl = getattr(builder, "cast_impl", None)
    if cast_impl is not None:
        import triton.language as tl

        def patched_cast(self, src, dst_type):
            if not (src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16):
                return cast_impl(self, src, dst_type)
            bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
            rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest, ties to even (no NaNs here)
            return interpreter.TensorHandle(rounded.astype(np.uint16), tl.bfloat16)

        builder.cast_impl = patched_cast
