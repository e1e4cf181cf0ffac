"""tcoll.torch.sync_batch_norm: SyncBatchNorm, batch normalization whose
batch statistics are those of every rank's batch together, as if one
process had normalized the concatenation of all of them.

In training, each forward makes one allgather of every rank's per-channel
element count, mean and sum of squared deviations (combined here in
float64, exact for uneven batches, and ranks with an empty batch), and
each backward one allreduce of the per-channel sums of the output gradient
and of its product with the normalized input, so the input gradient is the
one of the combined batch. The weight and bias gradients stay this rank's
own (DistributedOptimizer averages them), as in PyTorch's and Horovod's
SyncBatchNorm. Running statistics are updated from the combined batch
(the variance unbiased over all its elements). In eval mode with running
statistics tracked it is a plain batch norm on them and makes no
collective call (without them it normalizes with the combined batch's
statistics, like PyTorch's BatchNorm, collectively). Every rank must call
forward and backward the same number of times (the names come from
counters).
"""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from . import autograd as _ag
from . import handles as _h
from .basics import Sum, global_process_set

__all__ = ["SyncBatchNorm"]


def _channels_last(x):
    """x as (elements, channels): the channel dimension (1) moved last."""
    c = x.shape[1]
    return x.transpose(0, 1).reshape(c, -1).t()


def _per_channel(v, x):
    """v (channels,) shaped to broadcast against x."""
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


class _SyncBatchNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, process_set):
        flat = _channels_last(x.detach()).to(torch.float64)
        n = flat.shape[0]
        mean = (flat.mean(0) if n
                else torch.zeros(flat.shape[1], dtype=torch.float64, device=flat.device))
        m2 = ((flat - mean) ** 2).sum(0) if n else torch.zeros_like(mean)
        mine = torch.cat([torch.tensor([float(n)], dtype=torch.float64, device=flat.device),
                          mean, m2])
        rows = _ag.allgather(mine.unsqueeze(0), process_set=process_set)
        counts, means, m2s = rows[:, :1], rows[:, 1:1 + mean.numel()], rows[:, 1 + mean.numel():]
        total = counts.sum()
        if total == 0:
            raise ValueError("SyncBatchNorm: every rank's batch is empty")
        g_mean = (counts * means).sum(0) / total
        g_m2 = (m2s + counts * (means - g_mean) ** 2).sum(0)
        g_var = g_m2 / total
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(g_mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = g_m2 / (total - 1) if total > 1 else g_var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        invstd = torch.rsqrt(g_var + eps)
        xhat = (x.detach() - _per_channel(g_mean, x).to(x.dtype)) * \
            _per_channel(invstd, x).to(x.dtype)
        out = xhat
        if weight is not None:
            out = out * _per_channel(weight.detach(), x)
        if bias is not None:
            out = out + _per_channel(bias.detach(), x)
        ctx.save_for_backward(xhat, weight, invstd.to(x.dtype))
        ctx.total = total
        ctx.process_set = process_set
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        xhat, weight, invstd = ctx.saved_tensors
        dims = [d for d in range(grad.dim()) if d != 1]
        sum_dy = grad.sum(dims)
        sum_dy_xhat = (grad * xhat).sum(dims)
        both = _ag.allreduce(torch.cat([sum_dy, sum_dy_xhat]), op=Sum,
                             process_set=ctx.process_set)
        c = sum_dy.numel()
        g_dy, g_dy_xhat = both[:c] / ctx.total, both[c:] / ctx.total
        scale = invstd if weight is None else weight.detach() * invstd
        dx = _per_channel(scale, grad) * (grad - _per_channel(g_dy, grad)
                                          - xhat * _per_channel(g_dy_xhat, grad))
        dweight = sum_dy_xhat if weight is not None else None
        dbias = sum_dy if ctx.has_bias else None
        return dx, dweight, dbias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over every rank's batch together (see the module
    docstring); a drop-in for torch.nn.BatchNorm1d/2d/3d (input of 2 or
    more dimensions, channels in dimension 1). ``process_set`` limits the
    synchronization to a set of ranks (tcoll's addition)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        _h.check_tensor(input, "SyncBatchNorm")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or not self.track_running_stats
        if not use_batch:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, False, 0.0, self.eps)
        running = self.training and self.track_running_stats
        return _SyncBatchNormFn.apply(input, self.weight, self.bias,
                                      self.running_mean if running else None,
                                      self.running_var if running else None,
                                      self.eps, momentum, self.process_set)
