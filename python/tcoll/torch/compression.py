"""tcoll.torch.compression: what a tensor becomes on the wire, Horovod's
``Compression.none`` and ``Compression.fp16``.

A compressor has ``compress(tensor) -> (wire_tensor, ctx)`` and
``decompress(wire_tensor, ctx) -> tensor``. ``fp16`` sends floating-point
tensors as float16 (halving the bytes moved; the reduction then runs in
float16's range and precision) and turns the result back into the
original dtype; other dtypes go unchanged. Both are differentiable, so
they can wrap the differentiable collectives. Subclass ``Compressor`` for
your own.
"""

import torch

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]


class Compressor:
    """Interface: compress a tensor for the wire and restore it after."""

    @staticmethod
    def compress(tensor):
        """Returns (the tensor to send, the context decompress needs)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        """Returns the tensor restored from its wire form."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """No compression: the tensor goes as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16 and come back in their own
    dtype; others are untouched."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    """The compressors by name: ``Compression.none``, ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
